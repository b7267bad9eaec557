// MARK: - One-shot calls

internal import GRPCCore
internal import GRPCNIOTransportHTTP2
public import MeridianCore
internal import MeridianProto

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
        var wire = Meridian_V1_QueryRequest()
        wire.fetch = Meridian_V1_FetchRequest(request)
        do {
            return try await self.withClient { meridian in
                try await meridian.query(wire) { response in
                    var seq: Int64 = 0
                    var rows: [Row] = []
                    for try await chunk in response.messages {
                        seq = chunk.seq
                        for row in chunk.rows { rows.append(try Row(row)) }
                        if chunk.last { break }
                    }
                    return (seq, rows)
                }
            }
        } catch {
            throw ClientError(calling: error)
        }
    }

    /// Fetches the served schema (`GetSchema`).
    ///
    /// - Throws: ``ClientError`` with code `unavailable` when the server cannot be reached.
    public func fetchSchema() async throws(ClientError) -> Schema {
        do {
            return try await self.withClient { meridian in
                try Schema(try await meridian.getSchema(Meridian_V1_GetSchemaRequest()).schema)
            }
        } catch {
            throw ClientError(calling: error)
        }
    }

    /// Runs `body` with a short-lived client on its own connection.
    private func withClient<Result: Sendable>(
        _ body: (Meridian_V1_Meridian.Client<HTTP2ClientTransport.Posix>) async throws -> Result
    ) async throws -> Result {
        let transport = try self.configuration.address.transport()
        return try await withGRPCClient(transport: transport) { client in
            try await body(Meridian_V1_Meridian.Client(wrapping: client))
        }
    }
}
