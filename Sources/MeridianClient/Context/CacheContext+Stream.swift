// MARK: - The Sync stream
//
// The context is fed decoded `SyncResponse`s in stream order (by the connection, or directly by tests) and answers
// through `outbound`: Hello and Subscribe when a stream opens, Ack after each applied seq, Replace and Unsubscribe as
// controllers ask. Every handler ends with at most one commit, so controllers only ever see whole seqs.

internal import Logging
internal import MeridianCore
package import MeridianProto

extension CacheContext {
    // MARK: - Opening and closing

    /// A stream opened: sends `Hello` (resuming from the applied seq when the cache holds data) and re-adds every
    /// subscription, with `resume` set for those whose rows are complete.
    ///
    /// - Parameters:
    ///   - outbound: Where the stream's outgoing messages go.
    ///   - clientName: A name for the server's logs.
    package func connectionOpened(
        outbound: AsyncStream<Meridian_V1_SyncRequest>.Continuation,
        clientName: String = "MeridianClient"
    ) {
        self.outbound = outbound
        self.ackedSeq = 0
        self.wireIDs = [:]
        self.usedWireIDs = []
        var hello = Meridian_V1_Hello()
        hello.clientName = clientName
        let resumable = self.subscriptions.values.contains { $0.hasData }
        if resumable || self.appliedSeq > 0 { hello.resumeFromSeq = self.appliedSeq }
        if let schema { hello.schemaFingerprint = schema.fingerprint }
        self.send(.hello(hello))
        var readded: Set<String> = []
        for id in self.subscriptions.keys.sorted() {
            self.sendSubscribe(id, resume: self.subscriptions[id]!.hasData)
            if case .failed = self.subscriptions[id]!.phase {} else { readded.insert(id) }
        }
        // Each subscription catches up on its own (a batch of what it missed, or a snapshot — also for one replaced
        // offline — at its own seq): hold them until all have, so that no controller shows a mix of old and new.
        self.beginCatchUp(waitingFor: readded)
    }

    /// The stream ended: partial snapshots are dropped, Replaces in flight are adopted as offline replaces (their
    /// subscriptions are subscribed afresh next time), and transactions in flight go back to the queue.
    package func connectionClosed() {
        self.outbound?.finish()
        self.outbound = nil
        // Held messages were never applied: the cache is still at the applied seq, which the next Hello resumes.
        self.catchUp = nil
        var work = CommitWork()
        self.wireIDs = [:]
        self.usedWireIDs = []
        for id in self.subscriptions.keys {
            self.subscriptions[id]!.snapshot = nil
            self.subscriptions[id]!.wireID = nil
            if case .failed = self.subscriptions[id]!.phase {} else { self.subscriptions[id]!.phase = .idle }
            if let replace = self.subscriptions[id]!.pendingReplace {
                let entity = self.subscriptions[id]!.entity
                self.subscriptions[id]!.request = replace.request
                self.subscriptions[id]!.bound = replace.bound
                self.subscriptions[id]!.pendingReplace = nil
                self.subscriptions[id]!.hasData = false
                let waiters = self.subscriptions[id]!.replaceWaiters
                self.subscriptions[id]!.replaceWaiters = []
                self.dropMembers(of: id, where: { !replace.bound.matches($0) }, entity: entity, work: &work)
                self.recordSubscription(id)
                for waiter in waiters { waiter.resume() }
            }
        }
        for i in self.transactions.indices where self.transactions[i].phase == .sending {
            self.transactions[i].phase = .queued
        }
        self.commit(work, cause: .replaced)
        self.flush()
    }

    /// Subscribes on the open stream.
    func sendSubscribe(_ id: String, resume: Bool) {
        guard var subscription = self.subscriptions[id] else { return }
        if case .failed = subscription.phase { return }
        if let old = subscription.wireID { self.wireIDs[old] = nil }
        var wireID = id
        while self.usedWireIDs.contains(wireID) {
            wireID = "\(id)~\(self.nextWireGeneration)"
            self.nextWireGeneration += 1
        }
        self.usedWireIDs.insert(wireID)
        self.wireIDs[wireID] = id
        subscription.wireID = wireID
        var subscribe = Meridian_V1_Subscribe()
        subscribe.subscriptionID = wireID
        subscribe.fetch = Meridian_V1_FetchRequest(subscription.request)
        subscribe.resume = resume
        subscription.phase = resume ? .live : .awaitingSnapshot
        subscription.snapshot = nil
        self.subscriptions[id] = subscription
        self.send(.subscribe(subscribe))
    }

    /// Unsubscribes on the open stream; whatever the server still sends for it is ignored.
    func sendUnsubscribe(_ subscription: SubscriptionState) {
        guard let wireID = subscription.wireID else { return }
        self.wireIDs[wireID] = nil
        if let current = self.subscriptions[subscription.id], current.wireID == wireID {
            self.subscriptions[subscription.id]!.wireID = nil
        }
        var unsubscribe = Meridian_V1_Unsubscribe()
        unsubscribe.subscriptionID = wireID
        self.send(.unsubscribe(unsubscribe))
    }

