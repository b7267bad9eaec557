// MARK: - Typed models

public import MeridianCore

/// A type that results controllers can hand out: built from a row, and turned back into one for writes.
///
/// `Row` itself conforms (the untyped controller); app types conform through ``MeridianModel``.
public protocol RowConvertible: Identifiable, Equatable, Sendable where ID == String {
    /// Creates the value from a row of its entity.
    ///
    /// - Throws: ``ClientError`` with code `modelMismatch` when the row does not fit the type.
    init(row: Row) throws(ClientError)

    /// The row this value stands for.
    ///
    /// - Throws: ``ClientError`` with code `modelMismatch` when a property cannot be represented.
    func row() throws(ClientError) -> Row

    /// Checks, before a controller hands out values of this type, that every row `entity` can hold decodes into
    /// it, so reading a controller never meets a row that does not fit.
    ///
    /// - Throws: ``ClientError`` with code `modelMismatch` naming the property that does not fit.
    static func checkFits(_ entity: EntitySchema) throws(ClientError)
}

extension RowConvertible {
    /// Any row fits (the untyped `Row`).
    public static func checkFits(_ entity: EntitySchema) throws(ClientError) {}
}

extension Row: RowConvertible {
    public init(row: Row) { self = row }
    public func row() -> Row { self }
}

/// An app's own `Codable` type for the rows of one entity, used end to end: controllers hand out values of it,
/// and the context writes them.
///
/// Each stored property is an attribute of the same name (`id` is the row's id); optionals are nullable
/// attributes. Supported property types: `String`, `Bool`, integers, `Double`, `Float`, `Timestamp`, `[UInt8]`
/// (bytes), and optionals of these. Declare ``AttributeRef``s once so predicates and sort keys never spell names:
///
/// ```swift
/// struct Point: MeridianModel {
///     static let entityName = "Point"
///     var id: String
///     var title: String
///     var category: Int
///     var latitude: Double?
///     var longitude: Double?
///
///     enum Attr {
///         static let title = AttributeRef<Point, String>("title")
///         static let category = AttributeRef<Point, Int>("category")
///     }
/// }
/// ```
public protocol MeridianModel: RowConvertible, Codable {
    /// The name of the entity whose rows this type represents.
    static var entityName: String { get }
}

extension MeridianModel {
    public init(row: Row) throws(ClientError) {
        do {
            self = try RowDecoder().decode(Self.self, from: row)
        } catch let error as ClientError {
            throw error
        } catch {
            throw ClientError(
                .modelMismatch, "\(Self.self) does not decode from \(row): \(error)", cause: error,
                entity: Self.entityName, id: row.id)
        }
    }

    /// Decodes two probe rows of `entity`: one with every optional attribute null, one with every attribute
    /// present at the edge of its type's range (the largest int, a fractional double). A property missing from the
    /// entity, non-optional for an optional attribute, or of a type that cannot hold every value of its attribute
    /// (`Int32` for a 64-bit `int`, `Int` for a `double`) fails here, once, instead of when a row arrives.
    public static func checkFits(_ entity: EntitySchema) throws(ClientError) {
        guard entity.name == Self.entityName else {
            throw ClientError(
                .modelMismatch, "\(Self.self) represents \(Self.entityName), not \(entity.name)", entity: entity.name)
        }
        func probe(nulls: Bool) -> Row {
            var values: [String: Value] = [:]
            for attribute in entity.attributes {
                if nulls && attribute.isOptional {
                    values[attribute.name] = .null
                    continue
                }
                values[attribute.name] =
                    switch attribute.type {
                    case .string: .string("")
                    case .int: .int(.max)
                    case .double: .double(0.5)
                    case .bool: .bool(true)
                    case .bytes: .bytes([])
                    case .timestamp: .timestamp(Timestamp(microseconds: 0))
                    }
            }
            return Row(id: "", values: values)
        }
        for nulls in [true, false] {
            do {
                _ = try RowDecoder().decode(Self.self, from: probe(nulls: nulls))
            } catch {
                throw ClientError(
                    .modelMismatch,
                    "\(Self.self) cannot hold every row of \(entity.name): \(describeMismatch(error, entity: entity))",
                    cause: error, entity: entity.name)
            }
        }
    }

