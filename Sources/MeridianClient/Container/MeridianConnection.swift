// MARK: - MeridianConnection: one-shot calls

internal import GRPCCore
internal import GRPCNIOTransportHTTP2
internal import GRPCProtobuf
public import MeridianCore
internal import MeridianProto
internal import Synchronization

/// One connection to a server for one-shot calls — the served schema, a transaction, a query — with no cache and no
/// subscriptions. For tools and scripts that write or read once; an app that shows live results uses
/// ``MeridianContainer``.
///
/// ```swift
/// try await MeridianConnection.with(ServerAddress(parsing: "127.0.0.1:7400")) { connection in
///     let result = try await connection.apply([.insert("Point", values: ["title": "Café Aurora"])])
///     let (seq, rows) = try await connection.query(FetchRequest(entity: "Point", where: "category == 2"))
/// }
/// ```
///
/// Calls fail fast when the server cannot be reached (they do not wait for it to come up); unary calls give up after
/// ``callTimeout``, and a query when the server sends no part of its answer for that long.
public struct MeridianConnection: Sendable {
    /// The server connected to.
    public let address: ServerAddress
    /// How long a unary call (`GetSchema`, `Apply`) may take before it fails with `unavailable`, and how long a query
    /// waits for each part of its answer (the time its caller takes with a part is not counted).
    public let callTimeout: Duration
    let stub: Meridian_V1_Meridian.Client<HTTP2ClientTransport.Posix>
    /// The client under the stubs, for calls whose requests are written straight from Core operations.
    let client: GRPCClient<HTTP2ClientTransport.Posix>
    let healthStub: Grpc_Health_V1_Health.Client<HTTP2ClientTransport.Posix>

    /// Runs `body` with a connection to `address`, then closes it.
    ///
    /// - Parameters:
    ///   - address: The server.
    ///   - callTimeout: How long each unary call may take, and a query may wait for each part of its answer.
    ///   - credentials: The identity sent with every call; `nil` for a server without authentication.
    ///   - body: The calls to make; what it throws is rethrown as it is.
    /// - Throws: What `body` throws, as it is; ``ClientError`` with code `unavailable` when the connection fails
    ///   outside a call (for example, a host name that does not resolve).
    public static func with<Result: Sendable>(
        _ address: ServerAddress,
        callTimeout: Duration = .seconds(30),
        credentials: Credentials? = nil,
        _ body: (MeridianConnection) async throws -> Result
    ) async throws -> Result {
        let transport: HTTP2ClientTransport.Posix
        do {
            transport = try address.transport()
        } catch {
            throw ClientError(calling: error)
        }
        do {
            return try await withGRPCClient(transport: transport, interceptors: credentials.interceptors) { client in
                let connection = MeridianConnection(
                    address: address, callTimeout: callTimeout, stub: Meridian_V1_Meridian.Client(wrapping: client),
                    client: client, healthStub: Grpc_Health_V1_Health.Client(wrapping: client))
                do {
                    return try await body(connection)
                } catch {
                    throw BodyError(error: error)
                }
            }
        } catch let error as BodyError {
            throw error.error
        } catch {
            throw ClientError(calling: error)
        }
    }

    /// The served schema and its fingerprint (`GetSchema`).
    ///
    /// - Throws: ``ClientError``: `unavailable` when the server cannot be reached, `internal` when its schema cannot
    ///   be read by this library.
    public func schema() async throws(ClientError) -> (schema: Schema, fingerprint: String) {
        let response: Meridian_V1_GetSchemaResponse
        do {
            response = try await self.stub.getSchema(Meridian_V1_GetSchemaRequest(), options: self.unaryOptions)
        } catch {
            throw ClientError(calling: error)
        }
        do {
            return (try Schema(response.schema), response.fingerprint)
        } catch {
            throw ClientError(
                .internal, "the server sent a schema this client cannot read: \(error.message)", cause: error)
        }
    }

    /// Whether the server serves (gRPC's standard health service, `grpc.health.v1.Health/Check`, for the whole
    /// server): it does while its store takes writes, its fan-out runs and it is not shutting down.
    ///
    /// - Returns: `true` for `SERVING`, `false` for `NOT_SERVING` (or any other status).
    /// - Throws: ``ClientError`` `unavailable` when the server cannot be reached or does not answer in time.
    public func isServing() async throws(ClientError) -> Bool {
        let response: Grpc_Health_V1_HealthCheckResponse
        do {
            response = try await self.healthStub.check(Grpc_Health_V1_HealthCheckRequest(), options: self.unaryOptions)
        } catch {
            throw ClientError(calling: error)
        }
        return response.status == .serving
    }

