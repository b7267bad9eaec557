// MARK: - SyncSession: one Sync stream

internal import CoreMetrics
internal import GRPCCore
internal import Logging
internal import MeridianAuth
internal import MeridianCore
internal import MeridianProto
internal import MeridianStore
internal import NIOCore
internal import NIOPosix

/// One `Sync` stream: reads the client's requests, registers its subscriptions with the hub, reads their bases from
/// the store, and writes its queue to the stream — the writer in the stream's own task, the reader in a child task
/// (a timer watches a caller's credential expire: ``CredentialWatch``), the reads in a task while there are any
/// (``ReadJobs``), so a stream that is slow to write never stops the others, and the hub never waits for any of them.
/// What an idle stream costs is mostly these tasks and their frames: see "The stream's long-lived loops" below.
struct SyncSession {
    let service: MeridianService
    /// Who opened the stream (`nil`: anonymous, on a server without authentication); a refresh replaces it.
    let access: StreamAccess
    /// The peer, as gRPC names it (for logs and the audit log).
    let peer: String

    init(service: MeridianService, caller: Caller?, peer: String) {
        self.service = service
        self.access = StreamAccess(caller)
        self.peer = peer
    }

    func run(
        requests: RPCAsyncSequence<SyncInbound, any Error>,
        writer: RPCWriter<SyncOutbound>
    ) async throws {
        let hub = self.service.hub
        let outbox = ClientOutbox(
            limit: self.service.configuration.clientQueueLimit,
            limitBytes: self.service.configuration.clientQueueBytes)
        let jobs = ReadJobs { pending in await hub.read(pending) }
        // Shared between the stream's tasks: the chunk size Hello sets (the writer reads it), the client id Hello
        // registers (read when the stream ends), and whether the first message arrived (the Hello timer reads it).
        let chunkBytes = LockedValue(1 << 20)
        // The most bytes a Batch message may take, for a client that takes a Batch in parts (protocol version 2).
        let batchBytes = LockedValue<Int?>(nil)
        let clientID = LockedValue<Int?>(nil)
        let helloReceived = LockedValue(false)
        defer {
            if let id = clientID.value { hub.disconnect(id) }
            self.access.releaseSubscriptions(quotas: self.service.accessControl.quotas)
        }
        // An open stream that never says Hello costs a socket and its tasks: it fails after `helloTimeout`. A timer on
        // an event loop, cancelled by the Hello: a task sleeping out the timeout held ~2 KiB per stream that did say
        // Hello, for the whole timeout.
        let helloTimeout = self.service.configuration.helloTimeout
        let helloTimer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(
            in: .nanoseconds(helloTimeout.nanoseconds)
        ) {
            guard !helloReceived.value else { return }
            outbox.fail(
                with: RPCError(
                    Meridian_V1_ErrorDetail(
                        .limitExceeded,
                        "no Hello within \(helloTimeout.spoken) of opening the stream (--hello-timeout)")))
        }
        // A stream that has not said Hello is not the hub's yet, so the hub's Goodbye at a graceful shutdown does not
        // reach it: it gets its Goodbye here, or the shutdown would wait for its Hello timer (10 s by default).
        let shutdown = self.service.shutdown
        let shutdownKey = shutdown.register {
            guard !helloReceived.value else { return }
            outbox.finish(with: .goodbye(Hub.shutdownReason))
        }
        let helloWait = HelloWait(timer: helloTimer, shutdown: shutdown, shutdownKey: shutdownKey)
        defer { helloWait.end() }

        do {
            try await self.runTasks(
                requests: requests, writer: writer, outbox: outbox, jobs: jobs, chunkBytes: chunkBytes,
                batchBytes: batchBytes, clientID: clientID, helloReceived: helloReceived, helloWait: helloWait)
        } catch {
            await jobs.stop()
            throw error
        }
        await jobs.stop()
    }

