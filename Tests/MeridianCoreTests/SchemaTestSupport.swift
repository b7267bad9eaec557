import Foundation
import MeridianCore

/// Paths and expected values shared by the schema tests.
enum SchemaFixtures {
    /// The path of a file in `Fixtures/schemas/`, copied into the test bundle.
    static func path(_ name: String) -> String {
        let resources = Bundle.module.resourcePath ?? ""
        return resources + "/Fixtures/schemas/" + name
    }

    /// The repository's `Schemas/demo.yaml`, found from this source file's path.
    static func demoPath(filePath: String = #filePath) -> String {
        var components = filePath.split(separator: "/", omittingEmptySubsequences: false)
        components.removeLast(3)  // SchemaTestSupport.swift, MeridianCoreTests, Tests
        return components.joined(separator: "/") + "/Schemas/demo.yaml"
    }

    /// What `Schemas/demo.yaml` must parse to.
    static func expectedDemo() throws -> Schema {
        try Schema(
            version: 1,
            entities: [
                EntitySchema(
                    name: "Point",
                    attributes: [
                        Attribute(name: "title", type: .string),
                        Attribute(name: "category", type: .int, defaultValue: .int(0)),
                        Attribute(name: "latitude", type: .double, isOptional: true),
                        Attribute(name: "longitude", type: .double, isOptional: true),
                        Attribute(name: "updatedAt", type: .timestamp, isOptional: true),
                    ],
                    indexes: [
                        Index(attributes: ["category", "title"]),
                        Index(name: "by_updated", attributes: ["updatedAt"]),
                    ],
                    derived: [
                        DerivedAttribute(
                            name: "coordinate",
                            kind: .coordinate(latitude: "latitude", longitude: "longitude")
                        )
                    ],
                    idPolicy: .auto
                ),
                EntitySchema(
                    name: "FamilyMember",
                    attributes: [
                        Attribute(name: "name", type: .string),
                        Attribute(name: "address", type: .string, defaultValue: .string("")),
                        Attribute(name: "latitude", type: .double, isOptional: true),
                        Attribute(name: "longitude", type: .double, isOptional: true),
                    ],
                    indexes: [Index(attributes: ["name"])],
                    derived: [
                        DerivedAttribute(
                            name: "coordinate",
                            kind: .coordinate(latitude: "latitude", longitude: "longitude")
                        )
                    ]
                ),
                EntitySchema(
                    name: "Author",
                    attributes: [
                        Attribute(name: "firstName", type: .string),
                        Attribute(name: "lastName", type: .string),
                    ],
                    indexes: [Index(attributes: ["lastName", "firstName"])],
                    idPolicy: .client
                ),
            ])
    }
}
