// MARK: - ReplicaState: the Sync stream
//
// The protocol's one rule, on the replica: a SnapshotChunk is only staged, and a Batch — the staged snapshots it
// names, oldest snapshot seq first, then every delta — is applied as one step that ends at its seq. Messages about a
// subscription carry the epoch of the Subscribe that made it; those with another epoch were sent for an earlier
// subscription under the same id, and are dropped.

internal import MeridianCore
internal import OrderedCollections

extension ReplicaState {
    // MARK: - Subscribing

    /// A stream opened: epochs count from 1 again.
    ///
    /// - Returns: The subscriptions to re-add in `Hello`, by id, each counted as the stream's first Subscribe of its
    ///   id (resumed when its rows are complete); rejected subscriptions are not re-added.
    mutating func streamOpened() -> [(id: String, request: FetchRequest, resume: Bool)] {
        self.epochs = [:]
        self.heldBatch = nil
        self.awaitingHelloAnswer = [:]
        var result: [(id: String, request: FetchRequest, resume: Bool)] = []
        for id in self.subscriptions.keys.sorted() {
            let resume = self.subscriptions[id]?.hasData ?? false
            if let request = self.subscribe(id, resume: resume) {
                result.append((id, request, resume))
                if resume { self.awaitingHelloAnswer[id] = self.epochs[id] }
            }
        }
        return result
    }

    /// Whether a stream opening now resumes from the applied seq.
    var isResumable: Bool {
        self.appliedSeq > 0 || self.subscriptions.values.contains { $0.hasData }
    }

    /// Counts a Subscribe for a subscription on the open stream (its next epoch).
    ///
    /// - Returns: The request to subscribe, or `nil` for a subscription the server rejected (or none).
    mutating func subscribe(_ id: String, resume: Bool) -> FetchRequest? {
        guard let subscription = self.subscriptions[id], !subscription.phase.isFailed else { return nil }
        let epoch = (self.epochs[id] ?? 0) &+ 1
        self.epochs[id] = epoch
        self.modify(id) { subscription in
            subscription.epoch = epoch
            subscription.phase = resume ? .live : .awaitingSnapshot
            subscription.snapshot = nil
        }
        return subscription.request
    }

    /// Forgets a subscription's Subscribe on the open stream: whatever the server still sends for it carries the
    /// old epoch and is dropped.
    ///
    /// - Returns: Whether it was subscribed (an Unsubscribe is then due).
    mutating func unsubscribe(_ id: String) -> Bool {
        self.modify(id) { subscription in
            defer {
                subscription.epoch = nil
                subscription.snapshot = nil
            }
            return subscription.epoch != nil
        } ?? false
    }

    /// The stream ended: staged snapshots are dropped, and Replaces in flight are adopted as offline replaces
    /// (their subscriptions are subscribed afresh next time, and show at once the cached rows the new request
    /// selects).
    ///
    /// - Returns: The ids whose Replace was adopted (its waiters may go on).
    mutating func streamClosed(work: inout CommitWork) -> [String] {
        self.epochs = [:]
        self.heldBatch = nil
        self.awaitingHelloAnswer = [:]
        var adopted: [String] = []
        for id in self.subscriptions.keys {
            let replace = self.modify(id) { subscription -> PendingReplace? in
                subscription.snapshot = nil
                subscription.epoch = nil
                if !subscription.phase.isFailed { subscription.phase = .idle }
                return subscription.pendingReplace
            }
            if let replace = replace ?? nil {
                self.adoptOffline(id, replace, work: &work)
                adopted.append(id)
            }
        }
        return adopted
    }

    /// Records a Replace sent on the open stream; the old request stays in force until the server answers.
    mutating func replaceSent(_ id: String, _ replace: PendingReplace) {
        self.modify(id) { $0.pendingReplace = replace }
    }

    // MARK: - Receiving

    /// Whether a message about `id` at `epoch` is about the subscription the replica holds under that id (and not
    /// about one it unsubscribed, whose messages may still be on their way).
    func isCurrent(_ id: String, epoch: UInt32) -> Bool {
        guard let current = self.subscriptions[id]?.epoch else { return false }
        return current == epoch
    }

    /// Stages a chunk of a subscription's snapshot; nothing changes until a Batch names it.
    ///
    /// - Returns: Whether it was staged (`false`: another epoch's, dropped).
    @discardableResult
    mutating func stage(_ chunk: SyncEvent.SnapshotChunk) -> Bool {
        guard self.isCurrent(chunk.subscriptionID, epoch: chunk.epoch) else { return false }
        self.modify(chunk.subscriptionID) { subscription in
            if chunk.index == 0 || subscription.snapshot == nil {
                subscription.snapshot = SnapshotBuffer(seq: chunk.seq, resnapshot: chunk.resnapshot)
            }
            subscription.snapshot?.stage(chunk.rows)
            if chunk.isLast { subscription.snapshot?.isComplete = true }
        }
        return true
    }

