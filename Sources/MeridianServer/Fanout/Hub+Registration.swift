// MARK: - Hub: clients, subscriptions and pending registrations
//
// See Hub.swift for how a pending registration keeps a new subscription's snapshot and its first delta consistent.

internal import CoreMetrics
internal import Logging
internal import MeridianCore
internal import MeridianProto
internal import MeridianStore
internal import Synchronization

extension Hub {
    // MARK: - Clients

    /// Registers a `Sync` stream; `resumeFrom` is set when its Welcome says `resumed`.
    ///
    /// - Returns: The client's id and the seq its Welcome carries, or `nil` when the server is shutting down.
    func connect(
        outbox: ClientOutbox, jobs: AsyncStream<Int>.Continuation, name: String, resumeFrom: Int64?
    ) -> (id: Int, seq: Int64)? {
        let result = self.state.withLock { state -> (id: Int, seq: Int64)? in
            guard !state.shuttingDown else { return nil }
            let id = state.nextID
            state.nextID += 1
            state.clients[id] = Client(outbox: outbox, jobs: jobs, name: name, resumeFrom: resumeFrom)
            return (id, state.processedSeq)
        }
        if result != nil { self.metrics.subscribers.increment() }
        return result
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
        if removed { self.metrics.subscribers.decrement() }
    }

    // MARK: - Requests from the client

