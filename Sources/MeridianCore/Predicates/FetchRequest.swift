// MARK: - FetchRequest

/// What a subscription, a query or a results controller asks for: an entity, a predicate, a sort order, an optional
/// section key and an optional limit.
///
/// A fetch request is unchecked until it is bound to a schema; binding parses nothing twice and reports every
/// problem with its position.
///
/// ```swift
/// let request = try FetchRequest(
///     entity: "Point",
///     where: "category == $c AND title BEGINSWITH[c] \"caf\"",
///     variables: ["c": 3],
///     sortedBy: "category,-updatedAt",
///     sectionKey: "category"
/// )
/// let bound = try request.bind(to: schema)
/// bound.predicate.evaluate(row)       // in memory
/// try await store.snapshot(bound)     // the same rows, read by the store
/// ```
public struct FetchRequest: Sendable, Hashable, CustomStringConvertible {
    /// The entity's name.
    public var entity: String
    /// The predicate, parsed; `TRUEPREDICATE` when every row matches.
    public var predicate: PredicateExpression
    /// Values for the predicate's `$name` variables.
    public var variables: [String: PredicateVariable]
    /// The sort keys; the id is always the final tie-break.
    public var order: RowOrder
    /// The attribute results are sectioned by; it must be the first sort key.
    public var sectionKey: String?
    /// The most rows the result holds, `nil` for no limit.
    public var limit: Int?

    /// Creates a request from parsed parts.
    public init(
        entity: String,
        predicate: PredicateExpression,
        variables: [String: PredicateVariable] = [:],
        order: RowOrder = .byID,
        sectionKey: String? = nil,
        limit: Int? = nil
    ) {
        self.entity = entity
        self.predicate = predicate
        self.variables = variables
        self.order = order
        self.sectionKey = sectionKey
        self.limit = limit
    }

    /// Creates a request from predicate text and sort-key text, as the CLI and the wire carry them.
    ///
    /// - Parameters:
    ///   - entity: The entity's name.
    ///   - predicateText: Predicate-language text; empty means every row.
    ///   - variables: Values for `$name` variables.
    ///   - sortKeys: A comma-separated list of attributes, `-name` for descending; empty means by id.
    ///   - sectionKey: The attribute to section by (must be the first sort key).
    ///   - limit: The most rows, or `nil`.
    /// - Throws: ``QueryError`` for malformed predicate or sort text, with its position.
    public init(
        entity: String,
        where predicateText: String = "",
        variables: [String: PredicateVariable] = [:],
        sortedBy sortKeys: String = "",
        sectionKey: String? = nil,
        limit: Int? = nil
    ) throws(QueryError) {
        let trimmed = predicateText.trimmingSpaces
        self.init(
            entity: entity,
            predicate: trimmed.isEmpty ? .constant(true, .none) : try PredicateExpression.parse(predicateText),
            variables: variables,
            order: try RowOrder(parsing: sortKeys),
            sectionKey: sectionKey,
            limit: limit
        )
    }

    /// Creates a request for a typed model from the typed predicate builder.
    public init<Model>(
        entity: String,
        where predicate: TypedPredicate<Model>,
        order: RowOrder = .byID,
        sectionKey: String? = nil,
        limit: Int? = nil
    ) {
        self.init(
            entity: entity,
            predicate: predicate.expression,
            order: order,
            sectionKey: sectionKey,
            limit: limit
        )
    }

    /// The predicate as predicate-language text (parses back to the same predicate).
    public var predicateText: String { self.predicate.description }

    public var description: String {
        var text = "\(self.entity) where \(self.predicateText) order by \(self.order)"
        if let sectionKey { text += " section by \(sectionKey)" }
        if let limit { text += " limit \(limit)" }
        return text
    }

