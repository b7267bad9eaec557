// MARK: - Hub: clients, subscriptions and pending registrations
//
// See Hub.swift for how a pending registration keeps a new subscription's snapshot and its first delta consistent.

internal import CoreMetrics
internal import GRPCCore
internal import Logging
internal import MeridianCore
internal import MeridianProto
internal import MeridianStore
internal import Synchronization

extension Hub {
    // MARK: - Clients

    /// A subscription a stream asks for: in Hello (re-added with the stream) or in a Subscribe.
    struct SubscriptionRequest {
        var id: String
        var epoch: UInt32
        var request: BoundFetchRequest
        /// The client already shows its result (as of the resume point).
        var resume: Bool
    }

    /// A subscription a stream asked for that is refused, with the epoch its error carries.
    struct RefusedSubscription: Error {
        var id: String
        var epoch: UInt32
        var error: DetailError
    }

    /// Registers a `Sync` stream and the subscriptions its Hello re-adds, all at once; `resumeFrom` is set when its
    /// Welcome says `resumed`. Queues the Welcome (`welcome` builds it from the seq it carries) and the refusals of
    /// re-added subscriptions first, so that no answer can overtake them. The re-added subscriptions the client
    /// already shows form one group: the client's batches are held until every one of them is answered, then sent
    /// as one; meanwhile heartbeats repeat `clientSeq`, the seq the client reconnects from (`Hello.resume_from_seq`),
    /// whether or not the log still reaches back to it.
    ///
    /// - Returns: The client's id and the seq its Welcome carries.
    /// - Throws: ``DetailError`` `SHUTTING_DOWN` when the server is shutting down, `UNAVAILABLE` when the fan-out
    ///   stopped.
    func connect(
        outbox: ClientOutbox, jobs: ReadJobs, name: String, peer: String = "",
        subject: String? = nil, chunkBytes: Int = 1 << 20, resumeFrom: Int64?, clientSeq: Int64 = 0,
        subscriptions: [Result<SubscriptionRequest, RefusedSubscription>] = [],
        welcome: (Int64) -> Meridian_V1_SyncResponse
    ) throws(DetailError) -> (id: Int, seq: Int64) {
        let result = self.state.withLock { state -> Result<(id: Int, seq: Int64), DetailError> in
            if let failure = state.failure { return .failure(DetailError(failure)) }
            guard !state.shuttingDown else {
                return .failure(DetailError(.shuttingDown, "the server is shutting down"))
            }
            let id = state.nextID
            state.nextID += 1
            state.clients[id] = Client(
                outbox: outbox, jobs: jobs, name: name, peer: peer, subject: subject, chunkBytes: chunkBytes,
                resumeFrom: resumeFrom)
            outbox.enqueue(welcome(state.processedSeq))
            // Held from the first re-added subscription on, also one answered at once (a limited subscription the
            // hub maintains), so that none of the group's answers leaves before the others.
            // Meanwhile the client shows its state at the seq it reconnected from (which may be behind the log's
            // start, but not ahead of the hub, unless the client comes from another store).
            let grouped = subscriptions.contains { (try? $0.get())?.resume == true }
            if grouped { outbox.beginHold(showing: min(clientSeq, state.processedSeq)) }
            defer { if grouped, state.clients[id]!.group.isEmpty { outbox.endHold() } }
            for subscription in subscriptions { self.add(id, subscription, &state) }
            return .success((id, state.processedSeq))
        }
        let connected = try result.get()
        self.metrics.streams.increment()
        return connected
    }

    /// Removes a client and everything it held.
    func disconnect(_ clientID: Int) {
        let removed = self.state.withLock { state -> Bool in
            guard let client = state.clients.removeValue(forKey: clientID) else { return false }
            for (id, subscription) in client.subscriptions {
                if let pending = subscription.pending { state.pendings[pending] = nil }
                if let key = subscription.active { self.removeHolder(key, clientID, id, &state) }
            }
            client.jobs.finish()
            client.outbox.finish()
            return true
        }
        if removed { self.metrics.streams.decrement() }
    }