    /// The stream's writer, in this task, until it ends, with the reader in a child task: a task less for each stream
    /// to keep while idle than the writer in a child of its own. A reader that fails ends the queue, which ends the
    /// writer, and the stream ends with the reader's error. A caller's credential is watched by timers meanwhile
    /// (``CredentialWatch``). A writer held in a write its client does not take when the queue fails is cancelled
    /// `--query-timeout` (at least a second) later (``StalledWriter``).
    private func runTasks(
        requests: RPCAsyncSequence<SyncInbound, any Error>, writer: RPCWriter<SyncOutbound>,
        outbox: ClientOutbox, jobs: ReadJobs, chunkBytes: LockedValue<Int>, batchBytes: LockedValue<Int?>,
        clientID: LockedValue<Int?>, helloReceived: LockedValue<Bool>, helloWait: HelloWait
    ) async throws {
        let credentialWatch = self.access.caller == nil ? nil : CredentialWatch(self, outbox: outbox)
        credentialWatch?.start()
        defer { credentialWatch?.stop() }
        // At least a second: a `--query-timeout` of a few milliseconds would cut the Goodbye of a client that reads.
        let stalled = StalledWriter(grace: max(self.service.store.readTimeout ?? .seconds(15), .seconds(1)))
        stalled.begin()
        defer { stalled.end() }
        outbox.onFailure { stalled.queueFailed() }
        let readerFailure = LockedValue<(any Error)?>(nil)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await self.readLoop(
                        requests, outbox: outbox, jobs: jobs, chunkBytes: chunkBytes, batchBytes: batchBytes,
                        clientID: clientID, helloReceived: helloReceived, helloWait: helloWait)
                } catch {
                    readerFailure.set(error)
                    outbox.fail(with: error as? RPCError ?? RPCError(code: .unknown, message: "\(error)", cause: error))
                }
            }
            // However the writer ends, the reader ends with it.
            defer { group.cancelAll() }
            do {
                try await self.writeLoop(outbox: outbox, to: writer, chunkBytes: chunkBytes, batchBytes: batchBytes)
            } catch {
                // A write cancelled because the queue failed (``StalledWriter``) ends with the queue's error.
                throw readerFailure.value ?? outbox.failure ?? error
            }
            if let failure = readerFailure.value { throw failure }
        }
    }

    // MARK: - The stream's long-lived loops
    //
    // Each loop lives as long as the stream, in a task that keeps the deepest stack of async frames it ever reached
    // (see `inChildTask`). Each is a function of its own, not inlined into its task's closure, and calls the work
    // it waits on through functions of their own, so that what an idle stream keeps is each loop's own small frame.

    /// Writes the queue to the stream until it ends; however it ends (the client gone, the call cancelled), the queue
    /// ends with it: a snapshot streaming into it stops at once instead of waiting for room (and holding a reader).
    @inline(never)
    private func writeLoop(
        outbox: ClientOutbox, to writer: RPCWriter<SyncOutbound>, chunkBytes: LockedValue<Int>,
        batchBytes: LockedValue<Int?>
    ) async throws {
        defer { outbox.finish() }
        while let item = await outbox.next() {
            try await self.write(item, to: writer, chunkBytes: chunkBytes.value, batchBytes: batchBytes.value)
        }
        // The hub ended the queue with an error (the fan-out stopped): the stream ends with it.
        if let failure = outbox.failure { throw failure }
    }

    /// Reads the client's requests: Hello first, then the rest, each handled in a task of its own.
    @inline(never)
    private func readLoop(
        _ requests: RPCAsyncSequence<SyncInbound, any Error>, outbox: ClientOutbox,
        jobs: ReadJobs, chunkBytes: LockedValue<Int>, batchBytes: LockedValue<Int?>,
        clientID: LockedValue<Int?>, helloReceived: LockedValue<Bool>, helloWait: HelloWait
    ) async throws {
        var client: Int? = nil
        // The number of Subscribes read per id: the epoch every message about the subscription carries.
        var epochs = Epochs()
        for try await request in requests {
            if let id = client {
                epochs = try await self.handleInChildTask(request, client: id, outbox: outbox, epochs: epochs)
            } else {
                helloReceived.set(true)
                helloWait.end()
                let id: Int
                (id, epochs) = try await self.openInChildTask(
                    request, outbox: outbox, jobs: jobs, chunkBytes: chunkBytes, batchBytes: batchBytes,
                    epochs: epochs)
                client = id
                clientID.set(id)
            }
        }
    }

    @inline(never)
    private func handleInChildTask(
        _ request: SyncInbound, client: Int, outbox: ClientOutbox, epochs: Epochs
    ) async throws -> Epochs {
        try await inChildTask {
            var epochs = epochs
            try await self.handle(request.message, client: client, outbox: outbox, epochs: &epochs)
            return epochs
        }
    }

    @inline(never)
    private func openInChildTask(
        _ request: SyncInbound, outbox: ClientOutbox, jobs: ReadJobs,
        chunkBytes: LockedValue<Int>, batchBytes: LockedValue<Int?>, epochs: Epochs
    ) async throws -> (Int, Epochs) {
        try await inChildTask {
            var epochs = epochs
            let id = try await self.open(
                request.message, outbox: outbox, jobs: jobs, chunkBytes: chunkBytes, batchBytes: batchBytes,
                epochs: &epochs)
            return (id, epochs)
        }
    }

    // MARK: - Requests

    /// Opens the stream on its first request, which must be a Hello: registers the client with the hub and returns
    /// its id.
    private func open(
        _ request: Meridian_V1_SyncRequest, outbox: ClientOutbox, jobs: ReadJobs,
        chunkBytes: LockedValue<Int>, batchBytes: LockedValue<Int?>, epochs: inout Epochs
    ) async throws -> Int {
        let hub = self.service.hub
        guard case .hello(let hello) = request.kind else {
            throw RPCError(
                Meridian_V1_ErrorDetail(.malformedRequest, "a Sync stream must start with Hello"))
        }
        guard hello.protocolVersion >= ProtocolVersion.minimum else {
            throw RPCError(
                Meridian_V1_ErrorDetail(
                    .unsupportedProtocol,
                    "the client speaks protocol version \(hello.protocolVersion) of meridian.v1; this "
                        + "server serves versions \(ProtocolVersion.minimum) to \(ProtocolVersion.current) "
                        + "(see docs/protocol.md, \"Versions\")"))
        }
        let version = min(hello.protocolVersion, ProtocolVersion.current)
        let maxBytes = Chunking.chunkBytes(
            requested: Int(hello.maxBatchBytes), configured: self.service.configuration)
        chunkBytes.set(maxBytes)
        if version >= ProtocolVersion.batchParts {
            batchBytes.set(
                Chunking.batchBytes(requested: Int(hello.maxBatchBytes), configured: self.service.configuration))
        }
        let resumeFrom = try await self.resumePoint(hello)
        let subscriptions = hello.subscriptions.map { subscribe in
            self.subscriptionRequest(subscribe, epoch: epochs.next(subscribe.subscriptionID))
        }
        let (id, seq): (Int, Int64)
        do throws(DetailError) {
            (id, seq) = try hub.connect(
                outbox: outbox, jobs: jobs, name: hello.clientName, peer: self.peer,
                subject: self.access.caller?.identity.principal.subject, chunkBytes: maxBytes,
                resumeFrom: resumeFrom,
                clientSeq: hello.resumeFromSeq, subscriptions: subscriptions,
                welcome: { seq in self.welcome(seq: seq, resumed: resumeFrom != nil, version: version) })
        } catch {
            throw RPCError(error.detail)
        }
        self.service.logger.debug(
            "sync stream opened",
            metadata: ["meridian.client": "\(hello.clientName)", "meridian.seq": "\(seq)"])
        self.service.accessControl.audit?.record(
            "stream_opened",
            [
                "sub": self.access.caller?.identity.principal.subject, "peer": self.peer,
                "client_name": hello.clientName, "subscriptions": hello.subscriptions.count,
            ])
        return id
    }

    /// Handles one request after Hello; a request that breaks the protocol ends the stream.
    private func handle(
        _ request: Meridian_V1_SyncRequest, client: Int, outbox: ClientOutbox, epochs: inout Epochs
    ) async throws {
        let hub = self.service.hub
        let schema = self.service.store.schema
        switch request.kind {
        case .subscribe(let subscribe):
            hub.subscribe(client, self.subscriptionRequest(subscribe, epoch: epochs.next(subscribe.subscriptionID)))
        case .replace(let replace):
            let id = replace.subscriptionID
            do throws(DetailError) {
                guard replace.hasFetch else {
                    throw DetailError(.malformedRequest, "Replace '\(id)' carries no fetch request")
                }
                let bound = try RequestDecoding.bind(replace.fetch, schema: schema, limits: self.service.configuration)
                try hub.replace(client, id: id, request: self.access.restrict(bound, id: id))
            } catch {
                outbox.enqueue(Self.subscriptionError(id, epoch: epochs[id], error.detail))
            }
        case .unsubscribe(let unsubscribe):
            let id = unsubscribe.subscriptionID
            do throws(DetailError) {
                try hub.unsubscribe(client, id: id)
                self.access.forget(id, quotas: self.service.accessControl.quotas)
            } catch {
                outbox.enqueue(Self.subscriptionError(id, epoch: epochs[id], error.detail))
            }
        case .ack:
            break
        case .refresh(let refresh):
            try await self.refresh(refresh.token, client: client)
        case .hello:
            throw RPCError(Meridian_V1_ErrorDetail(.malformedRequest, "Hello was already sent on this stream"))
        case nil:
            throw RPCError(Meridian_V1_ErrorDetail(.malformedRequest, "a SyncRequest with no message set"))
        }
    }

    /// A Subscribe (after Hello or inside it) checked and bound to the schema.
    private func subscriptionRequest(
        _ subscribe: Meridian_V1_Subscribe, epoch: UInt32
    ) -> Result<Hub.SubscriptionRequest, Hub.RefusedSubscription> {
        let id = subscribe.subscriptionID
        do throws(DetailError) {
            guard !id.isEmpty else { throw DetailError(.malformedRequest, "Subscribe needs a subscription id") }
            try RequestDecoding.checkID(id, "the subscription id", limits: self.service.configuration)
            guard subscribe.hasFetch else {
                throw DetailError(.malformedRequest, "Subscribe '\(id)' carries no fetch request")
            }
            let bound = try RequestDecoding.bind(
                subscribe.fetch, schema: self.service.store.schema, limits: self.service.configuration)
            // Counted when accepted here; a subscription the hub then refuses (a held id, the stream's own bound)
            // stays counted until the stream ends, so the bound errs on the side of the server.
            try self.access.countSubscription(quotas: self.service.accessControl.quotas)
            return .success(
                Hub.SubscriptionRequest(
                    id: id, epoch: epoch, request: self.access.restrict(bound, id: id), resume: subscribe.resume))
        } catch {
            return .failure(Hub.RefusedSubscription(id: id, epoch: epoch, error: error))
        }
    }

    /// The client's resume point when the log still holds everything after it and the schema is unchanged.
    private func resumePoint(_ hello: Meridian_V1_Hello) async throws -> Int64? {
        guard hello.hasResumeFromSeq else { return nil }
        let store = self.service.store
        if hello.hasSchemaFingerprint, hello.schemaFingerprint != store.schema.fingerprint { return nil }
        // Under rules, only a resume reached under the same read rules can be answered from the log.
        if let access = self.access.caller?.access,
            !hello.hasAccessFingerprint || hello.accessFingerprint != access.readFingerprint
        {
            return nil
        }
        switch try await store.changes(after: hello.resumeFromSeq, limit: 1) {
        case .changes: return hello.resumeFromSeq
        case .tooOld: return nil
        }
    }

    private func welcome(seq: Int64, resumed: Bool, version: UInt32) -> Meridian_V1_SyncResponse {
        let configuration = self.service.configuration
        var welcome = Meridian_V1_Welcome()
        welcome.seq = seq
        welcome.schemaFingerprint = self.service.store.schema.fingerprint
        welcome.schemaVersion = Int64(self.service.store.schema.version)
        welcome.heartbeatIntervalMs = UInt32(clamping: configuration.heartbeatInterval.nanoseconds / 1_000_000)
        welcome.resumed = resumed
        welcome.maxSubscriptions = UInt32(clamping: configuration.maxSubscriptionsPerStream)
        welcome.maxRequestBytes = UInt32(clamping: configuration.maxRequestBytes)
        welcome.protocolVersion = version
        welcome.accessFingerprint = self.access.caller?.access?.readFingerprint ?? ""
        var response = Meridian_V1_SyncResponse()
        response.welcome = welcome
        return response
    }

    /// A `SubscriptionError`; `ended` when the server dropped the subscription (not only refused a Replace of it).
    static func subscriptionError(
        _ id: String, epoch: UInt32, _ detail: Meridian_V1_ErrorDetail, ended: Bool = false
    ) -> Meridian_V1_SyncResponse {
        var error = Meridian_V1_SubscriptionError()
        error.subscriptionID = id
        error.epoch = epoch
        error.error = detail
        error.ended = ended
        var response = Meridian_V1_SyncResponse()
        response.subscriptionError = error
        return response
    }

    // MARK: - Writing

    /// Writes one queued item: a batch whole, or in parts of at most `batchBytes` when the client takes parts; a
    /// snapshot in chunks of at most `chunkBytes`.
    @inline(never)
    private func write(
        _ item: OutboxItem, to writer: RPCWriter<SyncOutbound>, chunkBytes: Int, batchBytes: Int?
    ) async throws {
        switch item {
        case .message:
            try await writer.write(Self.outbound(item))
        case .batch(let batch):
            try await self.writeBatch(batch, to: writer, batchBytes: batchBytes)
        case .snapshot(let snapshot):
            try await Self.writeSnapshot(snapshot, to: writer, chunkBytes: chunkBytes)
        }
    }

    /// A message item as the stream writes it. Not inlined: `write` would hold the message (184 bytes) and its copies
    /// in its frame, which the writer's task keeps for the stream's life.
    @inline(never)
    private static func outbound(_ item: OutboxItem) -> SyncOutbound {
        guard case .message(let message) = item else { preconditionFailure("not a message: \(item)") }
        return .message(message)
    }

    /// Writes a batch whole, or in parts of at most `batchBytes` when the client takes parts.
    @inline(never)
    private func writeBatch(_ batch: QueuedBatch, to writer: RPCWriter<SyncOutbound>, batchBytes: Int?) async throws {
        if let batchBytes {
            for part in batch.encoded(maxBytes: batchBytes) { try await writer.write(.encoded(part)) }
        } else {
            try await writer.write(.encoded(batch.encoded()))
        }
        if let committedAt = batch.committedAt {
            // Wall clock against the log's committed_at (both this host's): a step of the clock skews one sample.
            let micros = wallClockMicroseconds() - committedAt
            self.service.metrics.commitToSend.recordNanoseconds(max(0, micros) * 1000)
        }
    }

    /// Writes a snapshot encoded by hand, straight from the rows (DeltaWireEncoding), one chunk at a time; a piece
    /// streamed from the store was written whole as it was read.
    @inline(never)
    private static func writeSnapshot(
        _ snapshot: QueuedSnapshot, to writer: RPCWriter<SyncOutbound>, chunkBytes: Int
    ) async throws {
        if let encoded = snapshot.encoded {
            try await writer.write(.encoded(encoded))
            return
        }
        let rows = snapshot.rows
        let chunks = Chunking.ranges(rows, maxBytes: chunkBytes)
        for (i, range) in chunks.enumerated() {
            let bytes = DeltaWireEncoding.snapshotChunkResponse(
                subscriptionID: snapshot.subscriptionID, seq: snapshot.seq, rowCount: range.count,
                last: i == chunks.count - 1, resnapshot: snapshot.resnapshot, chunkIndex: UInt32(i),
                epoch: snapshot.epoch,
                row: { k in (rows[range.lowerBound + k].row, rows[range.lowerBound + k].version) })
            try await writer.write(.encoded(bytes))
        }
    }
}

