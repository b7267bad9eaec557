// MARK: - MeridianService: the gRPC service

internal import CoreMetrics
internal import GRPCCore
internal import GRPCProtobuf
internal import Logging
internal import MeridianAuth
internal import MeridianCore
internal import MeridianProto
internal import MeridianStore
internal import Synchronization

/// Implements every method of `meridian.v1.Meridian`.
///
/// Registered by hand rather than through the generated protocols so that `Sync` responses can be written as bytes
/// encoded once and shared between clients (``SyncOutbound``), and so that every request is size-checked.
///
/// A class, not a struct: every stream's session, its tasks' closures and their async frames hold the service, and a
/// reference is 8 bytes where the configuration, the schema and the rest copied by value took kilobytes per idle
/// stream (`meridian-bench server --case regions`).
final class MeridianService: RegistrableRPCService, Sendable {
    let store: Store
    let hub: Hub
    let configuration: ServerConfiguration
    let metrics: ServerMetrics
    let logger: Logger
    /// Who is calling: every call's credentials are checked before anything else is read of it.
    let accessControl: AccessControl
    /// Begun with the server's graceful shutdown: an `ApplyStream` then stops reading requests.
    let shutdown = ShutdownSignal()

    init(
        store: Store, hub: Hub, configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger,
        accessControl: AccessControl
    ) {
        self.store = store
        self.hub = hub
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        self.accessControl = accessControl
    }