    // MARK: - Requests from the client

    /// Adds a subscription: registers it pending and queues its read, or answers at once from a limited
    /// subscription the hub already maintains. A resumed subscription is answered before any other batch reaches
    /// the client. A refused one (here, or already when it was decoded) is answered with a `SubscriptionError`:
    /// `DUPLICATE_SUBSCRIPTION`, `TOO_MANY_SUBSCRIPTIONS`, or the decoding's error.
    func subscribe(_ clientID: Int, _ subscription: Result<SubscriptionRequest, RefusedSubscription>) {
        self.state.withLock { state in self.add(clientID, subscription, &state) }
    }

    /// ``subscribe(_:_:)`` under the lock.
    private func add(
        _ clientID: Int, _ subscription: Result<SubscriptionRequest, RefusedSubscription>, _ state: inout State
    ) {
        do throws(RefusedSubscription) {
            let subscription = try subscription.get()
            if let error = self.register(clientID, subscription, &state) {
                throw RefusedSubscription(id: subscription.id, epoch: subscription.epoch, error: error)
            }
        } catch {
            state.clients[clientID]?.outbox.enqueue(
                SyncSession.subscriptionError(error.id, epoch: error.epoch, error.error.detail, ended: true))
        }
    }

    /// Registers one subscription under the lock; returns why it is refused, if it is.
    private func register(_ clientID: Int, _ subscription: SubscriptionRequest, _ state: inout State) -> DetailError? {
        let maxSubscriptions = self.configuration.maxSubscriptionsPerStream
        let id = subscription.id
        let request = subscription.request
        let resume = subscription.resume
        guard let client = state.clients[clientID] else { return nil }
        if client.subscriptions[id] != nil {
            return DetailError(.duplicateSubscription, "the stream already holds a subscription '\(id)'")
        }
        if maxSubscriptions > 0, client.subscriptions.count >= maxSubscriptions {
            return DetailError(
                .tooManySubscriptions,
                "the stream already holds \(client.subscriptions.count) subscriptions, the most allowed")
        }
        state.clients[clientID]!.subscriptions[id] = ClientSubscription(epoch: subscription.epoch, request: request)
        let kind: PendingKind
        if resume, let from = client.resumeFrom, request.limit == nil {
            kind = .resume(from: from)
        } else {
            kind = .snapshot(resnapshot: resume)
            if resume { self.metrics.resnapshots.increment() }
        }
        if case .snapshot(let resnapshot) = kind, let distinct = state.distinct[SubscriptionKey(request)],
            let live = distinct.live
        {
            // A limited subscription the hub maintains: its rows at the processed seq are at hand.
            let rows = live.rows.map { VersionedRow(row: $0, version: distinct.versions[$0.id] ?? 0) }
            let wire = WireSubscription(id: id, epoch: subscription.epoch)
            let snapshot = QueuedSnapshot(
                subscriptionID: id, epoch: wire.epoch, seq: state.processedSeq, rows: rows, resnapshot: resnapshot)
            if let refusal = self.refusal(of: snapshot, client.outbox) {
                state.clients[clientID]!.subscriptions[id] = nil
                return refusal
            }
            self.activate(clientID, id, request, &state)
            client.outbox.enqueue(snapshot)
            self.enqueue(clientID, state.processedSeq, [.snapshotReady(wire, seq: snapshot.seq)], &state)
            return nil
        }
        self.addPending(clientID, id, request, kind, grouped: resume, &state)
        return nil
    }

    /// Changes a subscription's request; the previous request stays in force until the replacement is released.
    ///
    /// - Throws: ``DetailError`` `UNKNOWN_SUBSCRIPTION`.
    func replace(_ clientID: Int, id: String, request: BoundFetchRequest) throws(DetailError) {
        let result: Result<Void, DetailError> = self.state.withLock { state in
            guard state.clients[clientID] != nil else { return .success(()) }
            return self.replace(clientID, id, request, together: false, &state)
        }
        try result.get()
    }

