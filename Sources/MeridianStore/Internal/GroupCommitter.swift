// MARK: - GroupCommitter

internal import Dispatch
internal import GRDB
internal import MeridianCore
internal import Synchronization

/// Queues concurrent transactions and commits those that arrive while a commit is in progress together, in one
/// SQLite transaction, each inside its own savepoint.
///
/// The hot path is one hop in (the transaction and its ``CommitAnswer`` are queued and, if no commit is running, a job
/// is put on GRDB's writer queue) and one hop out (the answer's waiting caller is resumed). A failing transaction rolls back only itself
/// and gets its own error; every successful one gets the commit's final `seq`.
final class GroupCommitter: Sendable {
    struct Pending: Sendable {
        var operations: [PreparedOperation]
        var policy: ConflictPolicy
        /// The idempotency key and the digest of the request it is recorded with.
        var idempotencyKey: (key: String, digest: [UInt8])?
        /// Decides each write from its before- and after-image (the caller's rules); `nil`: every write may go ahead.
        var authorizer: (any WriteAuthorizer)?
        /// Who writes the transaction, recorded in `meridian_authors` with its log entries; `nil`: nobody recorded.
        var author: String?
        /// Where the committer puts the transaction's outcome.
        var answer: CommitAnswer
    }

    struct State {
        var queue: [Pending] = []
        var running = false
        /// While the committer lingers: the queue length that ends the wait (the submitter reaching it signals).
        var lingerTarget: Int?
    }

    private let state = Mutex(State())
    private let writer: any DatabaseWriter
    private let maxBatch: Int
    /// Called on the committing thread after each commit, with its seq and, when the committer is otherwise idle
    /// (the commit held one transaction and none waits for the next), how many rows that transaction wrote.
    private let onCommit: @Sendable (_ seq: Int64, _ idleRows: Int?) -> Void
    /// The SQL of the log entries of the store's entities.
    private let own: StoreDDL.OwnEntries
    /// The largest row an update may leave (`Store.Configuration.maxRowBytes`).
    private let maxRowBytes: Int?
    /// Wakes the lingering committer (signalled once per `lingerTarget` reached).
    private let lingerSignal = DispatchSemaphore(value: 0)
    /// Where each commit's entries are kept for the change feed, while one is open.
    private let recent: RecentCommits

    init(
        writer: any DatabaseWriter,
        own: StoreDDL.OwnEntries,
        maxBatch: Int,
        maxRowBytes: Int?,
        recent: RecentCommits,
        onCommit: @escaping @Sendable (_ seq: Int64, _ idleRows: Int?) -> Void
    ) {
        self.writer = writer
        self.own = own
        self.recent = recent
        self.maxRowBytes = maxRowBytes
        self.maxBatch = max(1, maxBatch)
        self.onCommit = onCommit
    }

    /// Queues a transaction and returns at once: transactions queued one after another commit in that order (in one
    /// group commit, or in consecutive ones).
    ///
    /// - Returns: Its outcome, to wait for.
    func submit(
        _ operations: [PreparedOperation],
        policy: ConflictPolicy,
        idempotencyKey: (key: String, digest: [UInt8])?,
        authorizer: (any WriteAuthorizer)? = nil,
        author: String? = nil
    ) -> CommitAnswer {
        let answer = CommitAnswer()
        let (start, wake) = self.state.withLock { state -> (Bool, Bool) in
            state.queue.append(
                Pending(
                    operations: operations, policy: policy, idempotencyKey: idempotencyKey,
                    authorizer: authorizer, author: author, answer: answer))
            if let target = state.lingerTarget, state.queue.count >= target {
                state.lingerTarget = nil
                return (false, true)
            }
            if state.running { return (false, false) }
            state.running = true
            return (true, false)
        }
        if wake { self.lingerSignal.signal() }
        if start { self.schedule() }
        return answer
    }

    /// Keeps a group commit's entries for the change feed (``RecentCommits``), from inside its transaction, just before
    /// its COMMIT: once the COMMIT has made the commit visible, the feed may read it at once — woken by the poller of
    /// the file's data version, which saw the write, before this thread is back from SQLite, whose COMMIT also runs
    /// the WAL's checkpoint (seen once 14 ms before this thread kept a 20,000-row commit's entries, on two busy cores)
    /// — and must find its entries. Kept after the COMMIT, a large commit's fan-out found them missing about every
    /// other time on a server that had run a while, and read its rows back from SQLite (a quarter of the server's CPU
    /// for a 20,000-row `Apply`). A reader that does not see the commit yet is not given it
    /// (``RecentCommits/changes(after:through:plans:)`` stops at the latest seq it sees); a COMMIT that fails
    /// withdraws them.
    ///
    /// - Returns: Whether anything was kept.
    private func keepForFeed(_ shapes: TransactionExecutor.Shapes, first: Int64, through seq: Int64) -> Bool {
        guard let recorded = shapes.recorded else { return false }
        self.recent.keep(recorded, first: first, through: seq, committedAt: shapes.committedAt)
        return true
    }