    /// Runs one Sync stream, counted against its caller's quota of open streams while it lasts. Not inlined into
    /// the handler's closure, whose frame the stream's task keeps for as long as the stream lives (see
    /// `inChildTask`).
    @inline(never)
    private func sync(
        _ requests: RPCAsyncSequence<SyncInbound, any Error>, writer: RPCWriter<SyncOutbound>,
        caller: Caller?, peer: String
    ) async throws {
        let subject = caller?.identity.principal.subject
        if let subject {
            do throws(DetailError) {
                try self.accessControl.quotas.openStream(subject)
            } catch {
                throw RPCError(error.detail)
            }
        }
        defer {
            if let subject { self.accessControl.quotas.closeStream(subject) }
        }
        let session = SyncSession(service: self, caller: caller, peer: peer)
        try await session.run(requests: requests, writer: writer)
    }

    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        let limit = self.configuration.maxRequestBytes
        router.registerHandler(
            forMethod: Meridian_V1_Meridian.Method.Sync.descriptor,
            deserializer: LimitedDeserializer<SyncInbound>(limit: limit),
            serializer: SyncOutboundSerializer(),
            handler: { request, context in
                let caller = try await self.accessControl.caller(
                    request.metadata, method: "Sync", peer: context.remotePeer)
                let peer = context.remotePeer
                return StreamingServerResponse { writer in
                    try await self.sync(request.messages, writer: writer, caller: caller, peer: peer)
                    return [:]
                }
            }
        )
        router.registerHandler(
            forMethod: Meridian_V1_Meridian.Method.Apply.descriptor,
            deserializer: LimitedDeserializer(
                limit: limit, name: Meridian_V1_ApplyRequest.protoMessageName,
                decode: ApplyRequestWireDecoding.transaction),
            serializer: ApplyResponseSerializer(),
            handler: { request, context in
                let caller = try await self.accessControl.caller(
                    request.metadata, method: "Apply", peer: context.remotePeer)
                let single = try await ServerRequest(stream: request)
                let response = await self.apply(single.message, caller: caller)
                return StreamingServerResponse(single: ServerResponse(message: response))
            }
        )
        router.registerHandler(
            forMethod: Meridian_V1_Meridian.Method.ApplyStream.descriptor,
            deserializer: LimitedDeserializer(
                limit: limit, name: Meridian_V1_ApplyRequest.protoMessageName,
                decode: ApplyRequestWireDecoding.transaction),
            serializer: ApplyResponseSerializer(),
            handler: { request, context in
                let caller = try await self.accessControl.caller(
                    request.metadata, method: "ApplyStream", peer: context.remotePeer)
                return StreamingServerResponse { writer in
                    try await self.applyStream(request.messages, caller: caller, writer: writer)
                    return [:]
                }
            }
        )
        router.registerHandler(
            forMethod: Meridian_V1_Meridian.Method.Query.descriptor,
            deserializer: LimitedDeserializer<Meridian_V1_QueryRequest>(limit: limit),
            serializer: EncodedMessageSerializer(),
            handler: { request, context in
                let caller = try await self.accessControl.caller(
                    request.metadata, method: "Query", peer: context.remotePeer)
                let single = try await ServerRequest(stream: request)
                return try await self.query(single.message, caller: caller)
            }
        )
        router.registerHandler(
            forMethod: Meridian_V1_Meridian.Method.GetSchema.descriptor,
            deserializer: LimitedDeserializer<Meridian_V1_GetSchemaRequest>(limit: limit),
            serializer: ProtobufSerializer<Meridian_V1_GetSchemaResponse>(),
            handler: { request, context in
                _ = try await self.accessControl.caller(request.metadata, method: "GetSchema", peer: context.remotePeer)
                _ = try await ServerRequest(stream: request)
                return StreamingServerResponse(
                    single: ServerResponse(message: Meridian_V1_GetSchemaResponse(self.store.schema)))
            }
        )
    }

    // MARK: - Apply

    /// One transaction: its commit, or the typed reason it was rejected (never a non-OK status).
    func apply(_ request: ApplyTransaction, caller: Caller?) async -> Meridian_V1_ApplyResponse {
        await self.answer(self.submit(request, caller: caller))
    }

    /// A transaction checked and queued for the store's next group commit (or already answered: refused before it
    /// reached the store). Queued transactions commit in the order they were submitted.
    enum Submitted: Sendable {
        case answered(Meridian_V1_ApplyResponse)
        case queued(QueuedApply)
    }

    /// A transaction in the store's queue, with what its answer needs.
    struct QueuedApply: Sendable {
        let pending: PendingCommit
        let operations: [WriteOperation]
        let clientTag: String
        /// `ApplyRequest.seq_only`: answered with the seq alone.
        let seqOnly: Bool
        let caller: Caller?
        let start: ContinuousClock.Instant
    }

    /// Checks a transaction (size, quota, ids, decoding, shape) and queues it without waiting for its commit.
    func submit(_ request: ApplyTransaction, caller: Caller?) -> Submitted {
        var response = Meridian_V1_ApplyResponse()
        response.clientTag = request.clientTag
        let limit = self.configuration.maxOperationsPerTransaction
        guard request.operationCount <= limit else {
            self.metrics.rejected(code: "limit_exceeded")
            response.error = Meridian_V1_ErrorDetail(
                .limitExceeded,
                "the transaction has \(request.operationCount) operations; at most \(limit) are allowed "
                    + "(--max-operations)")
            return .answered(response)
        }
        if let subject = caller?.identity.principal.subject,
            let wait = self.accessControl.quotas.takeTransaction(subject)
        {
            self.metrics.rejected(code: "limit_exceeded")
            response.error = Meridian_V1_ErrorDetail(
                .limitExceeded,
                "\(subject) commits more than \(self.configuration.applyRatePerPrincipal) transactions a second, "
                    + "the most one principal may (--apply-rate-per-principal); retry after \(wait.spoken)")
            return .answered(response)
        }
        let operations: [WriteOperation]
        let policy: ConflictPolicy
        do {
            for (i, bytes) in request.idByteCounts.enumerated() {
                try RequestDecoding.checkID(bytes: bytes, "operation \(i)'s id", limits: self.configuration)
            }
            (operations, policy) = try RequestDecoding.operations(request)
        } catch {
            response.error = error.detail
            self.metrics.rejected(code: response.error.code.metricLabel)
            return .answered(response)
        }
        do {
            let start = ContinuousClock.now
            let pending = try self.store.submit(
                operations, policy: policy, idempotencyKey: request.idempotencyKey, authorizer: caller?.access,
                author: caller?.identity.principal.subject)
            return .queued(
                QueuedApply(
                    pending: pending, operations: operations, clientTag: request.clientTag,
                    seqOnly: request.seqOnly, caller: caller, start: start))
        } catch {
            return .answered(
                self.rejection(error, operations: operations, caller: caller, clientTag: request.clientTag))
        }
    }

    /// Waits for a submitted transaction's commit and answers it.
    func answer(_ submitted: Submitted) async -> Meridian_V1_ApplyResponse {
        switch submitted {
        case .answered(let response): response
        case .queued(let queued): await self.answer(queued)
        }
    }

    private func answer(_ queued: QueuedApply) async -> Meridian_V1_ApplyResponse {
        let (operations, caller) = (queued.operations, queued.caller)
        let committed: CommitResult
        do {
            committed = try await queued.pending.committed()
        } catch {
            return self.rejection(error, operations: operations, caller: caller, clientTag: queued.clientTag)
        }
        self.metrics.commitDuration.recordNanoseconds(Int64((ContinuousClock.now - queued.start).nanoseconds))
        var response = Meridian_V1_ApplyResponse()
        response.clientTag = queued.clientTag
        var result = Meridian_V1_ApplyResult()
        result.seq = committed.seq
        if !queued.seqOnly { result.rows = committed.rows.map(Meridian_V1_WrittenRow.init) }
        response.result = result
        self.metrics.applyCommitted.increment()
        self.metrics.commits.increment()
        self.metrics.rowChanges.increment(by: Int64(committed.rows.count))
        self.accessControl.audit?.record(
            "apply", ["sub": caller?.identity.principal.subject, "seq": committed.seq, "operations": operations.count])
        return response
    }

    /// The answer to a transaction the store refused (counted, and audited when the rules denied it).
    func rejection(
        _ error: any Error, operations: [WriteOperation], caller: Caller?, clientTag: String
    ) -> Meridian_V1_ApplyResponse {
        var response = Meridian_V1_ApplyResponse()
        response.clientTag = clientTag
        if let error = error as? StoreError {
            response.error = RequestDecoding.detail(error, operations: operations)
            self.metrics.rejected(code: response.error.code.metricLabel)
            if error.code == .permissionDenied {
                self.accessControl.audit?.record(
                    "apply_denied",
                    [
                        "sub": caller?.identity.principal.subject, "operation": error.operationIndex,
                        "message": error.message,
                    ])
            }
        } else {
            self.metrics.rejected(code: "internal")
            response.error = Meridian_V1_ErrorDetail(.internal, "the transaction failed: \(error)")
        }
        return response
    }

    /// Pipelined transactions: up to 64 in flight (so that they share group commits), queued for commit as they
    /// arrive — so they commit in request order — and answered in order: the stream's own task takes them from an
    /// ``InFlightQueue`` one after another, awaits each one's commit and writes its answer, while a second task reads
    /// the requests (no task per transaction, and no hand-off of its answer between tasks). A client that reads no
    /// answers stops the reading of its requests once its answers fill the transport's buffers and 64 more wait.
    ///
    /// When the server begins its graceful shutdown, the stream reads no further request (one it is waiting for is
    /// not waited for), answers those it read, and ends `UNAVAILABLE` (`SHUTTING_DOWN`): a graceful shutdown waits
    /// for every open call, and a client may keep an idle stream open for as long as it likes. A request read but
    /// not yet queued for commit is dropped unanswered, never committed — the client sends it again (with its
    /// idempotency key) to the next server.
    func applyStream(
        _ requests: RPCAsyncSequence<ApplyTransaction, any Error>,
        caller: Caller?,
        writer: RPCWriter<Meridian_V1_ApplyResponse>
    ) async throws {
        let inFlight = InFlightQueue<Submitted>(capacity: 64)
        // `waiting`: the reader is waiting for the client's next request, where a cancellation may stop it (and
        // nowhere else: a request queued for commit must keep its place in `inFlight`).
        let reading = Mutex((waiting: false, stopping: false))
        // Returns whether the shutdown stopped it (not the end of the client's requests).
        let reader = Task { () throws -> Bool in
            defer { inFlight.finish() }
            var iterator = requests.makeAsyncIterator()
            while true {
                let stopping = reading.withLock { state -> Bool in
                    state.waiting = !state.stopping
                    return state.stopping
                }
                if stopping { return true }
                let next: ApplyTransaction?
                do {
                    next = try await iterator.next()
                } catch {
                    if reading.withLock({ $0.stopping }) { return true }
                    throw error
                }
                let stop = reading.withLock { state -> Bool in
                    state.waiting = false
                    return state.stopping
                }
                // The end of the requests: the client's (false), or the shutdown's cancellation, if the sequence
                // ends rather than throws when cancelled.
                guard let request = next else { return stop && Task.isCancelled }
                if stop { return true }
                // A stream outlives its token: each transaction is checked against the credential's expiry and the
                // revocations, as every unary call is when it starts.
                if let caller, let end = self.accessControl.end(ofOpen: caller.identity) {
                    let refusal =
                        end == .expired
                        ? "the stream's token expired; open a new stream with a fresh token"
                        : "the credential was revoked"
                    self.accessControl.audit?.record(
                        "apply_stream_ended", ["sub": caller.identity.principal.subject, "reason": refusal])
                    throw RPCError(Meridian_V1_ErrorDetail(.unauthenticated, refusal))
                }
                // Queued for commit here, in the order the requests arrive.
                guard try await inFlight.put(self.submit(request, caller: caller)) else { return false }
            }
        }
        let registration = self.shutdown.register {
            let waiting = reading.withLock { state -> Bool in
                state.stopping = true
                return state.waiting
            }
            if waiting { reader.cancel() }
        }
        defer { self.shutdown.unregister(registration) }
        let stoppedByShutdown: Bool
        do {
            stoppedByShutdown = try await withTaskCancellationHandler {
                while let submitted = await inFlight.next() {
                    try await writer.write(await self.answer(submitted))
                }
                return try await reader.value
            } onCancel: {
                reader.cancel()
            }
        } catch {
            // The answers cannot be written (the client went), or the reader failed: the reader stops, and the
            // transactions it queued commit unanswered, as they would have had the connection dropped.
            inFlight.finish()
            reader.cancel()
            _ = await reader.result
            throw error
        }
        // A client that ended its requests before the shutdown got every answer: the call ends OK.
        if stoppedByShutdown {
            throw RPCError(
                Meridian_V1_ErrorDetail(.shuttingDown, "the server is shutting down; send again to the next"))
        }
    }

    // MARK: - Query

    /// A one-shot fetch in chunks, consistent with one seq; a bad request fails the call with its detail.
    func query(
        _ request: Meridian_V1_QueryRequest, caller: Caller?
    ) async throws -> StreamingServerResponse<[UInt8]> {
        var bound: BoundFetchRequest
        do {
            bound = try RequestDecoding.bind(request.fetch, schema: self.store.schema, limits: self.configuration)
        } catch {
            throw RPCError(error.detail)
        }
        // Rules are filters: the query reads only what the caller may.
        if let access = caller?.access { bound = bound.restricted(by: access) }
        let maxBytes = Chunking.chunkBytes(requested: Int(request.maxChunkBytes), configured: self.configuration)
        // A file store streams the rows as the client reads them; an in-memory store has one connection, which a
        // waiting read would hold from every writer, so its rows are read whole.
        if self.store.path != nil { return self.streamedQuery(bound, maxBytes: maxBytes) }
        let snapshot: Snapshot
        do {
            snapshot = try await self.store.snapshot(bound)
        } catch {
            self.logger.error(
                "cannot read a query's rows: \(error)", metadata: ["meridian.entity": "\(bound.entity.name)"])
            throw RPCError(RequestDecoding.readFailure(error, "cannot read the query's rows"), cause: error)
        }
        let rows = zip(snapshot.rows, snapshot.versions).map { VersionedRow(row: $0.0, version: $0.1) }
        return StreamingServerResponse { writer in
            let ranges = Chunking.ranges(rows, maxBytes: maxBytes)
            for (i, range) in ranges.enumerated() {
                try await writer.write(
                    DeltaWireEncoding.queryResponse(
                        seq: snapshot.seq, rowCount: range.count, last: i == ranges.count - 1
                    ) {
                        let row = rows[range.lowerBound + $0]
                        return (row.row, row.version)
                    })
            }
            return [:]
        }
    }
}