    /// Changes several subscriptions' requests at once — a token refresh re-binding the rules — so that those the
    /// client shows are answered together, in one batch; ids the stream no longer holds are skipped.
    func replace(_ clientID: Int, _ replacements: [(id: String, request: BoundFetchRequest)]) {
        self.state.withLock { state in
            guard state.clients[clientID] != nil else { return }
            for (id, request) in replacements { _ = self.replace(clientID, id, request, together: true, &state) }
        }
    }

    private func replace(
        _ clientID: Int, _ id: String, _ request: BoundFetchRequest, together: Bool, _ state: inout State
    ) -> Result<Void, DetailError> {
        guard let subscription = state.clients[clientID]!.subscriptions[id] else {
            return .failure(DetailError(.unknownSubscription, "the stream holds no subscription '\(id)'"))
        }
        // A subscription still being answered as part of a group stays in it under its new request.
        var grouped = false
        if let pending = subscription.pending {
            grouped = state.clients[clientID]!.group.remove(pending) != nil
            state.pendings[pending] = nil
        }
        state.clients[clientID]!.subscriptions[id]!.pending = nil
        state.clients[clientID]!.subscriptions[id]!.request = request
        state.clients[clientID]!.subscriptions[id]!.replaceUnanswered = true
        if let old = subscription.activeRequest {
            self.addPending(clientID, id, request, .replace(old: old), grouped: grouped || together, &state)
        } else {
            // Its first snapshot was not sent yet: the snapshot of the new request answers both.
            self.addPending(clientID, id, request, .snapshot(resnapshot: false), grouped: grouped, &state)
        }
        return .success(())
    }

    /// Removes a subscription.
    ///
    /// - Throws: ``DetailError`` `UNKNOWN_SUBSCRIPTION`.
    func unsubscribe(_ clientID: Int, id: String) throws(DetailError) {
        let result: Result<Void, DetailError> = self.state.withLock { state in
            guard state.clients[clientID] != nil else { return .success(()) }
            guard let subscription = state.clients[clientID]!.subscriptions.removeValue(forKey: id) else {
                return .failure(DetailError(.unknownSubscription, "the stream holds no subscription '\(id)'"))
            }
            if let pending = subscription.pending { self.dropPending(pending, &state) }
            if let key = subscription.active { self.removeHolder(key, clientID, id, &state) }
            return .success(())
        }
        try result.get()
    }

    // MARK: - Reading a pending registration's base

    /// Reads a pending registration's base from the store (outside the lock) and hands it to the hub.
    func read(_ pendingID: Int) async {
        guard let pending = self.state.withLock({ $0.pendings[pendingID] }) else { return }
        let request = pending.request
        do {
            // nil: the pending was dropped while its snapshot streamed (nothing more to do).
            let base: Base?
            switch pending.kind {
            case .snapshot(let resnapshot):
                base = try await self.snapshotBase(pendingID, pending, resnapshot: resnapshot)
            case .resume(let from):
                if let missed = try await self.missedChanges(pending, from: from) {
                    base = .missed(missed.changes, seq: missed.seq)
                } else {
                    self.metrics.resnapshots.increment()
                    base = try await self.snapshotBase(pendingID, pending, resnapshot: true)
                }
            case .replace(let old):
                let (oldRows, oldSeq, oldComplete) = try await self.matchingRows(old)
                let (newRows, newSeq, newComplete) = try await self.matchingRows(request)
                base = .replace(
                    old: oldRows, oldSeq: oldSeq, oldComplete: oldComplete, new: newRows, newSeq: newSeq,
                    newComplete: newComplete)
            }
            guard let base else { return }
            self.state.withLock { state in
                guard state.pendings[pendingID] != nil else { return }
                state.pendings[pendingID]!.base = base
                if base.seq <= state.processedSeq { self.release(pendingID, &state) }
            }
        } catch {
            // The stream ended meanwhile (its session's task is cancelled): nothing to answer, nothing to report.
            if Task.isCancelled { return }
            self.logger.info(
                "cannot read a subscription's base: \(error)",
                metadata: ["meridian.subscription.id": "\(pending.subscriptionID)"])
            // The error goes out before the group's batch (if this ends the group), so that the client has it first.
            self.state.withLock { state in
                guard state.pendings[pendingID] != nil,
                    state.clients[pending.clientID]?.subscriptions[pending.subscriptionID]?.pending == pendingID
                else { return }
                let detail =
                    (error as? DetailError)?.detail
                    ?? RequestDecoding.readFailure(error, "cannot read the subscription's rows")
                if detail.code == .unavailable, let outbox = state.clients[pending.clientID]?.outbox {
                    // The disk failed (full, I/O error), not the request: the stream ends UNAVAILABLE, and the
                    // client reconnects and resumes every subscription, as after a server restart, instead of
                    // losing this one for good (found by meridian-check at 200 faults a minute).
                    outbox.fail(with: RPCError(detail))
                    return
                }
                self.endSubscription(pending.clientID, pending.subscriptionID, with: detail, &state)
                self.dropPending(pendingID, &state)
            }
        }
    }