    /// Applies one Batch as one step: the staged snapshots it names, oldest first, then every delta; then the
    /// applied seq moves to the batch's.
    ///
    /// The order matters because subscriptions share cached rows: a snapshot is at its own seq, at most the batch's,
    /// while the deltas bring every row they name to the batch's seq. A snapshot applied after another
    /// subscription's delta would put an older image of a shared row back (found by `meridian-check`: a Batch
    /// merging a re-snapshot with later deltas).
    ///
    /// A part of a Batch sent in parts (`continued`) is held, and changes nothing: the part that ends it applies them
    /// all, as the one Batch they are.
    ///
    /// - Throws: ``ClientError`` `malformedRequest`, before anything changed, when the batch names a snapshot whose
    ///   last chunk did not arrive or that is not the one staged (another `snapshot_seq`), or is the stream's first
    ///   and leaves out a subscription `Hello` re-added with `resume` (the stream must be dropped, and resumes from the
    ///   applied seq); or when a part's seq differs from the parts held before it.
    mutating func apply(_ part: SyncEvent.Batch, work: inout CommitWork) throws(ClientError) -> BatchOutcome {
        var batch = part
        if var held = self.heldBatch {
            guard held.seq == part.seq else {
                self.heldBatch = nil
                throw ClientError(
                    .malformedRequest,
                    "a Batch part at seq \(part.seq) follows parts at seq \(held.seq) that said more would follow")
            }
            self.heldBatch = nil
            held.deltas += part.deltas
            held.continued = part.continued
            batch = held
        }
        if batch.continued {
            self.heldBatch = batch
            return BatchOutcome()
        }
        var outcome = BatchOutcome()
        var current: [SyncEvent.Delta] = []
        for delta in batch.deltas {
            if self.isCurrent(delta.subscriptionID, epoch: delta.epoch) {
                current.append(delta)
            } else {
                outcome.ignored.append((delta.subscriptionID, delta.epoch))
            }
        }
        let snapshots = current.filter(\.snapshot).sorted {
            (self.subscriptions[$0.subscriptionID]?.snapshot?.seq ?? 0)
                < (self.subscriptions[$1.subscriptionID]?.snapshot?.seq ?? 0)
        }
        // Every snapshot named, and the answers owed to Hello, are checked before anything changes: a batch that
        // cannot be applied whole changes nothing.
        try self.checkHelloAnswered(by: current, seq: batch.seq)
        for delta in snapshots { try self.checkStagedSnapshot(delta.subscriptionID, seq: delta.snapshotSeq) }
        self.awaitingHelloAnswer = [:]
        for delta in snapshots {
            self.applyStagedSnapshot(
                delta.subscriptionID, answersReplace: delta.replaced, work: &work, outcome: &outcome)
        }
        for delta in current {
            let id = delta.subscriptionID
            // Only fields are read, never the whole subscription: a copy held while rows are stored would make the
            // first insert copy its members.
            guard self.subscriptions[id]?.phase == .live else { continue }
            if delta.replaced, let replace = self.subscriptions[id]?.pendingReplace {
                if replace.request.entity != self.subscriptions[id]?.entity { self.dropAllMembers(of: id, work: &work) }
                self.adopt(id, replace)
                self.record(id)
                outcome.answeredReplaces.append(id)
                outcome.cause = Self.stronger(outcome.cause, .replaced)
            }
            for left in delta.left { self.dropMember(left, from: id, work: &work) }
            self.store(delta.entered, in: id, seq: batch.seq, work: &work)
            self.store(delta.updated, in: id, seq: batch.seq, work: &work)
        }
        outcome.moved = self.advance(to: batch.seq)
        return outcome
    }

    /// Checks that the stream's first Batch answers every subscription `Hello` re-added with `resume` and the client
    /// still holds under that Subscribe (not failed, not unsubscribed or subscribed again since): the server answers
    /// them all in it, a resumed subscription with a delta carrying its id even when nothing changed.
    ///
    /// - Throws: ``ClientError`` `malformedRequest` naming those it leaves out.
    private func checkHelloAnswered(by deltas: [SyncEvent.Delta], seq: Int64) throws(ClientError) {
        guard !self.awaitingHelloAnswer.isEmpty else { return }
        let named = Set(deltas.map(\.subscriptionID))
        let missing = self.awaitingHelloAnswer.filter { id, epoch in
            !named.contains(id) && self.isCurrent(id, epoch: epoch)
                && self.subscriptions[id]?.phase.isFailed == false
        }
        guard missing.isEmpty else {
            let names = missing.keys.sorted().joined(separator: ", ")
            throw ClientError(
                .malformedRequest,
                "the first Batch after Hello (seq \(seq)) does not answer \(names), re-added with resume: the server "
                    + "answers every one in it")
        }
    }