    /// Checks the request against a schema and substitutes its variables.
    ///
    /// - Throws: ``SchemaError`` (`unknownEntity`) when the entity does not exist; ``QueryError`` for an unknown
    ///   attribute, a type mismatch, an unbound variable, a bad sort key or section key, or a negative limit.
    public func bind(to schema: Schema) throws -> BoundFetchRequest {
        let entity = try schema.requireEntity(self.entity)
        if let limit, limit < 0 {
            throw QueryError(.invalidValue, "the limit must be 0 or more, not \(limit)", position: 0)
        }
        return BoundFetchRequest(
            request: self,
            entity: entity,
            predicate: try self.predicate.bind(to: entity, variables: self.variables),
            order: try self.order.checked(against: entity, sectionKey: self.sectionKey)
        )
    }
}

// MARK: - BoundFetchRequest

/// A fetch request checked against its entity: ready to evaluate in memory and to compile to SQL, with identical
/// semantics.
///
/// Its parts live in one shared, immutable object: a server keeps several copies of each subscription's request
/// (the client's subscription, the request in force, the distinct subscription, a pending read) in tables whose
/// buckets are mostly empty, where the parts inline took 144 bytes a copy and a bucket; now 8.
public struct BoundFetchRequest: Sendable, Hashable {
    private final class Parts: Sendable {
        let request: FetchRequest
        let entity: EntitySchema
        let predicate: RowPredicate
        let order: RowOrder

        init(request: FetchRequest, entity: EntitySchema, predicate: RowPredicate, order: RowOrder) {
            self.request = request
            self.entity = entity
            self.predicate = predicate
            self.order = order
        }
    }

    private let parts: Parts

    init(request: FetchRequest, entity: EntitySchema, predicate: RowPredicate, order: RowOrder) {
        self.parts = Parts(request: request, entity: entity, predicate: predicate, order: order)
    }

    /// The request as given.
    public var request: FetchRequest { self.parts.request }
    /// The entity it reads.
    public var entity: EntitySchema { self.parts.entity }
    /// The checked predicate.
    public var predicate: RowPredicate { self.parts.predicate }
    /// The checked order (the id is the final tie-break).
    public var order: RowOrder { self.parts.order }

    public static func == (a: BoundFetchRequest, b: BoundFetchRequest) -> Bool {
        a.parts === b.parts
            || (a.request == b.request && a.entity == b.entity && a.predicate == b.predicate && a.order == b.order)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.request)
        hasher.combine(self.entity)
        hasher.combine(self.predicate)
        hasher.combine(self.order)
    }

    /// The section key, if any.
    public var sectionKey: String? { self.request.sectionKey }
    /// The limit, if any.
    public var limit: Int? { self.request.limit }

    /// Whether `row` belongs to the result, ignoring the limit.
    public func matches(_ row: Row) -> Bool {
        self.predicate.evaluate(row)
    }

    /// The rows that belong to the result, in order, with the limit applied: the in-memory equivalent of the store's
    /// read.
    public func evaluate<S: Sequence<Row>>(_ rows: S) -> [Row] {
        let order = self.order
        var result = rows.filter(self.predicate.evaluate).sorted { order.compare($0, $1) < 0 }
        if let limit, result.count > limit { result.removeLast(result.count - limit) }
        return result
    }
}

extension String {
    /// The string without leading and trailing spaces, tabs and newlines (no Foundation).
    var trimmingSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let start = self.firstIndex(where: { !isSpace($0) }) else { return "" }
        let end = self.lastIndex(where: { !isSpace($0) })!
        return self[start...end]
    }
}

extension BoundFetchRequest {
    /// The request restricted to the rows the caller may read: its predicate AND-ed with the entity's read rule on the
    /// checked tree. The one predicate drives the snapshot's SQL, the fan-out and resume; callers whose bound rules
    /// are equal get equal requests, which a server evaluates once.
    public func restricted(by access: BoundAccess) -> BoundFetchRequest {
        BoundFetchRequest(
            request: self.request, entity: self.entity, predicate: access.read(self.predicate, in: self.entity.name),
            order: self.order)
    }
}