extension MeridianService {
    /// The rows of a query read a chunk at a time from a store cursor, as the client takes them: the read waits
    /// while two chunks wait for the client, and stops (`LIMIT_EXCEEDED`) when the client takes none for
    /// `--query-timeout`. An error after the first chunk ends the call with its status. Each chunk is written as
    /// the cursor reads its rows, their columns straight into the message's bytes (``StreamedChunks``).
    func streamedQuery(
        _ bound: BoundFetchRequest, maxBytes: Int
    ) -> StreamingServerResponse<[UInt8]> {
        let store = self.store
        let logger = self.logger
        let stall = store.readTimeout ?? .seconds(15)
        return StreamingServerResponse { writer in
            let handoff = BlockingHandoff<[UInt8]>(capacity: 2)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    defer { handoff.finish() }
                    let piece = QueryPiece(StreamedChunks(.query, maxBytes: maxBytes))
                    /// Hands a chunk to the writer; `false` stops the read.
                    @Sendable func send(_ chunk: [UInt8]) throws -> Bool {
                        switch handoff.put(chunk, timeout: stall) {
                        case .queued: return true
                        case .closed: return false
                        case .stalled:
                            throw RPCError(
                                Meridian_V1_ErrorDetail(
                                    .limitExceeded,
                                    "the client took none of the query's rows for \(stall.spoken) (--query-timeout)"))
                        }
                    }
                    do {
                        _ = try await store.streamSnapshotColumns(
                            entity: bound.entity.name, where: bound.predicate, orderBy: bound.order,
                            limit: bound.limit
                        ) { seq, row in
                            guard let row else { return try send(piece.chunks.finish(seq: seq)) }
                            guard let full = piece.chunks.append(row, seq: seq) else { return true }
                            // The read's time limit counts SQLite's work, not the wait for the client.
                            return try row.pausingTimeLimit { try send(full) }
                        }
                    } catch let error as RPCError {
                        throw error
                    } catch {
                        logger.error(
                            "cannot read a query's rows: \(error)",
                            metadata: ["meridian.entity": "\(bound.entity.name)"])
                        throw RPCError(RequestDecoding.readFailure(error, "cannot read the query's rows"), cause: error)
                    }
                }
                do {
                    while let response = await handoff.next() { try await writer.write(response) }
                } catch {
                    handoff.close()
                    throw error
                }
                try await group.waitForAll()
            }
            return [:]
        }
    }
}