    /// The log's changes after `from` for a resumed subscription, or `nil` when a snapshot is cheaper: past
    /// `--max-resume-changes` missed changes (of every entity: every change has its own seq, so the seqs say how many
    /// without reading the log), or when the log no longer reaches back to `from`.
    ///
    /// The log is read once per resuming client, not once per subscription: the first read takes the changes of
    /// every entity the client's resumed subscriptions read, and the others of its group use them (a client killed
    /// every few seconds that resumed five subscriptions read the same changes five times, and fell behind for good;
    /// found by meridian-check at 200 faults a minute). The read is dropped when the group is answered.
    private func missedChanges(_ pending: Pending, from: Int64) async throws -> (changes: [Change], seq: Int64)? {
        let entity = pending.request.entity.name
        let plan = self.state.withLock { state -> (cached: ResumeRead?, entities: Set<String>) in
            guard let client = state.clients[pending.clientID] else { return (nil, [entity]) }
            if let read = client.resumeRead, read.from == from, read.entities.contains(entity) { return (read, []) }
            var entities: Set<String> = [entity]
            for pendingID in client.group {
                if let other = state.pendings[pendingID], case .resume = other.kind, other.base == nil {
                    entities.insert(other.request.entity.name)
                }
            }
            return (nil, entities)
        }
        let read: ResumeRead
        if let cached = plan.cached {
            read = cached
        } else {
            let limit = self.configuration.maxResumeChanges
            var changes: [Change]?
            var seq: Int64 = 0
            if try await self.store.latestSeq() - from <= Int64(limit) {
                self.metrics.resumeReads.increment()
                let result = try await self.store.changes(after: from, entities: plan.entities, limit: limit + 1)
                if case .changes(let batch) = result, batch.changes.count <= limit {
                    changes = batch.changes
                    seq = batch.throughSeq
                }
            }
            read = ResumeRead(from: from, entities: plan.entities, changes: changes, seq: seq)
            self.state.withLock { state in
                guard let client = state.clients[pending.clientID], !client.group.isEmpty else { return }
                state.clients[pending.clientID]!.resumeRead = read
            }
        }
        return read.changes.map { ($0, read.seq) }
    }

    /// A pending snapshot's base: for an unlimited request on a file store, its rows streamed to the client as it
    /// takes them (``streamRows(_:_:resnapshot:)``); else every matching row, read whole.
    private func snapshotBase(_ pendingID: Int, _ pending: Pending, resnapshot: Bool) async throws -> Base? {
        guard pending.request.limit != nil || self.store.path == nil else {
            return try await self.streamRows(pendingID, pending, resnapshot: resnapshot).map { .streamed(seq: $0) }
        }
        let (rows, seq, complete) = try await self.matchingRows(pending.request)
        return .rows(rows, seq: seq, resnapshot: resnapshot, complete: complete)
    }