    /// Sends one message on the open stream (dropped when there is none: it is re-sent on the next connection).
    func send(_ kind: Meridian_V1_SyncRequest.OneOf_Kind) {
        var request = Meridian_V1_SyncRequest()
        request.kind = kind
        self.outbound?.yield(request)
    }

    /// Acknowledges the applied seq if it moved.
    func acknowledge() {
        guard self.outbound != nil, self.appliedSeq > self.ackedSeq else { return }
        self.ackedSeq = self.appliedSeq
        var ack = Meridian_V1_Ack()
        ack.seq = self.appliedSeq
        self.send(.ack(ack))
    }

    // MARK: - Receiving

    /// Applies one message from the server, in stream order.
    ///
    /// - Throws: ``ClientError`` when the message breaks the protocol badly enough that the stream must be dropped
    ///   (a row that does not decode); the connection then reconnects and resumes.
    package func receive(_ response: Meridian_V1_SyncResponse) throws(ClientError) {
        guard let local = self.localized(response) else { return }
        // Held as received (with wire ids): a subscription subscribed again while they wait no longer owns them.
        if try self.holdForCatchUp(local, received: response) { return }
        try self.apply(local)
    }

    /// The message with wire ids turned into subscription ids, and without what it says about subscriptions no
    /// longer subscribed under those ids (sent before the server read an Unsubscribe); nil when nothing is left.
    func localized(_ response: Meridian_V1_SyncResponse) -> Meridian_V1_SyncResponse? {
        var response = response
        switch response.kind {
        case .snapshotChunk(var chunk):
            guard let id = self.wireIDs[chunk.subscriptionID] else { return self.ignoring(chunk.subscriptionID) }
            if id != chunk.subscriptionID {
                chunk.subscriptionID = id
                response.kind = .snapshotChunk(chunk)
            }
        case .subscriptionError(var failure):
            guard let id = self.wireIDs[failure.subscriptionID] else { return self.ignoring(failure.subscriptionID) }
            if id != failure.subscriptionID {
                failure.subscriptionID = id
                response.kind = .subscriptionError(failure)
            }
        case .batch(var batch):
            let current = batch.deltas.allSatisfy { self.wireIDs[$0.subscriptionID] == $0.subscriptionID }
            guard !current else { break }
            batch.deltas = batch.deltas.compactMap { delta in
                guard let id = self.wireIDs[delta.subscriptionID] else { return nil }
                var delta = delta
                delta.subscriptionID = id
                return delta
            }
            // Kept even with no delta left: its seq still moves the applied seq.
            response.kind = .batch(batch)
        case .welcome, .heartbeat, .goodbye, nil:
            break
        }
        return response
    }

    private func ignoring(_ wireID: String) -> Meridian_V1_SyncResponse? {
        self.logger.debug(
            "ignoring a message for a closed subscription", metadata: ["meridian.subscription.id": "\(wireID)"])
        return nil
    }

    /// Applies one message (held ones included).
    func apply(_ response: Meridian_V1_SyncResponse) throws(ClientError) {
        switch response.kind {
        case .welcome(let welcome):
            self.heartbeatIntervalMilliseconds = welcome.heartbeatIntervalMs
            self.serverFingerprint = welcome.schemaFingerprint
            self.logger.debug(
                "welcome",
                metadata: ["meridian.seq": "\(welcome.seq)", "meridian.resumed": "\(welcome.resumed)"])
        case .snapshotChunk(let chunk):
            try self.receiveSnapshotChunk(chunk)
        case .batch(let batch):
            try self.receiveBatch(batch)
        case .heartbeat(let heartbeat):
            self.advance(to: heartbeat.seq, work: CommitWork())
        case .subscriptionError(let failure):
            self.receiveSubscriptionError(failure)
        case .goodbye(let goodbye):
            self.logger.info("server said goodbye", metadata: ["meridian.reason": "\(goodbye.reason)"])
        case nil:
            self.logger.debug("ignoring a Sync message with no case set")
        }
    }