    /// Applies one transaction (`Apply`): every operation commits, or none does.
    ///
    /// - Parameters:
    ///   - operations: The operations.
    ///   - policy: How conflicts with concurrent changes are settled.
    ///   - idempotencyKey: A key that makes a retry of the same transaction (after a lost answer) answer the first
    ///     commit instead of applying again; `nil` for none.
    ///   - seqOnly: Whether the answer is the commit's seq alone (`ApplyRequest.seq_only`): the result's `rows` is
    ///     then empty, and the server writes no row per operation into the answer (for a caller that needs neither
    ///     generated ids nor versions: a bulk write).
    /// - Returns: The commit's seq and the written rows (with generated ids), in operation order.
    /// - Throws: ``ClientError``: the server's typed rejection (``ClientError/operationIndex`` names the operation at
    ///   fault), or `unavailable`.
    public func apply(
        _ operations: [WriteOperation], policy: ConflictPolicy = .storeWins, idempotencyKey: String? = nil,
        seqOnly: Bool = false
    ) async throws(ClientError) -> CommitResult {
        // Written straight from the operations (no generated message in between: 14% of `meridian apply`'s CPU for
        // 20,000 rows went to building and encoding it), byte for byte that message's encoding.
        let request = ApplyRequestWireEncoding.encode(
            operations, policy: policy, idempotencyKey: idempotencyKey ?? "", seqOnly: seqOnly)
        let response: Meridian_V1_ApplyResponse
        do {
            response = try await self.client.unary(
                request: ClientRequest(message: request), descriptor: Meridian_V1_Meridian.Method.Apply.descriptor,
                serializer: EncodedMessageSerializer(), deserializer: ApplyResponseDeserializer(),
                options: self.unaryOptions
            ) { response in try response.message }
        } catch {
            throw ClientError(calling: error)
        }
        return try Self.answer(response).get()
    }

    /// Runs a query (`Query`), handing each chunk's rows to `body` as it arrives, in the request's order.
    ///
    /// - Parameters:
    ///   - request: What to fetch.
    ///   - body: Called with each chunk's rows; what it throws ends the call and is rethrown.
    /// - Returns: The seq the whole result is consistent with.
    /// - Throws: What `body` throws; ``ClientError``: the server's typed error (a bad predicate with its position),
    ///   or `unavailable` (also when the server sends no part of the answer for ``callTimeout``).
    public func query(
        _ request: FetchRequest,
        _ body: @escaping @Sendable ([Row]) async throws -> Void
    ) async throws -> Int64 {
        do {
            return try await self.fold(request, into: ()) { _, rows in
                do {
                    try await body(rows)
                } catch {
                    throw BodyError(error: error)
                }
            }.seq
        } catch let error as BodyError {
            throw error.error
        } catch {
            throw ClientError(calling: error)
        }
    }

    /// Runs a query (`Query`) and returns its whole result.
    ///
    /// - Returns: The seq the result is consistent with, and the rows in the request's order.
    /// - Throws: ``ClientError``: the server's typed error (a bad predicate with its position), or `unavailable` (also
    ///   when the server sends no part of the answer for ``callTimeout``).
    public func query(_ request: FetchRequest) async throws(ClientError) -> (seq: Int64, rows: [Row]) {
        do {
            let (seq, rows) = try await self.fold(request, into: [Row]()) { rows, chunk in rows += chunk }
            return (seq, rows)
        } catch {
            throw ClientError(calling: error)
        }
    }

