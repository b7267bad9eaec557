// MARK: - Catching up as one commit
//
// After a reconnection the client re-adds every subscription, and the server answers each one on its own: a batch of
// what it missed (possibly empty), or a snapshot, each released at the seq the server had reached when that
// subscription's registration completed, with live batches for the others in between. After an overflow the server
// re-snapshots every subscription the same way. Applied one by one, those messages would show states the store never
// had: one controller caught up to seq X while another, sharing rows with it, still shows its membership at the old
// seq. So the context holds the messages until every subscription it is waiting for has its answer, then applies them
// all as one commit at the last one's seq — where every subscription is complete (the stream is in seq order, and a
// subscription's live deltas start right after its catch-up message). Nothing held is applied or persisted before
// then; a connection lost meanwhile drops the held messages, and the next Hello resumes from the seq still applied.

internal import Logging
internal import MeridianProto

/// The subscriptions a catch-up waits for, and the messages held meanwhile.
struct CatchUp {
    var waiting: Set<String>
    var held: [Meridian_V1_SyncResponse] = []
}

/// One commit built from several: the latest seq, the union of the work, the strongest cause, the first error, and
/// the waiters to resume once it is published.
struct Drain {
    var seq: Int64
    var work = CommitWork()
    var cause: ResultsChangeCause?
    var error: ClientError?
    var waiters: [CheckedContinuation<Void, any Error>] = []

    mutating func merge(_ work: CommitWork, cause: ResultsChangeCause, error: ClientError?) {
        self.work.merge(work)
        if self.error == nil { self.error = error }
        if let current = self.cause, Self.rank(current) >= Self.rank(cause) { return }
        self.cause = cause
    }

    /// Which cause names a merged commit: a revert (it carries an error) over a replacement over a snapshot over the
    /// rest.
    static func rank(_ cause: ResultsChangeCause) -> Int {
        switch cause {
        case .reverted: 4
        case .replaced: 3
        case .snapshot: 2
        case .remote: 1
        default: 0
        }
    }
}

extension CacheContext {
    /// Starts holding messages until each of `subscriptions` has caught up (none: nothing to hold).
    func beginCatchUp(waitingFor subscriptions: Set<String>) {
        guard !subscriptions.isEmpty else {
            self.catchUp = nil
            return
        }
        self.catchUp = CatchUp(waiting: subscriptions)
    }

    /// Holds `response` while a catch-up is under way (starting one when the server re-snapshots a live subscription
    /// unasked, which it does to every subscription after an overflow).
    ///
    /// - Parameters:
    ///   - response: The message with subscription ids (see `localized`).
    ///   - received: The message as received, with wire ids: what is held. It is localized again when applied, so
    ///     that what it says about a subscription subscribed again meanwhile (a region moved before its snapshot
    ///     was applied) is dropped instead of taken for the new request's.
    /// - Returns: Whether the message was taken (held, or applied with the others when it completed the catch-up).
    func holdForCatchUp(
        _ response: Meridian_V1_SyncResponse, received: Meridian_V1_SyncResponse
    ) throws(ClientError) -> Bool {
        if self.catchUp == nil, case .snapshotChunk(let chunk) = response.kind, chunk.resnapshot, chunk.chunkIndex == 0,
            let subscription = self.subscriptions[chunk.subscriptionID], subscription.phase == .live,
            subscription.hasData, subscription.pendingReplace == nil
        {
            let live = self.subscriptions.values.filter { $0.phase == .live && $0.hasData }.map(\.id)
            self.beginCatchUp(waitingFor: Set(live))
        }
        guard self.catchUp != nil else { return false }
        switch response.kind {
        case .batch(let batch):
            self.catchUp!.waiting.subtract(batch.deltas.map(\.subscriptionID))
        case .snapshotChunk(let chunk):
            if chunk.last { self.catchUp!.waiting.remove(chunk.subscriptionID) }
        case .subscriptionError(let failure):
            self.catchUp!.waiting.remove(failure.subscriptionID)
        case .heartbeat:
            break
        case .welcome, .goodbye, nil:
            return false
        }
        self.catchUp!.held.append(received)
        try self.finishCatchUpIfComplete()
        return true
    }

    /// A subscription closed during a catch-up is no longer waited for.
    func subscriptionLeftCatchUp(_ id: String) {
        guard self.catchUp?.waiting.remove(id) != nil else { return }
        do {
            try self.finishCatchUpIfComplete()
        } catch {
            self.logger.error("a held message does not apply", metadata: ["meridian.error": "\(error)"])
        }
    }

    /// Applies the held messages as one commit once nothing is waited for.
    ///
    /// - Throws: The first message that does not apply (the others are applied and published all the same, so the
    ///   controllers never miss work; the connection then reconnects and resumes).
    func finishCatchUpIfComplete() throws(ClientError) {
        guard let catchUp, catchUp.waiting.isEmpty else { return }
        self.catchUp = nil
        self.drain = Drain(seq: self.appliedSeq)
        var failure: ClientError?
        for message in catchUp.held {
            guard let message = self.localized(message) else { continue }
            do {
                try self.apply(message)
            } catch {
                if failure == nil { failure = error }
            }
        }
        let drain = self.drain!
        self.drain = nil
        self.logger.debug(
            "caught up",
            metadata: ["meridian.seq": "\(drain.seq)", "meridian.messages": "\(catchUp.held.count)"])
        self.advance(to: drain.seq, work: drain.work, cause: drain.cause ?? .remote)
        // A revert's reason travels with a commit of its own.
        if let error = drain.error { self.commit(CommitWork(), cause: .reverted, error: error) }
        for waiter in drain.waiters { waiter.resume() }
        if let failure { throw failure }
    }

    /// Resumes waiters now, or after the merged commit when held messages are being applied.
    func resumeAfterPublishing(_ waiters: [CheckedContinuation<Void, any Error>]) {
        if self.drain != nil {
            self.drain!.waiters += waiters
        } else {
            for waiter in waiters { waiter.resume() }
        }
    }
}
