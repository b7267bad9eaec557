import MeridianCore

/// The demo `Point` entity used by the parser, binder, sort and builder tests.
enum Fixtures {
    static let point = EntitySchema(
        name: "Point",
        attributes: [
            Attribute(name: "title", type: .string),
            Attribute(name: "category", type: .int),
            Attribute(name: "latitude", type: .double, isOptional: true),
            Attribute(name: "longitude", type: .double, isOptional: true),
            Attribute(name: "updatedAt", type: .timestamp),
            Attribute(name: "visible", type: .bool, isOptional: true),
            Attribute(name: "note", type: .string, isOptional: true),
        ]
    )
}

/// The model type the typed builder names attributes through.
struct Point {}

extension Point {
    enum Attr {
        static let title = AttributeRef<Point, String>("title")
        static let category = AttributeRef<Point, Int>("category")
        static let latitude = AttributeRef<Point, Double?>("latitude")
        static let updatedAt = AttributeRef<Point, Timestamp>("updatedAt")
        static let visible = AttributeRef<Point, Bool?>("visible")
        static let note = AttributeRef<Point, String?>("note")
        static let id = AttributeRef<Point, String>("id")
    }
}
