// MARK: - CacheContext: the Sync stream
//
// The context is fed the stream's events in order (decoded outside the actor by the connection, or by tests) and
// answers through the open stream's `SyncOutbound`: Hello (re-adding every subscription) when a stream opens, Ack
// after each applied seq, Subscribe, Replace and Unsubscribe as controllers ask. What an event does to the rows is
// the replica state's business (ReplicaState+Stream.swift); here it is logged, committed and answered.

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
    ///   - maxMessageBytes: The largest message the client takes (`Hello.max_batch_bytes`; 0: the server's choice).
    package func connectionOpened(
        outbound: AsyncStream<Meridian_V1_SyncRequest>.Continuation,
        clientName: String = "MeridianClient",
        maxMessageBytes: Int = 0
    ) {
        let outbound = SyncOutbound(continuation: outbound)
        self.outbound = outbound
        self.ackedSeq = 0
        let resumeFrom = self.replica.isResumable ? self.replica.appliedSeq : nil
        let subscriptions = self.replica.streamOpened().map {
            SyncOutbound.Subscription(id: $0.id, request: $0.request, resume: $0.resume)
        }
        outbound.hello(
            clientName: clientName, resumeFrom: resumeFrom, schemaFingerprint: self.schema?.fingerprint,
            accessFingerprint: resumeFrom == nil ? nil : self.accessFingerprint, maxMessageBytes: maxMessageBytes,
            subscriptions: subscriptions)
    }

    /// The stream ended: staged snapshots are dropped, Replaces in flight are adopted as offline replaces (their
    /// subscriptions are subscribed afresh next time), and transactions in flight go back to the queue.
    package func connectionClosed() {
        self.outbound?.finish()
        self.outbound = nil
        var work = CommitWork()
        for id in self.replica.streamClosed(work: &work) {
            for waiter in self.replaceWaiters.removeValue(forKey: id) ?? [] { waiter.resume() }
        }
        self.writes.requeueInFlight()
        self.commit(work, cause: .replaced)
        self.flush()
    }

    /// Subscribes on the open stream.
    func sendSubscribe(_ id: String, resume: Bool) {
        guard let outbound, let request = self.replica.subscribe(id, resume: resume) else { return }
        outbound.subscribe(.init(id: id, request: request, resume: resume))
    }

    /// Acknowledges the applied seq if it moved.
    func acknowledge() {
        guard let outbound, self.replica.appliedSeq > self.ackedSeq else { return }
        self.ackedSeq = self.replica.appliedSeq
        outbound.acknowledge(self.ackedSeq)
    }

    // MARK: - Receiving

    /// Decodes and applies one message from the server (for tests and tools; the connection decodes outside the
    /// actor and hands over the event).
    ///
    /// - Throws: ``ClientError`` when the message does not decode, or as applying its event does.
    package func receive(_ response: Meridian_V1_SyncResponse) throws(ClientError) {
        try self.receive(SyncEvent(response))
    }

    /// Applies one event of the stream, in stream order: a Batch as one commit, a SnapshotChunk staged.
    ///
    /// - Throws: ``ClientError`` when the event breaks the protocol badly enough that the stream must be dropped (a
    ///   Batch naming a snapshot that did not arrive whole); the connection then reconnects and resumes.
    func receive(_ event: SyncEvent) throws(ClientError) {
        switch event {
        case .welcome(let welcome):
            self.serverFingerprint = welcome.schemaFingerprint
            self.accessFingerprint = welcome.accessFingerprint.isEmpty ? nil : welcome.accessFingerprint
            self.logger.debug(
                "welcome", metadata: ["meridian.seq": "\(welcome.seq)", "meridian.resumed": "\(welcome.resumed)"])
        case .snapshotChunk(let chunk):
            if !self.replica.stage(chunk) { self.logIgnored(chunk.subscriptionID, chunk.epoch) }
        case .batch(let batch):
            var work = CommitWork()
            let outcome = try self.replica.apply(batch, work: &work)
            for (id, epoch) in outcome.ignored { self.logIgnored(id, epoch) }
            for snapshot in outcome.snapshots {
                self.logger.debug(
                    "snapshot applied",
                    metadata: [
                        "meridian.subscription.id": "\(snapshot.id)", "meridian.seq": "\(snapshot.seq)",
                        "meridian.rows": "\(snapshot.rowCount)", "meridian.resnapshot": "\(snapshot.resnapshot)",
                    ])
            }
            self.finishStep(work, moved: outcome.moved, cause: outcome.cause)
            for id in outcome.answeredReplaces {
                for waiter in self.replaceWaiters.removeValue(forKey: id) ?? [] { waiter.resume() }
            }
        case .heartbeat(let seq):
            self.finishStep(CommitWork(), moved: self.replica.advance(to: seq))
        case .subscriptionError(let failure):
            self.receive(failure)
        case .goodbye(let reason):
            self.logger.info("server said goodbye", metadata: ["meridian.reason": "\(reason)"])
        case .unknown:
            self.logger.debug("ignoring a Sync message with no case set")
        }
    }

    private func receive(_ failure: SyncEvent.SubscriptionFailure) {
        let id = failure.subscriptionID
        switch self.replica.fail(failure) {
        case .ignored:
            self.logIgnored(id, failure.epoch)
        case .replaceRejected:
            for waiter in self.replaceWaiters.removeValue(forKey: id) ?? [] { waiter.resume(throwing: failure.error) }
        case .subscriptionFailed:
            // A Replace it waited for ends with it.
            for waiter in self.replaceWaiters.removeValue(forKey: id) ?? [] { waiter.resume(throwing: failure.error) }
            self.logger.info(
                "subscription rejected",
                metadata: ["meridian.subscription.id": "\(id)", "meridian.error": "\(failure.error)"])
            self.failControllers(of: id, with: failure.error)
        }
    }

    private func logIgnored(_ id: String, _ epoch: UInt32) {
        self.logger.debug(
            "ignoring a message for a closed subscription",
            metadata: ["meridian.subscription.id": "\(id)", "meridian.epoch": "\(epoch)"])
    }
}