    /// Adds a subscription: registers it pending and queues its read, or answers at once from a limited
    /// subscription the hub already maintains.
    ///
    /// - Throws: ``DetailError`` `DUPLICATE_SUBSCRIPTION` or `TOO_MANY_SUBSCRIPTIONS`.
    func subscribe(_ clientID: Int, id: String, request: BoundFetchRequest, resume: Bool) throws(DetailError) {
        let maxSubscriptions = self.configuration.maxSubscriptionsPerStream
        let result: Result<Void, DetailError> = self.state.withLock { state in
            guard let client = state.clients[clientID] else { return .success(()) }
            if client.subscriptions[id] != nil {
                return .failure(
                    DetailError(.duplicateSubscription, "the stream already holds a subscription '\(id)'"))
            }
            if maxSubscriptions > 0, client.subscriptions.count >= maxSubscriptions {
                return .failure(
                    DetailError(
                        .tooManySubscriptions,
                        "the stream already holds \(client.subscriptions.count) subscriptions, the most allowed"))
            }
            state.clients[clientID]!.subscriptions[id] = ClientSubscription(request: request)
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
                self.activate(clientID, id, request, &state)
                client.outbox.enqueue(
                    QueuedSnapshot(subscriptionID: id, seq: state.processedSeq, rows: rows, resnapshot: resnapshot))
                return .success(())
            }
            self.addPending(clientID, id, request, kind, &state)
            return .success(())
        }
        try result.get()
    }

    /// Changes a subscription's request; the previous request stays in force until the replacement is released.
    ///
    /// - Throws: ``DetailError`` `UNKNOWN_SUBSCRIPTION`.
    func replace(_ clientID: Int, id: String, request: BoundFetchRequest) throws(DetailError) {
        let result: Result<Void, DetailError> = self.state.withLock { state in
            guard let client = state.clients[clientID] else { return .success(()) }
            guard let subscription = client.subscriptions[id] else {
                return .failure(DetailError(.unknownSubscription, "the stream holds no subscription '\(id)'"))
            }
            if let pending = subscription.pending { state.pendings[pending] = nil }
            state.clients[clientID]!.subscriptions[id]!.pending = nil
            state.clients[clientID]!.subscriptions[id]!.request = request
            if let old = subscription.activeRequest {
                self.addPending(clientID, id, request, .replace(old: old), &state)
            } else {
                // Its first snapshot was not sent yet: the snapshot of the new request answers both.
                self.addPending(clientID, id, request, .snapshot(resnapshot: false), &state)
            }
            return .success(())
        }
        try result.get()
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
            if let pending = subscription.pending { state.pendings[pending] = nil }
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
            let base: Base
            switch pending.kind {
            case .snapshot(let resnapshot):
                let (rows, seq) = try await self.matchingRows(request)
                base = .rows(rows, seq: seq, resnapshot: resnapshot)
            case .resume(let from):
                switch try await self.store.changes(after: from, entities: [request.entity.name]) {
                case .changes(let batch):
                    base = .missed(batch.changes, seq: batch.throughSeq)
                case .tooOld:
                    self.metrics.resnapshots.increment()
                    let (rows, seq) = try await self.matchingRows(request)
                    base = .rows(rows, seq: seq, resnapshot: true)
                }
            case .replace(let old):
                let (oldRows, oldSeq) = try await self.matchingRows(old)
                let (newRows, newSeq) = try await self.matchingRows(request)
                base = .replace(old: oldRows, oldSeq: oldSeq, new: newRows, newSeq: newSeq)
            }
            self.state.withLock { state in
                guard state.pendings[pendingID] != nil else { return }
                state.pendings[pendingID]!.base = base
                if base.seq <= state.processedSeq { self.release(pendingID, &state) }
            }
        } catch {
            self.logger.info(
                "cannot read a subscription's base: \(error)",
                metadata: ["meridian.subscription.id": "\(pending.subscriptionID)"])
            let outbox = self.state.withLock { state -> ClientOutbox? in
                guard state.pendings.removeValue(forKey: pendingID) != nil else { return nil }
                state.clients[pending.clientID]?.subscriptions[pending.subscriptionID] = nil
                return state.clients[pending.clientID]?.outbox
            }
            var response = Meridian_V1_SyncResponse()
            var failure = Meridian_V1_SubscriptionError()
            failure.subscriptionID = pending.subscriptionID
            failure.error = Meridian_V1_ErrorDetail(.internal, "cannot read the subscription's rows: \(error)")
            response.subscriptionError = failure
            outbox?.enqueue(response)
        }
    }

    /// Every row matching `request` (its limit ignored), in order, with the seq it is consistent with.
    private func matchingRows(_ request: BoundFetchRequest) async throws -> ([VersionedRow], Int64) {
        let snapshot = try await self.store.snapshot(
            entity: request.entity.name, where: request.whereSQL, orderBy: request.orderBySQL, limit: nil)
        var rows: [VersionedRow] = []
        rows.reserveCapacity(snapshot.rows.count)
        for (row, version) in zip(snapshot.rows, snapshot.versions) {
            rows.append(VersionedRow(row: row, version: version))
        }
        return (rows, snapshot.seq)
    }

    // MARK: - Under the lock

    func addPending(
        _ clientID: Int, _ id: String, _ request: BoundFetchRequest, _ kind: PendingKind, _ state: inout State
    ) {
        let pendingID = state.nextID
        state.nextID += 1
        state.pendings[pendingID] = Pending(
            clientID: clientID, subscriptionID: id, request: request, kind: kind, registeredAt: state.processedSeq)
        state.clients[clientID]!.subscriptions[id]!.pending = pendingID
        state.clients[clientID]!.jobs.yield(pendingID)
    }

    /// Sends a pending registration's snapshot, missed deltas or replacement at the processed seq, and makes the
    /// subscription active from there on.
    func release(_ pendingID: Int, _ state: inout State) {
        guard let pending = state.pendings.removeValue(forKey: pendingID), let base = pending.base,
            let client = state.clients[pending.clientID],
            client.subscriptions[pending.subscriptionID]?.pending == pendingID
        else { return }
        let seq = state.processedSeq
        let request = pending.request
        let id = pending.subscriptionID
        state.clients[pending.clientID]!.subscriptions[id]!.pending = nil
        func changes(after seq: Int64, _ entity: String) -> [NetChange] {
            NetChange.of(pending.buffer.lazy.filter { $0.seq > seq && $0.entity == entity })
        }
        switch base {
        case .rows(let rows, let baseSeq, let resnapshot):
            let all = request.advance(rows, with: changes(after: baseSeq, request.entity.name))
            self.activate(pending.clientID, id, request, &state, allRows: all)
            client.outbox.enqueue(
                QueuedSnapshot(subscriptionID: id, seq: seq, rows: request.window(all), resnapshot: resnapshot))

        case .missed(let missed, let baseSeq):
            let later = pending.buffer.filter { $0.seq > baseSeq && $0.entity == request.entity.name }
            let delta =
                request.unlimitedDelta(NetChange.of(missed + later)) ?? SharedDelta(entered: [], left: [], updated: [])
            self.activate(pending.clientID, id, request, &state)
            self.enqueue(
                pending.clientID, seq,
                [BatchPart(subscriptionID: id, delta: delta, replaced: false, derived: request.entity.derived)], &state)

        case .replace(let oldRows, let oldSeq, let newRows, let newSeq):
            guard case .replace(let old) = pending.kind else { return }
            let before = old.window(old.advance(oldRows, with: changes(after: oldSeq, old.entity.name)))
            let all = request.advance(newRows, with: changes(after: newSeq, request.entity.name))
            let after = request.window(all)
            if let key = state.clients[pending.clientID]!.subscriptions[id]!.active {
                self.removeHolder(key, pending.clientID, id, &state)
            }
            self.activate(pending.clientID, id, request, &state, allRows: all)
            let beforeIDs = Set(before.map(\.row.id))
            let afterIDs = Set(after.map(\.row.id))
            let left = before.filter { !afterIDs.contains($0.row.id) }.map { (id: $0.row.id, before: Optional($0.row)) }
            let entered = after.filter { !beforeIDs.contains($0.row.id) }
            // Only the ids that left and the rows that entered: rows in both are identical at `seq` (the client
            // got the old request's deltas up to `seq`), so they need nothing.
            let delta = SharedDelta(entered: entered, left: left, updated: [])
            self.enqueue(
                pending.clientID, seq,
                [BatchPart(subscriptionID: id, delta: delta, replaced: true, derived: request.entity.derived)], &state)
        }
    }

    private func enqueue(_ clientID: Int, _ seq: Int64, _ parts: [BatchPart], _ state: inout State) {
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
    /// distinct subscription is created from `allRows` (every matching row at the processed seq).
    func activate(
        _ clientID: Int, _ id: String, _ request: BoundFetchRequest, _ state: inout State,
        allRows: [VersionedRow]? = nil
    ) {
        let key = SubscriptionKey(request)
        if state.distinct[key] == nil {
            var distinct = Distinct(request: request)
            if request.limit != nil {
                var live = try? LiveResults(predicate: request.predicate, order: request.order, limit: request.limit)
                live?.reset(rows: (allRows ?? []).map(\.row))
                distinct.live = live
                for row in allRows ?? [] { distinct.versions[row.row.id] = row.version }
            }
            state.distinct[key] = distinct
            self.metrics.distinctSubscriptions.increment()
        }
        state.distinct[key]!.holders[clientID, default: []].insert(id)
        state.clients[clientID]!.subscriptions[id]!.active = key
        state.clients[clientID]!.subscriptions[id]!.activeRequest = request
    }

    func removeHolder(_ key: SubscriptionKey, _ clientID: Int, _ id: String, _ state: inout State) {
        guard state.distinct[key] != nil else { return }
        state.distinct[key]!.holders[clientID]?.remove(id)
        if state.distinct[key]!.holders[clientID]?.isEmpty == true { state.distinct[key]!.holders[clientID] = nil }
        if state.distinct[key]!.holders.isEmpty {
            state.distinct[key] = nil
            self.metrics.distinctSubscriptions.decrement()
        }
    }

    /// Drops what the client was getting and re-snapshots every subscription it holds (flagged `resnapshot`).
    func resnapshotAll(_ clientID: Int, _ state: inout State) {
        guard let client = state.clients[clientID] else { return }
        for (id, subscription) in client.subscriptions {
            if let pending = subscription.pending { state.pendings[pending] = nil }
            if let key = subscription.active { self.removeHolder(key, clientID, id, &state) }
            state.clients[clientID]!.subscriptions[id] = ClientSubscription(request: subscription.request)
            self.metrics.resnapshots.increment()
            self.addPending(clientID, id, subscription.request, .snapshot(resnapshot: true), &state)
        }
    }
}
