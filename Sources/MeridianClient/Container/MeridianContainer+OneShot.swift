// MARK: - One-shot calls

public import MeridianCore

extension MeridianContainer {
    /// Fetches a request's rows once from the server (`Query`), consistent with one seq, without caching them.
    ///
    /// ```swift
    /// let (seq, rows) = try await container.query(FetchRequest(entity: "Point", where: "category == 2"))
    /// ```
    ///
    /// - Returns: The seq the result is consistent with, and the rows in the request's order.
    /// - Throws: ``ClientError``: the server's typed error (a bad predicate with its position), or `unavailable`.
    public func query(_ request: FetchRequest) async throws(ClientError) -> (seq: Int64, rows: [Row]) {
        try await self.withConnection { connection throws(ClientError) in try await connection.query(request) }
    }

    /// Fetches the served schema (`GetSchema`).
    ///
    /// - Throws: ``ClientError`` with code `unavailable` when the server cannot be reached.
    public func fetchSchema() async throws(ClientError) -> Schema {
        try await self.withConnection { connection throws(ClientError) in try await connection.schema().schema }
    }

    /// Applies one transaction on the server now (`Apply`), outside the cache's write queue: nothing is shown
    /// optimistically, and nothing is retried. The cache sees the commit like anyone else's, through its
    /// subscriptions. Use ``CacheContext/save(policy:)`` for writes an app shows at once and keeps through
    /// reconnections.
    ///
    /// - Returns: The commit's seq and the written rows (with generated ids), in operation order.
    /// - Throws: ``ClientError``: the server's typed rejection (``ClientError/operationIndex`` names the operation at
    ///   fault), or `unavailable`.
    public func apply(
        _ operations: [WriteOperation], policy: ConflictPolicy = .storeWins, idempotencyKey: String? = nil
    ) async throws(ClientError) -> CommitResult {
        try await self.withConnection { connection throws(ClientError) in
            try await connection.apply(operations, policy: policy, idempotencyKey: idempotencyKey)
        }
    }

    /// Runs `body` with a short-lived connection to the container's server.
    private func withConnection<Result: Sendable>(
        _ body: (MeridianConnection) async throws(ClientError) -> Result
    ) async throws(ClientError) -> Result {
        do {
            return try await MeridianConnection.with(
                self.configuration.address, credentials: self.configuration.credentials
            ) { connection in
                try await body(connection)
            }
        } catch {
            throw ClientError(calling: error)
        }
    }
}