    /// The pieces of a snapshot being streamed: touched only by the store's reader thread that runs the read.
    private final class SnapshotPieces: @unchecked Sendable {
        var chunks: StreamedChunks
        var dropped = false
        init(_ chunks: StreamedChunks) { self.chunks = chunks }
    }

    /// Streams the rows of a pending snapshot from the store into the client's outbox, one chunk at a time, as the
    /// client takes them: the read waits while the snapshot chunks queued for the client pass a small budget (four
    /// chunks), so a snapshot of any size holds a few chunks of server memory, and a client that reads nothing holds
    /// no more. Each chunk is written whole as its rows are read (``StreamedChunks``). The rows are at the read's seq
    /// S0; the release sends the changes buffered after S0 with the batch part that makes the snapshot visible (the
    /// client applies the snapshot, then that delta).
    ///
    /// A client that takes none of its snapshot for `--query-timeout` loses the subscription (`LIMIT_EXCEEDED`): the
    /// read holds a store reader and an open read transaction (which keeps SQLite from checkpointing past it).
    ///
    /// - Returns: S0, or `nil` when the pending was dropped meanwhile (its subscription removed, replaced or
    ///   re-snapshotted): the read stops there.
    private func streamRows(_ pendingID: Int, _ pending: Pending, resnapshot: Bool) async throws -> Int64? {
        let target = self.state.withLock { state -> (ClientOutbox, Int, UInt32)? in
            guard let client = state.clients[pending.clientID],
                let subscription = client.subscriptions[pending.subscriptionID], subscription.pending == pendingID
            else { return nil }
            return (client.outbox, client.chunkBytes, subscription.epoch)
        }
        guard let (outbox, chunkBytes, epoch) = target else { return nil }
        let request = pending.request
        let id = pending.subscriptionID
        let budget = min(outbox.limitBytes, 4 * max(chunkBytes, 64 << 10))
        let stall = self.store.readTimeout ?? .seconds(15)
        let pieces = SnapshotPieces(
            StreamedChunks(subscriptionID: id, epoch: epoch, resnapshot: resnapshot, maxBytes: chunkBytes))
        /// Queues a chunk's message, once the client has room for it; `false` stops the read.
        @Sendable func queue(_ seq: Int64, _ message: [UInt8]) throws -> Bool {
            let snapshot = QueuedSnapshot(
                subscriptionID: id, epoch: epoch, seq: seq, encoded: message, resnapshot: resnapshot)
            switch outbox.waitForSnapshotRoom(snapshot.bytes, budget: budget, timeout: stall) {
            case .room: break
            case .ended:
                pieces.dropped = true
                return false
            case .stalled:
                throw DetailError(
                    .limitExceeded,
                    "the client took none of the snapshot of '\(id)' for \(stall.spoken) (--query-timeout); the "
                        + "subscription ends")
            }
            let queued = self.state.withLock { state -> Bool in
                guard state.pendings[pendingID] != nil,
                    state.clients[pending.clientID]?.subscriptions[id]?.pending == pendingID
                else { return false }
                outbox.enqueue(snapshot)
                return true
            }
            if !queued { pieces.dropped = true }
            return queued
        }
        let seq = try await self.store.streamSnapshotColumns(
            entity: request.entity.name, where: request.predicate, orderBy: request.order
        ) { seq, row in
            guard let row else { return try queue(seq, pieces.chunks.finish(seq: seq)) }
            guard let full = pieces.chunks.append(row, seq: seq) else { return true }
            // The read's time limit counts SQLite's work, not the wait for the client's room.
            return try row.pausingTimeLimit { try queue(seq, full) }
        }
        return pieces.dropped ? nil : seq
    }