    /// Called on the committing thread right after each group commit's COMMIT returned, before its transactions are
    /// answered (for tests: a change feed's read there is one the poller's wake-up can make).
    package let afterCommit = Mutex<(@Sendable () -> Void)?>(nil)

    /// How many entries a batch's commit may write, when its commit is to be kept for the change feed (`nil`: not).
    private func recording(_ batch: [Pending]) -> Int? {
        guard self.recent.isEnabled else { return nil }
        return batch.reduce(0) { $0 + $1.operations.count }
    }

    /// Puts one drain job on the writer queue. Each job commits one batch and reschedules itself if more arrived,
    /// so that other writes (pruning, migrations) interleave.
    private func schedule() {
        self.writer.asyncWriteWithoutTransaction { db in
            let batch: [Pending] = self.state.withLock { state in
                let n = min(self.maxBatch, state.queue.count)
                let batch = Array(state.queue.prefix(n))
                state.queue.removeFirst(n)
                return batch
            }
            if !batch.isEmpty { self.commit(batch, db) }
            if batch.count > 1 { self.linger(for: batch.count) }
            let more = self.state.withLock { state in
                if state.queue.isEmpty {
                    state.running = false
                    return false
                }
                return true
            }
            if more { self.schedule() }
        }
    }

    /// After a grouped commit, gives the writers it just answered a moment (at most 100 µs) to submit their next
    /// transactions, so that the next batch is about as large as this one instead of holding only the first to
    /// arrive. A lone writer (batches of one) never waits. The committer sleeps on a semaphore that the submitter
    /// completing the batch signals — it does not spin, which on two shared cores took CPU from those very writers.
    private func linger(for previous: Int) {
        let waiting = self.state.withLock { state -> Bool in
            if state.queue.count >= previous { return false }
            state.lingerTarget = previous
            return true
        }
        guard waiting else { return }
        if self.lingerSignal.wait(timeout: .now() + .microseconds(100)) == .timedOut {
            // A submitter that took the target before the timeout signals anyway: consume it so that the next
            // linger does not end at once.
            let signalled = self.state.withLock { state -> Bool in
                if state.lingerTarget == nil { return true }
                state.lingerTarget = nil
                return false
            }
            if signalled { self.lingerSignal.wait() }
        }
    }

    /// Commits a batch. The common case — nothing fails — runs every transaction in one SQLite transaction without
    /// savepoints; if one fails, that attempt is rolled back and the batch runs again with a savepoint around each
    /// transaction, so that only the failing ones fail.
    private func commit(_ batch: [Pending], _ db: Database) {
        var firstFailure: (any Error)? = nil
        var seq: Int64 = 0
        var first: Int64 = 0
        // Whether the entries were kept for the change feed (to be withdrawn if the COMMIT fails).
        var kept = false
        do {
            var rows: [TransactionExecutor.Outcome] = []
            rows.reserveCapacity(batch.count)
            var shapes = TransactionExecutor.Shapes(
                own: self.own, maxRowBytes: self.maxRowBytes, recording: self.recording(batch))
            try db.inCachedTransaction(.immediate) {
                if shapes.recorded != nil { first = try Store.latestSeq(db) + 1 }
                for pending in batch {
                    do {
                        rows.append(try TransactionExecutor.run(pending, db: db, shapes: &shapes))
                    } catch {
                        firstFailure = error
                        return .rollback
                    }
                }
                try TransactionExecutor.logPendingInserts(db, &shapes)
                seq = try Store.latestSeq(db)
                try TransactionExecutor.recordKeys(shapes, seq: seq, db: db)
                kept = self.keepForFeed(shapes, first: first, through: seq)
                return .commit
            }
            if firstFailure == nil {
                self.afterCommit.withLock { $0 }?()
                for (pending, outcome) in zip(batch, rows) {
                    pending.answer.resume(
                        returning: CommitResult(seq: outcome.replayedSeq ?? seq, rows: outcome.rows))
                }
                let idle = batch.count == 1 && self.state.withLock { $0.queue.isEmpty }
                self.onCommit(seq, idle ? rows[0].rows.count : nil)
                return
            }
        } catch {
            if kept { self.recent.withdraw(first: first, through: seq) }
            for pending in batch { pending.answer.resume(throwing: StoreError.wrap(error, "the commit failed")) }
            return
        }
        if batch.count == 1, let firstFailure {
            batch[0].answer.resume(throwing: StoreError.wrap(firstFailure, "the transaction failed"))
            return
        }
        self.commitWithSavepoints(batch, db)
    }

