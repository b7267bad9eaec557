// MARK: - Reads by fetch request

public import MeridianCore

extension Store {
    /// The rows of a bound fetch request, in its order and within its limit, with the `seq` they are consistent with.
    ///
    /// The predicate and order are compiled to SQL with exactly the semantics of their in-memory evaluation, so
    /// `request.evaluate(allRows)` on the same data gives the same rows.
    ///
    /// - Throws: ``StoreError`` `schemaMismatch` when the request names an entity the store does not serve.
    public func snapshot(_ request: BoundFetchRequest) async throws -> Snapshot {
        try await self.snapshot(
            entity: request.entity.name,
            where: request.predicate,
            orderBy: request.order,
            limit: request.limit
        )
    }
}
