// MARK: - ServerConnection

internal import GRPCCore
internal import GRPCNIOTransportHTTP2Posix
internal import MeridianClient
internal import MeridianCore
internal import MeridianProto

/// The generated stub over the plaintext HTTP/2 transport that every one-shot command uses.
typealias MeridianStub = Meridian_V1_Meridian.Client<HTTP2ClientTransport.Posix>

/// One connection to a server for the length of a command: the gRPC client, the stub, and the translation of
/// transport and status errors into ``CLIError``s with the contract's exit statuses.
struct ServerConnection: Sendable {
    /// The address connected to.
    let address: ServerAddress
    /// The generated client.
    let stub: MeridianStub

    /// Call options for unary calls: fail fast when the server cannot be reached, and give up after `timeout`.
    static func unaryOptions(timeout: Duration = .seconds(30)) -> CallOptions {
        var options = CallOptions.defaults
        options.waitForReady = false
        options.timeout = timeout
        return options
    }

    /// Runs `body` with a connection to `address`, then closes it.
    ///
    /// - Throws: ``CLIError``: what `body` throws, and transport failures mapped by ``map(_:address:)``.
    static func with<Result: Sendable>(
        _ address: ServerAddress,
        _ body: (ServerConnection) async throws -> Result
    ) async throws(CLIError) -> Result {
        do {
            let transport = try address.transport()
            return try await withGRPCClient(transport: transport) { client in
                try await body(ServerConnection(address: address, stub: MeridianStub(wrapping: client)))
            }
        } catch {
            throw Self.map(error, address: address)
        }
    }

    /// The CLI error for any error a call threw.
    static func map(_ error: any Error, address: ServerAddress) -> CLIError {
        if let error = error as? CLIError { return error }
        if let error = error as? RPCError { return Self.map(error, address: address) }
        if let error = error as? RuntimeError {
            return CLIError(.unreachable, "cannot reach the server at \(address): \(error.message)", cause: error)
        }
        return CLIError(.failure, "\(error)", cause: error)
    }

    /// The CLI error for a call that ended with a non-OK status.
    static func map(_ error: RPCError, address: ServerAddress) -> CLIError {
        if let detail = error.errorDetail {
            return Self.map(detail, cause: error)
        }
        switch error.code {
        case .unavailable:
            return CLIError(.unreachable, "cannot reach the server at \(address): \(error.message)", cause: error)
        case .deadlineExceeded:
            return CLIError(.unreachable, "the server at \(address) did not answer in time", cause: error)
        case .invalidArgument, .outOfRange:
            return CLIError(.badInput, error.message, cause: error)
        case .aborted, .alreadyExists, .notFound, .failedPrecondition:
            return CLIError(.rejected, error.message, cause: error)
        default:
            return CLIError(.failure, "the server answered \(error.code): \(error.message)", cause: error)
        }
    }

    /// The CLI error for a Meridian error detail (a rejected transaction, a failed query).
    ///
    /// Rejections of a write (validation, conflict, not found, already exists, schema mismatch) exit 4; requests
    /// the server could not understand (bad predicate, unknown entity or attribute, malformed) exit 2; a server
    /// shutting down exits 3.
    static func map(_ detail: Meridian_V1_ErrorDetail, cause: (any Error)? = nil) -> CLIError {
        let status: CLIError.Status =
            switch detail.code {
            case .validation, .conflict, .notFound, .alreadyExists, .schemaMismatch: .rejected
            case .badPredicate, .unknownEntity, .unknownAttribute, .malformedRequest, .messageTooLarge: .badInput
            case .shuttingDown, .unavailable: .unreachable
            default: .failure
            }
        var message = detail.message
        if detail.code == .conflict, detail.hasCurrentVersion {
            message += " (the row is now at version \(detail.currentVersion))"
        }
        return CLIError(status, message, cause: cause)
    }
}

// MARK: - Calls

extension ServerConnection {
    /// The served schema.
    func schema() async throws -> (schema: Schema, fingerprint: String) {
        let response = try await self.stub.getSchema(Meridian_V1_GetSchemaRequest(), options: Self.unaryOptions())
        do {
            return (try Schema(response.schema), response.fingerprint)
        } catch {
            throw CLIError(.failure, "the server sent a schema this client cannot read: \(error.message)", cause: error)
        }
    }

    /// Applies one transaction.
    ///
    /// - Returns: The commit's seq and the written rows.
    /// - Throws: ``CLIError`` (status `rejected` for a rejected transaction), with ``ApplyRejection`` as its cause.
    func apply(_ operations: [WriteOperation]) async throws -> Meridian_V1_ApplyResult {
        let response = try await self.stub.apply(Meridian_V1_ApplyRequest(operations), options: Self.unaryOptions())
        switch response.outcome {
        case .result(let result)?:
            return result
        case .error(let detail)?:
            throw Self.map(detail, cause: ApplyRejection(detail: detail))
        case nil:
            throw CLIError(.failure, "the server answered Apply with neither a result nor an error")
        }
    }

    /// Runs a query, handing each chunk's rows to `body` as it arrives.
    ///
    /// - Returns: The seq the result is consistent with.
    func query(
        _ request: Meridian_V1_FetchRequest,
        _ body: @escaping @Sendable ([Row]) async throws -> Void
    ) async throws -> Int64 {
        try await self.stub.query(Self.queryRequest(request), options: Self.streamOptions()) { response in
            var seq: Int64 = 0
            for try await chunk in response.messages {
                seq = chunk.seq
                try await body(try Self.rows(chunk))
                if chunk.last { break }
            }
            return seq
        }
    }

    /// Runs a query and returns the whole result.
    func queryAll(_ request: Meridian_V1_FetchRequest) async throws -> (seq: Int64, rows: [Row]) {
        try await self.stub.query(Self.queryRequest(request), options: Self.streamOptions()) { response in
            var seq: Int64 = 0
            var rows: [Row] = []
            for try await chunk in response.messages {
                seq = chunk.seq
                rows += try Self.rows(chunk)
                if chunk.last { break }
            }
            return (seq, rows)
        }
    }

    private static func queryRequest(_ fetch: Meridian_V1_FetchRequest) -> Meridian_V1_QueryRequest {
        var message = Meridian_V1_QueryRequest()
        message.fetch = fetch
        message.maxChunkBytes = 1 << 20
        return message
    }

    private static func streamOptions() -> CallOptions {
        var options = CallOptions.defaults
        options.waitForReady = false
        return options
    }

    private static func rows(_ chunk: Meridian_V1_QueryResponse) throws(CLIError) -> [Row] {
        var rows: [Row] = []
        rows.reserveCapacity(chunk.rows.count)
        for row in chunk.rows {
            do {
                rows.append(try Row(row))
            } catch {
                throw CLIError(.failure, "the server sent an invalid row: \(error.message)", cause: error)
            }
        }
        return rows
    }
}

/// The cause of a ``CLIError`` for a rejected transaction: the server's error detail, for callers that want the
/// operation index (to name the input line at fault).
struct ApplyRejection: Error, Sendable {
    let detail: Meridian_V1_ErrorDetail
}
