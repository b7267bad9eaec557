// MARK: - The Sync stream
//
// The context is fed decoded `SyncResponse`s in stream order (by the connection, or directly by tests) and answers
// through `outbound`: Hello (re-adding every subscription) when a stream opens, Ack after each applied seq, Subscribe,
// Replace and Unsubscribe as controllers ask. The protocol's one rule makes this simple: a SnapshotChunk is only
// staged, and a Batch — its deltas and the staged snapshots it names — is applied as one commit at its seq, so
// controllers only ever see whole seqs, also after a reconnection or an overflow (the server answers those in one
// Batch). Messages about a subscription carry the epoch of the Subscribe that made it; those with another epoch were
// sent for an earlier subscription under the same id, and are dropped.

internal import Logging
internal import MeridianCore
package import MeridianProto

extension CacheContext {
    // MARK: - Opening and closing

    /// A stream opened: sends `Hello`, resuming from the applied seq when the cache holds data and re-adding every
    /// subscription in it (with `resume` set for those whose rows are complete), so that the server answers them
    /// all in one Batch.
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
        self.epochs = [:]
        var hello = Meridian_V1_Hello()
        hello.protocolVersion = ProtocolVersion.current
        hello.clientName = clientName
        let resumable = self.subscriptions.values.contains { $0.hasData }
        if resumable || self.appliedSeq > 0 { hello.resumeFromSeq = self.appliedSeq }
        if let schema { hello.schemaFingerprint = schema.fingerprint }
        for id in self.subscriptions.keys.sorted() {
            if let subscribe = self.subscribeMessage(id, resume: self.subscriptions[id]!.hasData) {
                hello.subscriptions.append(subscribe)
            }
        }
        self.send(.hello(hello))
    }

    /// The stream ended: staged snapshots are dropped, Replaces in flight are adopted as offline replaces (their
    /// subscriptions are subscribed afresh next time), and transactions in flight go back to the queue.
    package func connectionClosed() {
        self.outbound?.finish()
        self.outbound = nil
        self.epochs = [:]
        var work = CommitWork()
        for id in self.subscriptions.keys {
            self.subscriptions[id]!.snapshot = nil
            self.subscriptions[id]!.epoch = nil
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
        guard let subscribe = self.subscribeMessage(id, resume: resume) else { return }
        self.send(.subscribe(subscribe))
    }

    /// The Subscribe for a subscription, counted as the stream's next one for its id (its epoch), or `nil` for a
    /// subscription the server rejected.
    private func subscribeMessage(_ id: String, resume: Bool) -> Meridian_V1_Subscribe? {
        guard let subscription = self.subscriptions[id] else { return nil }
        if case .failed = subscription.phase { return nil }
        let epoch = (self.epochs[id] ?? 0) &+ 1
        self.epochs[id] = epoch
        self.subscriptions[id]!.epoch = epoch
        self.subscriptions[id]!.phase = resume ? .live : .awaitingSnapshot
        self.subscriptions[id]!.snapshot = nil
        var subscribe = Meridian_V1_Subscribe()
        subscribe.subscriptionID = id
        subscribe.fetch = Meridian_V1_FetchRequest(subscription.request)
        subscribe.resume = resume
        return subscribe
    }

    /// Unsubscribes on the open stream; whatever the server still sends for it carries its epoch and is dropped.
    func sendUnsubscribe(_ subscription: SubscriptionState) {
        guard subscription.epoch != nil else { return }
        if self.subscriptions[subscription.id]?.epoch == subscription.epoch {
            self.subscriptions[subscription.id]!.epoch = nil
        }
        var unsubscribe = Meridian_V1_Unsubscribe()
        unsubscribe.subscriptionID = subscription.id
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

    /// Applies one message from the server, in stream order: a Batch as one commit, a SnapshotChunk staged.
    ///
    /// - Throws: ``ClientError`` when the message breaks the protocol badly enough that the stream must be dropped
    ///   (a row that does not decode, a Batch naming a snapshot that did not arrive whole); the connection then
    ///   reconnects and resumes.
    package func receive(_ response: Meridian_V1_SyncResponse) throws(ClientError) {
        switch response.kind {
        case .welcome(let welcome):
            self.heartbeatIntervalMilliseconds = welcome.heartbeatIntervalMs
            self.serverFingerprint = welcome.schemaFingerprint
            self.logger.debug(
                "welcome",
                metadata: ["meridian.seq": "\(welcome.seq)", "meridian.resumed": "\(welcome.resumed)"])
        case .snapshotChunk(let chunk):
            guard self.isCurrent(chunk.subscriptionID, chunk.epoch) else { return }
            try self.stageSnapshotChunk(chunk)
        case .batch(let batch):
            try self.receiveBatch(batch)
        case .heartbeat(let heartbeat):
            self.advance(to: heartbeat.seq, work: CommitWork())
        case .subscriptionError(let failure):
            guard self.isCurrent(failure.subscriptionID, failure.epoch) else { return }
            self.receiveSubscriptionError(failure)
        case .goodbye(let goodbye):
            self.logger.info("server said goodbye", metadata: ["meridian.reason": "\(goodbye.reason)"])
        case nil:
            self.logger.debug("ignoring a Sync message with no case set")
        }
    }

    /// Whether a message about `id` at `epoch` is about the subscription the context holds under that id (and not
    /// about one it unsubscribed, whose messages may still be on their way).
    private func isCurrent(_ id: String, _ epoch: UInt32) -> Bool {
        if let current = self.subscriptions[id]?.epoch, current == epoch { return true }
        self.logger.debug(
            "ignoring a message for a closed subscription",
            metadata: ["meridian.subscription.id": "\(id)", "meridian.epoch": "\(epoch)"])
        return false
    }

    /// Stages a chunk of a subscription's snapshot; nothing changes until a Batch names it.
    private func stageSnapshotChunk(_ chunk: Meridian_V1_SnapshotChunk) throws(ClientError) {
        let id = chunk.subscriptionID
        // In place throughout: a local copy of the subscription would copy its rows on every chunk.
        if chunk.chunkIndex == 0 || self.subscriptions[id]!.snapshot == nil {
            self.subscriptions[id]!.snapshot = SnapshotBuffer(seq: chunk.seq, resnapshot: chunk.resnapshot)
        }
        for proto in chunk.rows {
            do {
                self.subscriptions[id]!.snapshot!.rows.append((try Row(proto), proto.version))
            } catch {
                throw ClientError(.malformedRequest, "snapshot row does not decode: \(error)", cause: error)
            }
        }
        if chunk.last { self.subscriptions[id]!.snapshot!.isComplete = true }
    }

    /// Applies one Batch as one commit: the staged snapshots it names, oldest first, then every delta; then the seq
    /// moves to the batch's.
    ///
    /// The order matters because subscriptions share cached rows: a snapshot is at its own seq, at most the batch's,
    /// while the deltas bring every row they name to the batch's seq. A snapshot applied after another
    /// subscription's delta would put an older image of a shared row back (found by `meridian-check`: a Batch
    /// merging a re-snapshot with later deltas).
    private func receiveBatch(_ batch: Meridian_V1_Batch) throws(ClientError) {
        var work = CommitWork()
        var cause = ResultsChangeCause.remote
        var answered: [CheckedContinuation<Void, any Error>] = []
        let current = batch.deltas.filter { self.isCurrent($0.subscriptionID, $0.epoch) }
        let snapshots = current.filter(\.snapshot).map(\.subscriptionID).sorted {
            (self.subscriptions[$0]!.snapshot?.seq ?? 0) < (self.subscriptions[$1]!.snapshot?.seq ?? 0)
        }
        for id in snapshots {
            let (snapshotCause, waiters) = try self.applyStagedSnapshot(id, work: &work)
            cause = Self.stronger(cause, snapshotCause)
            answered += waiters
        }
        for delta in current {
            let id = delta.subscriptionID
            // In place throughout: a local copy of the subscription would copy its members on every change.
            guard self.subscriptions[id]!.phase == .live else { continue }
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
                cause = Self.stronger(cause, .replaced)
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
        for waiter in answered { waiter.resume() }
    }

    /// Makes a subscription's staged snapshot its result (diffed against what it held, into `work`).
    ///
    /// - Returns: The commit's cause (`replaced` when the snapshot answers a Replace) and the Replace's waiters.
    /// - Throws: ``ClientError`` `malformedRequest` when the snapshot did not arrive whole.
    private func applyStagedSnapshot(
        _ id: String, work: inout CommitWork
    ) throws(ClientError) -> (ResultsChangeCause, [CheckedContinuation<Void, any Error>]) {
        guard let buffer = self.subscriptions[id]!.snapshot, buffer.isComplete else {
            throw ClientError(
                .malformedRequest, "a Batch names the snapshot of '\(id)', whose last chunk did not arrive")
        }
        self.subscriptions[id]!.snapshot = nil
        self.logger.debug(
            "snapshot applied",
            metadata: [
                "meridian.subscription.id": "\(id)", "meridian.seq": "\(buffer.seq)",
                "meridian.rows": "\(buffer.rows.count)", "meridian.resnapshot": "\(buffer.resnapshot)",
            ])
        var cause = ResultsChangeCause.snapshot
        if let replace = self.subscriptions[id]!.pendingReplace {
            // A Replace answered by a snapshot: the new request is in force from here.
            if replace.request.entity != self.subscriptions[id]!.entity {
                for member in self.subscriptions[id]!.members { self.dropMember(member, from: id, work: &work) }
            }
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

        let incoming = Set(buffer.rows.map(\.row.id))
        let stale = self.subscriptions[id]!.members.filter { !incoming.contains($0) }
        for member in stale { self.dropMember(member, from: id, work: &work) }
        for (row, version) in buffer.rows {
            self.storeRow(row, version: version, in: id, work: &work)
        }
        work.resets.insert(id)
        return (cause, waiters)
    }

    /// Which cause names a commit that has several: a replacement over a snapshot over the rest.
    private static func stronger(_ a: ResultsChangeCause, _ b: ResultsChangeCause) -> ResultsChangeCause {
        func rank(_ cause: ResultsChangeCause) -> Int {
            switch cause {
            case .replaced: 3
            case .snapshot: 2
            case .remote: 1
            default: 0
            }
        }
        return rank(b) > rank(a) ? b : a
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