    /// The rows matching `request` in order — every one, or for a limited request the first
    /// ``BoundFetchRequest/heldRows`` — with the seq they are consistent with and whether they are every one.
    private func matchingRows(_ request: BoundFetchRequest) async throws -> ([VersionedRow], Int64, complete: Bool) {
        let held = request.heldRows
        let snapshot = try await self.store.snapshot(
            entity: request.entity.name, where: request.predicate, orderBy: request.order, limit: held)
        var rows: [VersionedRow] = []
        rows.reserveCapacity(snapshot.rows.count)
        for (row, version) in zip(snapshot.rows, snapshot.versions) {
            rows.append(VersionedRow(row: row, version: version))
        }
        return (rows, snapshot.seq, held.map { rows.count < $0 } ?? true)
    }

    // MARK: - Under the lock

    /// Registers a pending read of a subscription's base; `grouped` when the client already shows the subscription
    /// (its batches are then held until the group is answered).
    func addPending(
        _ clientID: Int, _ id: String, _ request: BoundFetchRequest, _ kind: PendingKind, grouped: Bool,
        _ state: inout State
    ) {
        let pendingID = state.nextID
        state.nextID += 1
        state.pendings[pendingID] = Pending(
            clientID: clientID, subscriptionID: id, request: request, kind: kind, registeredAt: state.processedSeq)
        state.clients[clientID]!.subscriptions[id]!.pending = pendingID
        if grouped {
            if state.clients[clientID]!.group.isEmpty { state.clients[clientID]!.outbox.beginHold() }
            state.clients[clientID]!.group.insert(pendingID)
        }
        state.clients[clientID]!.jobs.yield(pendingID)
    }

    /// Forgets a pending registration; the last one of a client's group sends the client its held batch.
    func dropPending(_ pendingID: Int, _ state: inout State) {
        guard let pending = state.pendings.removeValue(forKey: pendingID) else { return }
        guard state.clients[pending.clientID]?.group.remove(pendingID) != nil else { return }
        if state.clients[pending.clientID]!.group.isEmpty {
            state.clients[pending.clientID]!.resumeRead = nil
            state.clients[pending.clientID]!.outbox.endHold()
        }
    }