    /// Checks that a subscription's staged snapshot is the one a batch names: complete, and at `seq` (the batch's
    /// `snapshot_seq`; 0: not said). Staged at another seq, it is an earlier snapshot whose batch never came, and
    /// the named one's chunks did not arrive: shown under the batch's seq, it would be a state the store never had.
    ///
    /// - Throws: ``ClientError`` `malformedRequest` when the snapshot did not arrive whole, or another is staged.
    private func checkStagedSnapshot(_ id: String, seq: Int64) throws(ClientError) {
        guard let buffer = self.subscriptions[id]?.snapshot, buffer.isComplete else {
            throw ClientError(
                .malformedRequest, "a Batch names the snapshot of '\(id)', whose last chunk did not arrive")
        }
        guard seq == 0 || buffer.seq == seq else {
            throw ClientError(
                .malformedRequest,
                "a Batch names the snapshot of '\(id)' at seq \(seq), but the one staged is at seq \(buffer.seq)")
        }
    }

    /// Makes a subscription's staged snapshot (checked by ``checkStagedSnapshot(_:seq:)``) its result (diffed against
    /// what it held, into `work`).
    ///
    /// - Parameter answersReplace: The batch flags the snapshot `replaced`: it is of the request of the Replace the
    ///   subscription waits for. Without the flag it is of the request in force (a re-snapshot the server sent before
    ///   it read the Replace), and the Replace stays pending.
    private mutating func applyStagedSnapshot(
        _ id: String,
        answersReplace: Bool,
        work: inout CommitWork,
        outcome: inout BatchOutcome
    ) {
        guard let buffer = self.subscriptions[id]?.snapshot, buffer.isComplete else { return }
        outcome.snapshots.append(
            AppliedSnapshot(id: id, seq: buffer.seq, rowCount: buffer.received, resnapshot: buffer.resnapshot))
        var cause = ResultsChangeCause.snapshot
        if let replace = self.subscriptions[id]?.pendingReplace {
            if answersReplace {
                // A Replace answered by a snapshot: the new request is in force from here.
                if replace.request.entity != self.subscriptions[id]?.entity {
                    self.dropAllMembers(of: id, work: &work)
                }
                self.adopt(id, replace)
                cause = .replaced
                outcome.answeredReplaces.append(id)
            }
        } else {
            // No Replace in flight: whoever waits for one (made offline, subscribed afresh) is answered.
            outcome.answeredReplaces.append(id)
        }
        self.modify(id) { subscription in
            subscription.snapshot = nil
            subscription.phase = .live
            subscription.hasData = true
        }
        self.record(id)
        outcome.cause = Self.stronger(outcome.cause, cause)

        // Re-read entirely: the rows below need not be named one by one for this subscription (`store` and
        // `touch` skip subscriptions being reset).
        work.resets.insert(id)
        // Fields read, not the whole subscription held: a copy held while members go would copy its member set.
        guard let entity = self.subscriptions[id]?.entity else { return }
        let stale =
            self.subscriptions[id].map { subscription in
                self.memberIDs(of: subscription) { buffer.rows.index(forKey: $0) == nil }
            } ?? []
        for member in stale { self.dropMember(member, from: id, work: &work) }
        if self.adoptFirstLoad(buffer.rows, in: id, work: work) { return }
        // Grown once, not by rehashing every row stored so far as they arrive: the members become the incoming rows
        // exactly, and the entity's cache holds at least them.
        self.modify(id) { if !$0.holdsEntityCache { $0.members.reserveCapacity(buffer.rows.count) } }
        self.reserveRows(entity, atLeast: buffer.rows.count)
        self.store(buffer.versionedRows, in: id, seq: buffer.seq, work: &work)
    }

    /// Which cause names a step that has several: a replacement over a snapshot over the rest.
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

    /// The server rejected a subscription's Subscribe or Replace.
    mutating func fail(_ failure: SyncEvent.SubscriptionFailure) -> FailureOutcome {
        guard self.isCurrent(failure.subscriptionID, epoch: failure.epoch) else { return .ignored }
        return self.modify(failure.subscriptionID) { subscription -> FailureOutcome in
            if subscription.pendingReplace != nil, !failure.ended {
                // A rejected Replace: the previous request stays in force.
                subscription.pendingReplace = nil
                return .replaceRejected
            }
            subscription.phase = .failed(failure.error)
            subscription.snapshot = nil
            subscription.pendingReplace = nil
            return .subscriptionFailed
        } ?? .ignored
    }
}

/// What applying one Batch did, besides the rows it touched.
struct BatchOutcome {
    /// Why the controllers change.
    var cause = ResultsChangeCause.remote
    /// Whether the applied seq moved.
    var moved = false
    /// Subscriptions whose Replace (or Subscribe after an offline replace) the batch answered.
    var answeredReplaces: [String] = []
    /// The staged snapshots it applied, in order.
    var snapshots: [AppliedSnapshot] = []
    /// Deltas dropped for another epoch's (id, epoch).
    var ignored: [(id: String, epoch: UInt32)] = []
}

/// A staged snapshot a Batch applied (for the log).
struct AppliedSnapshot: Hashable {
    var id: String
    var seq: Int64
    var rowCount: Int
    var resnapshot: Bool
}

/// What a SubscriptionError did.
enum FailureOutcome: Hashable {
    /// It was about another epoch's subscription, or one the replica does not hold.
    case ignored
    /// It rejected a Replace: the previous request stays in force.
    case replaceRejected
    /// It rejected the subscription: its controllers end with the error.
    case subscriptionFailed
}