    public func row() throws(ClientError) -> Row {
        do {
            return try RowEncoder().encode(self)
        } catch let error as ClientError {
            throw error
        } catch {
            throw ClientError(
                .modelMismatch, "\(Self.self) does not encode to a row: \(error)", cause: error,
                entity: Self.entityName, id: self.id)
        }
    }
}

// MARK: - Typed sort keys

/// A sort key over a model's attribute, so sort orders never spell attribute names either.
///
/// ```swift
/// let order: [TypedSortKey<Point>] = [.ascending(Point.Attr.category), .descending(Point.Attr.title)]
/// ```
public struct TypedSortKey<Model>: Sendable, Hashable {
    /// The untyped key.
    public let key: SortKey

    /// Ascending by `attribute` (nulls first).
    public static func ascending<T>(_ attribute: AttributeRef<Model, T>) -> TypedSortKey {
        TypedSortKey(key: SortKey(attribute.name, ascending: true))
    }

    /// Descending by `attribute` (nulls last).
    public static func descending<T>(_ attribute: AttributeRef<Model, T>) -> TypedSortKey {
        TypedSortKey(key: SortKey(attribute.name, ascending: false))
    }
}

extension FetchRequest {
    /// A request for a model type, entirely typed: predicate, sort keys and section key.
    ///
    /// ```swift
    /// let request = FetchRequest(
    ///     Point.self, where: Point.Attr.category < 3,
    ///     sortedBy: [.ascending(Point.Attr.category), .ascending(Point.Attr.title)],
    ///     sectionedBy: Point.Attr.category)
    /// ```
    ///
    /// - Parameters:
    ///   - model: The model type; its ``MeridianModel/entityName`` names the entity.
    ///   - predicate: The typed predicate; every row by default.
    ///   - sortKeys: The sort keys, most significant first (the id breaks ties).
    ///   - sectionKey: The attribute to section by; it must be the first sort key.
    ///   - limit: The most rows, or `nil`.
    public init<Model: MeridianModel, S>(
        _ model: Model.Type,
        where predicate: TypedPredicate<Model> = .all,
        sortedBy sortKeys: [TypedSortKey<Model>] = [],
        sectionedBy sectionKey: AttributeRef<Model, S>,
        limit: Int? = nil
    ) {
        self.init(
            entity: Model.entityName,
            where: predicate,
            order: RowOrder(sortKeys.map(\.key)),
            sectionKey: sectionKey.name,
            limit: limit
        )
    }

    /// A request for a model type without sections; see ``init(_:where:sortedBy:sectionedBy:limit:)``.
    public init<Model: MeridianModel>(
        _ model: Model.Type,
        where predicate: TypedPredicate<Model> = .all,
        sortedBy sortKeys: [TypedSortKey<Model>] = [],
        limit: Int? = nil
    ) {
        self.init(entity: Model.entityName, where: predicate, order: RowOrder(sortKeys.map(\.key)), limit: limit)
    }
}

/// One line naming the property a probe row failed on and what the entity says of it.
private func describeMismatch(_ error: any Error, entity: EntitySchema) -> String {
    let key: (any CodingKey)?
    let reason: String
    switch error {
    case DecodingError.keyNotFound(let missing, _):
        key = missing
        reason = "the entity has no such attribute"
    case DecodingError.valueNotFound(_, let context):
        key = context.codingPath.last
        reason =
            key.flatMap { entity.attribute(named: $0.stringValue) } == nil
            ? "the entity has no such attribute" : "the attribute is optional; make the property optional"
    case DecodingError.typeMismatch(let type, let context):
        key = context.codingPath.last
        reason = "\(type) cannot hold every value of the attribute"
    default:
        return "\(error)"
    }
    guard let name = key?.stringValue else { return reason }
    let declared = entity.attribute(named: name).map { " (\($0.type)\($0.isOptional ? "?" : ""))" } ?? ""
    return "property `\(name)`\(declared): \(reason)"
}