    /// Sends a pending registration's snapshot, missed deltas or replacement at the processed seq, and makes the
    /// subscription active from there on.
    func release(_ pendingID: Int, _ state: inout State) {
        guard let pending = state.pendings[pendingID], let base = pending.base else { return }
        guard let client = state.clients[pending.clientID],
            let subscription = client.subscriptions[pending.subscriptionID], subscription.pending == pendingID
        else {
            self.dropPending(pendingID, &state)
            return
        }
        func changes(after seq: Int64, _ entity: String) -> [NetChange] {
            NetChange.of(pending.buffer.lazy.filter { $0.seq > seq && $0.entity == entity })
        }
        // A limited request's first rows, advanced to the processed seq: too few left (deletes since the read) to
        // fill the window while the store has more, and the rows are read again.
        var advanced: (rows: [VersionedRow], complete: Bool)?
        var advancedOld: (rows: [VersionedRow], complete: Bool)?
        switch base {
        case .rows(let rows, let baseSeq, _, let complete):
            advanced = pending.request.advancePrefix(
                rows, complete: complete, with: changes(after: baseSeq, pending.request.entity.name))
        case .replace(let oldRows, let oldSeq, let oldComplete, let newRows, let newSeq, let newComplete):
            guard case .replace(let old) = pending.kind else { return }
            advancedOld = old.advancePrefix(
                oldRows, complete: oldComplete, with: changes(after: oldSeq, old.entity.name))
            advanced = pending.request.advancePrefix(
                newRows, complete: newComplete, with: changes(after: newSeq, pending.request.entity.name))
            if advancedOld == nil { advanced = nil }
        case .streamed, .missed:
            advanced = ([], true)
        }
        guard let advanced else {
            state.pendings[pendingID]!.base = nil
            client.jobs.yield(pendingID)
            return
        }
        // Answered below; the group (if it was in one) ends after the answer is queued, so that it is in the batch.
        defer { self.dropPending(pendingID, &state) }
        let seq = state.processedSeq
        let request = pending.request
        let id = pending.subscriptionID
        let wire = WireSubscription(id: id, epoch: subscription.epoch)
        let answersReplace = subscription.replaceUnanswered
        state.clients[pending.clientID]!.subscriptions[id]!.pending = nil
        state.clients[pending.clientID]!.subscriptions[id]!.replaceUnanswered = false
        switch base {
        case .rows(_, _, let resnapshot, _):
            let snapshot = QueuedSnapshot(
                subscriptionID: id, epoch: wire.epoch, seq: seq, rows: request.window(advanced.rows),
                resnapshot: resnapshot)
            if let refusal = self.refusal(of: snapshot, client.outbox) {
                self.endSubscription(pending.clientID, id, with: refusal.detail, &state)
                return
            }
            self.activate(pending.clientID, id, request, &state, kept: advanced)
            client.outbox.enqueue(snapshot)
            self.enqueue(
                pending.clientID, seq, [.snapshotReady(wire, replaced: answersReplace, seq: snapshot.seq)], &state)

        case .streamed(let baseSeq):
            // The rows are queued already, at baseSeq: the part that shows them brings them to `seq`.
            let delta =
                request.unlimitedDelta(changes(after: baseSeq, request.entity.name))
                ?? SharedDelta(entered: [], left: [], updated: [])
            self.activate(pending.clientID, id, request, &state)
            self.enqueue(
                pending.clientID, seq,
                [
                    BatchPart(
                        subscription: wire, delta: delta, replaced: answersReplace, snapshot: true,
                        snapshotSeq: baseSeq, derived: request.entity.derived)
                ], &state)

        case .missed(let missed, let baseSeq):
            // The log was read once for the client's whole group, so it may hold other entities' changes.
            let entity = request.entity.name
            let changes =
                missed.filter { $0.entity == entity }
                + pending.buffer.filter {
                    $0.seq > baseSeq && $0.entity == entity
                }
            let delta =
                request.unlimitedDelta(NetChange.of(changes)) ?? SharedDelta(entered: [], left: [], updated: [])
            self.activate(pending.clientID, id, request, &state)
            self.enqueue(
                pending.clientID, seq,
                [BatchPart(subscription: wire, delta: delta, replaced: false, derived: request.entity.derived)], &state)

        case .replace:
            guard case .replace(let old) = pending.kind, let advancedOld else { return }
            let before = old.window(advancedOld.rows)
            let after = request.window(advanced.rows)
            if let key = state.clients[pending.clientID]!.subscriptions[id]!.active {
                self.removeHolder(key, pending.clientID, id, &state)
            }
            self.activate(pending.clientID, id, request, &state, kept: advanced)
            let beforeIDs = Set(before.map(\.row.id))
            let afterIDs = Set(after.map(\.row.id))
            let left = before.filter { !afterIDs.contains($0.row.id) }.map { (id: $0.row.id, before: Optional($0.row)) }
            let entered = after.filter { !beforeIDs.contains($0.row.id) }
            // Only the ids that left and the rows that entered: rows in both are identical at `seq` (the client
            // got the old request's deltas up to `seq`), so they need nothing.
            let delta = SharedDelta(entered: entered, left: left, updated: [])
            self.enqueue(
                pending.clientID, seq,
                [BatchPart(subscription: wire, delta: delta, replaced: true, derived: request.entity.derived)], &state)
        }
    }

    /// Why a snapshot cannot wait for the client (`--client-queue-bytes`), if it cannot.
    func refusal(of snapshot: QueuedSnapshot, _ outbox: ClientOutbox) -> DetailError? {
        guard !outbox.canTake(snapshotBytes: snapshot.bytes) else { return nil }
        return DetailError(
            .limitExceeded,
            "the snapshot of '\(snapshot.subscriptionID)' takes about \(snapshot.bytes) bytes; at most "
                + "\(outbox.limitBytes) bytes of snapshots may wait for one client (--client-queue-bytes)")
    }