    private func commitWithSavepoints(_ batch: [Pending], _ db: Database) {
        var outcomes: [Result<TransactionExecutor.Outcome, any Error>] = []
        outcomes.reserveCapacity(batch.count)
        var seq: Int64 = 0
        var first: Int64 = 0
        var kept = false
        var shapes = TransactionExecutor.Shapes(
            own: self.own, maxRowBytes: self.maxRowBytes, recording: self.recording(batch))
        do {
            try db.inCachedTransaction(.immediate) {
                if shapes.recorded != nil { first = try Store.latestSeq(db) + 1 }
                for pending in batch {
                    let knownKey =
                        pending.idempotencyKey.map { shapes.keys[TransactionExecutor.Shapes.KeyBytes($0.key)] != nil }
                        ?? true
                    let recordedBefore = shapes.recorded?.count
                    do {
                        var outcome = TransactionExecutor.Outcome(rows: [], replayedSeq: nil)
                        try db.inSavepoint {
                            outcome = try TransactionExecutor.run(pending, db: db, shapes: &shapes)
                            try TransactionExecutor.logPendingInserts(db, &shapes)
                            return .commit
                        }
                        outcomes.append(.success(outcome))
                    } catch {
                        // A statement that failed must not be reused before it is reset: start the next transaction
                        // from GRDB's statement cache (which resets them).
                        shapes.forget()
                        // Its savepoint is rolled back: so are its entries, and the key it kept.
                        if let recordedBefore { shapes.recorded?.removeSubrange(recordedBefore...) }
                        if !knownKey {
                            shapes.keys[TransactionExecutor.Shapes.KeyBytes(pending.idempotencyKey!.key)] = nil
                        }
                        outcomes.append(.failure(error))
                        // Some SQLite errors (disk full, I/O) abort the whole transaction: fail the batch.
                        if !db.isInsideTransaction { throw error }
                    }
                }
                seq = try Store.latestSeq(db)
                try TransactionExecutor.recordKeys(shapes, seq: seq, db: db)
                kept = self.keepForFeed(shapes, first: first, through: seq)
                return .commit
            }
            self.afterCommit.withLock { $0 }?()
        } catch {
            if kept { self.recent.withdraw(first: first, through: seq) }
            outcomes = batch.indices.map { i in
                if i < outcomes.count, case .failure = outcomes[i] { return outcomes[i] }
                return .failure(error)
            }
        }
        var committed = false
        for (pending, outcome) in zip(batch, outcomes) {
            switch outcome {
            case .success(let outcome):
                committed = true
                pending.answer.resume(
                    returning: CommitResult(seq: outcome.replayedSeq ?? seq, rows: outcome.rows))
            case .failure(let error):
                pending.answer.resume(throwing: StoreError.wrap(error, "the transaction failed"))
            }
        }
        if committed { self.onCommit(seq, nil) }
    }
}

/// A queued transaction's outcome: set once by the committer, awaited by whoever queued it (by any number of tasks),
/// before or after it is set.
final class CommitAnswer: Sendable {
    private struct State {
        var outcome: Result<CommitResult, any Error>?
        var waiters: [CheckedContinuation<CommitResult, any Error>] = []
    }

    private let state = Mutex(State())

    /// The transaction committed.
    func resume(returning result: CommitResult) { self.settle(.success(result)) }

    /// The transaction failed.
    func resume(throwing error: any Error) { self.settle(.failure(error)) }

    /// Waits for the outcome.
    var value: CommitResult {
        get async throws {
            try await withCheckedThrowingContinuation { continuation in
                let outcome = self.state.withLock { state -> Result<CommitResult, any Error>? in
                    if state.outcome == nil { state.waiters.append(continuation) }
                    return state.outcome
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        }
    }

    private func settle(_ outcome: Result<CommitResult, any Error>) {
        let waiters = self.state.withLock { state -> [CheckedContinuation<CommitResult, any Error>] in
            precondition(state.outcome == nil, "a transaction is answered once")
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(with: outcome) }
    }
}