    private func receiveSnapshotChunk(_ chunk: Meridian_V1_SnapshotChunk) throws(ClientError) {
        let id = chunk.subscriptionID
        guard self.subscriptions[id] != nil else { return }
        // In place throughout: a local copy of the subscription would copy its rows or members on every change.
        if chunk.chunkIndex == 0 || self.subscriptions[id]!.snapshot == nil {
            self.subscriptions[id]!.snapshot = SnapshotBuffer(seq: chunk.seq)
        }
        for proto in chunk.rows {
            do {
                self.subscriptions[id]!.snapshot!.rows.append((try Row(proto), proto.version))
            } catch {
                throw ClientError(.malformedRequest, "snapshot row does not decode: \(error)", cause: error)
            }
        }
        guard chunk.last else { return }
        let buffer = self.subscriptions[id]!.snapshot!
        self.subscriptions[id]!.snapshot = nil
        self.logger.debug(
            "snapshot complete",
            metadata: [
                "meridian.subscription.id": "\(id)", "meridian.seq": "\(buffer.seq)",
                "meridian.rows": "\(buffer.rows.count)", "meridian.resnapshot": "\(chunk.resnapshot)",
            ])
        var cause = ResultsChangeCause.snapshot
        if let replace = self.subscriptions[id]!.pendingReplace {
            // A Replace answered by a snapshot: the new request is in force from here.
            self.subscriptions[id]!.request = replace.request
            self.subscriptions[id]!.bound = replace.bound
            self.subscriptions[id]!.pendingReplace = nil
            cause = .replaced
        }
        let waiters = self.subscriptions[id]!.replaceWaiters
        self.subscriptions[id]!.replaceWaiters = []
        self.subscriptions[id]!.phase = .live
        self.subscriptions[id]!.hasData = true
        self.recordSubscription(id)

        var work = CommitWork()
        let incoming = Set(buffer.rows.map(\.row.id))
        let stale = self.subscriptions[id]!.members.filter { !incoming.contains($0) }
        for member in stale { self.dropMember(member, from: id, work: &work) }
        for (row, version) in buffer.rows {
            self.storeRow(row, version: version, in: id, work: &work)
        }
        work.resets.insert(id)
        self.advance(to: max(self.appliedSeq, buffer.seq), work: work, cause: cause)
        self.resumeAfterPublishing(waiters)
    }

    private func receiveBatch(_ batch: Meridian_V1_Batch) throws(ClientError) {
        var work = CommitWork()
        var cause = ResultsChangeCause.remote
        var answered: [CheckedContinuation<Void, any Error>] = []
        for delta in batch.deltas {
            let id = delta.subscriptionID
            // In place throughout: a local copy of the subscription would copy its members on every change.
            guard let phase = self.subscriptions[id]?.phase, phase == .live else { continue }
            if delta.replaced, let replace = self.subscriptions[id]!.pendingReplace {
                if replace.request.entity != self.subscriptions[id]!.entity {
                    for member in self.subscriptions[id]!.members { self.dropMember(member, from: id, work: &work) }
                }
                self.subscriptions[id]!.request = replace.request
                self.subscriptions[id]!.bound = replace.bound
                self.subscriptions[id]!.pendingReplace = nil
                answered += self.subscriptions[id]!.replaceWaiters
                self.subscriptions[id]!.replaceWaiters = []
                self.recordSubscription(id)
                cause = .replaced
            }
            for left in delta.left {
                self.dropMember(left, from: id, work: &work)
            }
            do {
                for proto in delta.entered {
                    self.storeRow(try Row(proto), version: proto.version, in: id, work: &work)
                }
                for update in delta.updated {
                    let (row, version, _) = try update.decoded()
                    self.storeRow(row, version: version, in: id, work: &work)
                }
            } catch {
                throw ClientError(.malformedRequest, "batch row does not decode: \(error)", cause: error)
            }
        }
        self.advance(to: batch.seq, work: work, cause: cause)
        self.resumeAfterPublishing(answered)
    }

    private func receiveSubscriptionError(_ failure: Meridian_V1_SubscriptionError) {
        guard var subscription = self.subscriptions[failure.subscriptionID] else { return }
        let error = ClientError(failure.error)
        if subscription.pendingReplace != nil {
            // A rejected Replace: the previous request stays in force.
            subscription.pendingReplace = nil
            let waiters = subscription.replaceWaiters
            subscription.replaceWaiters = []
            self.subscriptions[failure.subscriptionID] = subscription
            for waiter in waiters { waiter.resume(throwing: error) }
            return
        }
        self.logger.info(
            "subscription rejected",
            metadata: ["meridian.subscription.id": "\(failure.subscriptionID)", "meridian.error": "\(error)"])
        subscription.phase = .failed(error)
        subscription.snapshot = nil
        self.subscriptions[failure.subscriptionID] = subscription
        self.failControllers(of: failure.subscriptionID, with: error)
    }

    /// Moves the applied seq forward, confirms the transactions it covers, commits, persists and acknowledges.
    func advance(to seq: Int64, work: CommitWork, cause: ResultsChangeCause = .remote) {
        if self.drain != nil {
            self.drain!.seq = max(self.drain!.seq, seq)
            self.drain!.merge(work, cause: cause, error: nil)
            return
        }
        var work = work
        let moved = seq > self.appliedSeq
        if moved {
            self.appliedSeq = seq
            self.delta.seq = seq
        }
        let confirmed = self.confirmTransactions(upTo: self.appliedSeq, work: &work)
        if !work.isEmpty || moved || !confirmed.isEmpty {
            self.commit(work, cause: work.isEmpty && !confirmed.isEmpty ? .confirmed : cause)
        }
        self.flush()
        self.acknowledge()
        for (id, commitSeq) in confirmed { self.resolveWaiters(id, with: .success(commitSeq)) }
        self.resumeSeqWaiters()
    }
}
