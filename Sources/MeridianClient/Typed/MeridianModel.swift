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
