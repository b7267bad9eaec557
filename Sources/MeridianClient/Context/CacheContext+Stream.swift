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
        var hello = Meridian_V1_Hello()
        hello.clientName = clientName
        let resumable = self.subscriptions.values.contains { $0.hasData }
        if resumable || self.appliedSeq > 0 { hello.resumeFromSeq = self.appliedSeq }
        if let schema { hello.schemaFingerprint = schema.fingerprint }
        self.send(.hello(hello))
        for id in self.subscriptions.keys.sorted() {
            self.sendSubscribe(id, resume: self.subscriptions[id]!.hasData)
        }
    }

    /// The stream ended: partial snapshots are dropped, Replaces in flight are adopted as offline replaces (their
    /// subscriptions are subscribed afresh next time), and transactions in flight go back to the queue.
    package func connectionClosed() {
        self.outbound?.finish()
        self.outbound = nil
        var work = CommitWork()
        for id in self.subscriptions.keys {
            self.subscriptions[id]!.snapshot = nil
            if case .failed = self.subscriptions[id]!.phase {} else { self.subscriptions[id]!.phase = .idle }
            if let replace = self.subscriptions[id]!.pendingReplace {
                var subscription = self.subscriptions[id]!
                subscription.request = replace.request
                subscription.bound = replace.bound
                subscription.pendingReplace = nil
                subscription.hasData = false
                let waiters = subscription.replaceWaiters
                subscription.replaceWaiters = []
                self.subscriptions[id] = subscription
                for member in subscription.members {
                    let row = self.serverRow(subscription.entity, member)
                    if row.map(replace.bound.matches) != true { self.dropMember(member, from: id, work: &work) }
                }
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
        var subscribe = Meridian_V1_Subscribe()
        subscribe.subscriptionID = id
        subscribe.fetch = Meridian_V1_FetchRequest(subscription.request)
        subscribe.resume = resume
        subscription.phase = resume ? .live : .awaitingSnapshot
        subscription.snapshot = nil
        self.subscriptions[id] = subscription
        self.send(.subscribe(subscribe))
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
        guard var subscription = self.subscriptions[chunk.subscriptionID] else { return }
        if chunk.chunkIndex == 0 || subscription.snapshot == nil {
            subscription.snapshot = SnapshotBuffer(seq: chunk.seq)
        }
        for proto in chunk.rows {
            do {
                subscription.snapshot!.rows.append((try Row(proto), proto.version))
            } catch {
                throw ClientError(.malformedRequest, "snapshot row does not decode: \(error)", cause: error)
            }
        }
        guard chunk.last else {
            self.subscriptions[chunk.subscriptionID] = subscription
            return
        }
        let buffer = subscription.snapshot!
        subscription.snapshot = nil
        var cause = ResultsChangeCause.snapshot
        if let replace = subscription.pendingReplace {
            // A Replace answered by a snapshot: the new request is in force from here.
            subscription.request = replace.request
            subscription.bound = replace.bound
            subscription.pendingReplace = nil
            cause = .replaced
        }
        let waiters = subscription.replaceWaiters
        subscription.replaceWaiters = []
        subscription.phase = .live
        subscription.hasData = true
        self.subscriptions[chunk.subscriptionID] = subscription
        self.recordSubscription(chunk.subscriptionID)

        var work = CommitWork()
        let incoming = Set(buffer.rows.map(\.row.id))
        for id in subscription.members where !incoming.contains(id) {
            self.dropMember(id, from: chunk.subscriptionID, work: &work)
        }
        for (row, version) in buffer.rows {
            self.storeRow(row, version: version, in: chunk.subscriptionID, work: &work)
        }
        work.resets.insert(chunk.subscriptionID)
        self.advance(to: max(self.appliedSeq, buffer.seq), work: work, cause: cause)
        for waiter in waiters { waiter.resume() }
    }

    private func receiveBatch(_ batch: Meridian_V1_Batch) throws(ClientError) {
        var work = CommitWork()
        var cause = ResultsChangeCause.remote
        var answered: [CheckedContinuation<Void, any Error>] = []
        for delta in batch.deltas {
            let id = delta.subscriptionID
            guard var subscription = self.subscriptions[id], subscription.phase == .live else { continue }
            if delta.replaced, let replace = subscription.pendingReplace {
                if replace.request.entity != subscription.entity {
                    for member in subscription.members { self.dropMember(member, from: id, work: &work) }
                    subscription = self.subscriptions[id]!
                }
                subscription.request = replace.request
                subscription.bound = replace.bound
                subscription.pendingReplace = nil
                answered += subscription.replaceWaiters
                subscription.replaceWaiters = []
                self.subscriptions[id] = subscription
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
        for waiter in answered { waiter.resume() }
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