    /// Ends a client's subscription with an error (sent before anything queued after it), as if never subscribed.
    func endSubscription(_ clientID: Int, _ id: String, with detail: Meridian_V1_ErrorDetail, _ state: inout State) {
        guard let subscription = state.clients[clientID]?.subscriptions[id] else { return }
        state.clients[clientID]!.outbox.enqueue(
            SyncSession.subscriptionError(id, epoch: subscription.epoch, detail, ended: true))
        if let key = subscription.active { self.removeHolder(key, clientID, id, &state) }
        state.clients[clientID]!.subscriptions[id] = nil
    }

    func enqueue(_ clientID: Int, _ seq: Int64, _ parts: [BatchPart], _ state: inout State) {
        guard let client = state.clients[clientID] else { return }
        switch client.outbox.enqueueBatch(seq: seq, parts: parts) {
        case .queued(let coalesced): if coalesced > 0 { self.metrics.coalesced.increment(by: Int64(coalesced)) }
        case .overflowed:
            self.metrics.overflows.increment()
            self.resnapshotAll(clientID, &state)
        case .closed: break
        }
    }

    /// Makes a client subscription receive its distinct subscription's deltas from the next batch on; a limited
    /// distinct subscription is created from `kept` (its first matching rows at the processed seq, and whether they
    /// are every one).
    func activate(
        _ clientID: Int, _ id: String, _ request: BoundFetchRequest, _ state: inout State,
        kept: (rows: [VersionedRow], complete: Bool)? = nil
    ) {
        let key = SubscriptionKey(request)
        if state.distinct[key] == nil {
            var distinct = Distinct(request: request)
            if request.limit != nil {
                var live = try? LiveResults(predicate: request.predicate, order: request.order, limit: request.limit)
                live?.reset(rows: (kept?.rows ?? []).map(\.row))
                distinct.live = live
                distinct.complete = kept?.complete ?? true
                for row in kept?.rows ?? [] { distinct.versions[row.row.id] = row.version }
            }
            state.distinct[key] = distinct
            self.metrics.distinctSubscriptions.increment()
        }
        state.distinct[key]!.holders[clientID, default: [:]][id] = state.clients[clientID]!.subscriptions[id]!.epoch
        state.clients[clientID]!.subscriptions[id]!.active = key
        state.clients[clientID]!.subscriptions[id]!.activeRequest = request
    }

    func removeHolder(_ key: SubscriptionKey, _ clientID: Int, _ id: String, _ state: inout State) {
        guard state.distinct[key] != nil else { return }
        state.distinct[key]!.holders[clientID]?[id] = nil
        if state.distinct[key]!.holders[clientID]?.isEmpty == true { state.distinct[key]!.holders[clientID] = nil }
        if state.distinct[key]!.holders.isEmpty {
            state.distinct[key] = nil
            self.metrics.distinctSubscriptions.decrement()
        }
    }

    /// Drops what the client was getting and re-snapshots every subscription it holds (flagged `resnapshot`), as one
    /// group: the client gets them all in one batch.
    func resnapshotAll(_ clientID: Int, _ state: inout State) {
        guard let client = state.clients[clientID] else { return }
        let droppedAnswers = client.outbox.dropAndHold()
        for pending in client.group { state.pendings[pending] = nil }
        state.clients[clientID]!.group = []
        for (id, subscription) in client.subscriptions {
            if let pending = subscription.pending { state.pendings[pending] = nil }
            if let key = subscription.active { self.removeHolder(key, clientID, id, &state) }
            // A Replace whose answer was queued and dropped is unanswered again: the client still waits for it.
            let answerDropped = droppedAnswers.contains(WireSubscription(id: id, epoch: subscription.epoch))
            state.clients[clientID]!.subscriptions[id] = ClientSubscription(
                epoch: subscription.epoch, request: subscription.request,
                replaceUnanswered: subscription.replaceUnanswered || answerDropped)
            self.metrics.resnapshots.increment()
            self.addPending(clientID, id, subscription.request, .snapshot(resnapshot: true), grouped: true, &state)
        }
        if state.clients[clientID]!.group.isEmpty { client.outbox.endHold() }
    }
}