    /// Runs a query, handing each chunk's rows to `add` as it arrives; returns the seq the result is consistent with
    /// and what `add` built.
    ///
    /// A `Query` has no deadline as a whole (a large answer takes as long as it takes), but the server must send each
    /// part of it within ``callTimeout`` of the call's start or of `add`'s return for the part before: a server that
    /// takes the call and then sends nothing fails it `unavailable` instead of keeping the caller waiting for ever.
    /// The time `add` takes is not counted.
    private func fold<Result: Sendable>(
        _ request: FetchRequest,
        into initial: Result,
        _ add: @escaping @Sendable (inout Result, [Row]) async throws -> Void
    ) async throws -> (seq: Int64, result: Result) {
        let patience = Patience(self.callTimeout)
        return try await withThrowingTaskGroup(of: (seq: Int64, result: Result)?.self) { group in
            defer { group.cancelAll() }
            group.addTask {
                try await patience.watch()
                return nil
            }
            group.addTask { try await self.call(request, into: initial, add, patience: patience) }
            // The watch only ever ends by throwing (which `next()` rethrows, cancelling the call), so the first
            // value is the call's.
            while let outcome = try await group.next() {
                if let outcome { return outcome }
            }
            throw ClientError(.internal, "the query ended without an answer")
        }
    }

    /// The `Query` call of ``fold(_:into:_:)``.
    private func call<Result: Sendable>(
        _ request: FetchRequest,
        into initial: Result,
        _ add: @escaping @Sendable (inout Result, [Row]) async throws -> Void,
        patience: Patience
    ) async throws -> (seq: Int64, result: Result) {
        // Rows read straight into Core rows where the bytes arrive (`QueryChunkDeserializer`); a chunk it does not
        // take comes as the generated message, converted here (which says what is wrong with it).
        try await self.client.serverStreaming(
            request: ClientRequest(message: Self.queryRequest(request)),
            descriptor: Meridian_V1_Meridian.Method.Query.descriptor,
            serializer: ProtobufSerializer<Meridian_V1_QueryRequest>(), deserializer: QueryChunkDeserializer(),
            options: self.streamOptions
        ) { response in
            var seq: Int64 = 0
            var result = initial
            for try await chunk in response.messages {
                patience.pause()
                let last: Bool
                switch chunk {
                case .rows(let chunkSeq, let rows, let isLast):
                    (seq, last) = (chunkSeq, isLast)
                    try await add(&result, rows)
                case .message(let message):
                    (seq, last) = (message.seq, message.last)
                    try await add(&result, try Self.rows(message))
                }
                if last { return (seq, result) }
                patience.resume()
            }
            // A stream that ends without its last part would leave the caller with part of the answer as if whole.
            throw ClientError(.internal, "the server ended the query's answer before its last part")
        }
    }

    /// How long a query waits for the server's next part: a deadline while it waits, none while the caller's
    /// closure runs.
    final class Patience: Sendable {
        private let timeout: Duration
        private let deadline: Mutex<ContinuousClock.Instant?>

        init(_ timeout: Duration) {
            self.timeout = timeout
            self.deadline = Mutex(.now + timeout)
        }

        /// The caller's closure runs: the wait is not counted.
        func pause() { self.deadline.withLock { $0 = nil } }

        /// Waiting for the server again, from now.
        func resume() { self.deadline.withLock { $0 = .now + self.timeout } }

        /// Returns only by throwing: `unavailable` once a wait outlasts the timeout, or `CancellationError`.
        func watch() async throws {
            while true {
                let deadline = self.deadline.withLock { $0 }
                let now = ContinuousClock.now
                if let deadline, now >= deadline {
                    throw ClientError(
                        .unavailable, "the server sent no part of the query's answer for \(self.timeout.spoken)")
                }
                try await Task.sleep(until: deadline ?? now + self.timeout, clock: .continuous)
            }
        }
    }

    /// What a caller's closure threw, told apart from the call's own errors.
    private struct BodyError: Error {
        let error: any Error
    }

    private static func queryRequest(_ request: FetchRequest) -> Meridian_V1_QueryRequest {
        var message = Meridian_V1_QueryRequest()
        message.fetch = Meridian_V1_FetchRequest(request)
        message.maxChunkBytes = 1 << 20
        return message
    }

    private var unaryOptions: CallOptions {
        var options = CallOptions.defaults
        options.waitForReady = false
        options.timeout = self.callTimeout
        return options
    }

    private var streamOptions: CallOptions {
        var options = CallOptions.defaults
        options.waitForReady = false
        return options
    }

    private static func rows(_ chunk: Meridian_V1_QueryResponse) throws(ClientError) -> [Row] {
        var rows: [Row] = []
        rows.reserveCapacity(chunk.rows.count)
        for row in chunk.rows {
            do {
                rows.append(try Row(row))
            } catch {
                throw ClientError(.internal, "the server sent an invalid row: \(error.message)", cause: error)
            }
        }
        return rows
    }
}