// MARK: - Rare work in a task of its own

/// Runs `body` in a child task of its own, and returns what it returns.
///
/// A task keeps the deepest stack of async frames it ever reached for as long as it lives (Swift's task allocator
/// keeps its slabs): a stream's reader and its loop of subscription reads (now ``ReadJobs``), which lived as long as
/// the stream, held 10 KiB each per idle client after handling one Hello and reading one snapshot (`meridian-bench
/// server --case regions`, heaptrack). The work they do is rare (a request, a subscription's read), so a task for
/// each costs little; the child's frames go when it ends.
func inChildTask<Result: Sendable>(_ body: @escaping @Sendable () async throws -> Result) async throws -> Result {
    try await withThrowingTaskGroup(of: Result.self) { group in
        group.addTask(operation: body)
        return try await group.next()!
    }
}

// MARK: - Small shared boxes

/// The number of Subscribe messages read per subscription id on one stream (see meridian.proto, Subscribe).
struct Epochs: Sendable {
    private var counts: [String: UInt32] = [:]

    /// Counts one more Subscribe for `id` and returns its epoch.
    mutating func next(_ id: String) -> UInt32 {
        let epoch = (self.counts[id] ?? 0) &+ 1
        self.counts[id] = epoch
        return epoch
    }

    /// The epoch of the latest Subscribe for `id` (0: none).
    subscript(_ id: String) -> UInt32 { self.counts[id] ?? 0 }
}

extension Meridian_V1_SyncResponse {
    /// A `Goodbye` with `reason`.
    static func goodbye(_ reason: String) -> Self {
        var goodbye = Meridian_V1_Goodbye()
        goodbye.reason = reason
        var response = Self()
        response.goodbye = goodbye
        return response
    }
}

/// What waits for a stream's Hello: the timer that fails a stream without one (`--hello-timeout`), and the graceful
/// shutdown's handler that says Goodbye to it. Both end at the Hello (the handler, registered with the shutdown, would
/// otherwise stay for the stream's whole life).
struct HelloWait {
    let timer: Scheduled<Void>
    let shutdown: ShutdownSignal
    let shutdownKey: Int

    func end() {
        self.timer.cancel()
        self.shutdown.unregister(self.shutdownKey)
    }
}