/// The query's chunks being written: touched only by the store's reader thread that runs the read.
private final class QueryPiece: @unchecked Sendable {
    var chunks: StreamedChunks
    init(_ chunks: StreamedChunks) { self.chunks = chunks }
}

// MARK: - Chunking

/// Cuts rows into chunks of about a byte size.
enum Chunking {
    /// The size snapshot and query chunks are cut to: the server's (`--snapshot-chunk-bytes`), or the client's largest
    /// message when that is smaller. A chunk as large as the client takes would hold up the first rows: the server
    /// reads a whole chunk before it sends it, and the client receives a whole message before it decodes one (the
    /// Swift client takes 4 MiB, four times the default chunk: its initial sync then came in three chunks, its first
    /// rows after the server had read 70,000 of them).
    static func chunkBytes(requested: Int, configured: ServerConfiguration) -> Int {
        let server = max(1, configured.snapshotChunkBytes)
        return requested > 0 ? min(requested, server) : server
    }

    /// The size a Batch is cut into parts past (protocol version 2): the client's largest message, when it says it,
    /// else the server's chunk size. A Batch is sent in parts only when it must be: its parts are held by the client
    /// until the last one arrives.
    static func batchBytes(requested: Int, configured: ServerConfiguration) -> Int {
        requested > 0 ? requested : max(1, configured.snapshotChunkBytes)
    }

    /// Where the rows are cut into chunks whose encoding stays under `maxBytes` (a larger row goes alone): index
    /// ranges, at least one, empty for no rows. A Sync snapshot and a query encode them straight into messages.
    static func ranges(_ rows: [VersionedRow], maxBytes: Int) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var start = 0
        var size = 0
        for (index, row) in rows.enumerated() {
            let estimate = self.estimatedSize(row)
            if index > start, size + estimate > maxBytes {
                ranges.append(start..<index)
                start = index
                size = 0
            }
            size += estimate
        }
        if start < rows.count || ranges.isEmpty { ranges.append(start..<rows.count) }
        return ranges
    }

    /// An upper bound of a row's encoded size inside a chunk message.
    static func estimatedSize(_ row: VersionedRow) -> Int {
        var estimate = 16 + row.row.id.utf8.count
        row.row.forEachValue { name, value in
            estimate += 12 + name.utf8.count
            switch value {
            case .string(let s): estimate += s.utf8.count + 5
            case .bytes(let b): estimate += b.count + 5
            default: estimate += 11
            }
        }
        return estimate
    }
}
