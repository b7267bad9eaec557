// MARK: - Commit notifications

internal import Foundation
internal import GRDB
internal import MeridianCore
internal import Synchronization

extension Store {
    /// The latest `seq`, yielded now and again after every commit — the store's own right away, other processes'
    /// within about `pollInterval`.
    ///
    /// Commits of other processes are detected by polling `PRAGMA data_version` on a dedicated read-only
    /// connection, on a thread of its own (``CommitPoller``), which costs a few microseconds per poll when nothing
    /// changes; on Linux, while no process writes the store's files, the poller waits for the next write (inotify)
    /// instead, polling once a second at the least. Consecutive commits may be coalesced into one element (only the
    /// newest is buffered); every element is a commit boundary. Ending the iteration (or cancelling its task) stops
    /// the polling.
    ///
    /// ```swift
    /// for await seq in store.commits() {
    ///     if case .changes(let batch) = try await store.changes(after: applied) { … }
    /// }
    /// ```
    public func commits(pollInterval: Duration = .milliseconds(5)) -> CommitSequence {
        self.commits(pollInterval: pollInterval, follower: nil)
    }

    /// ``commits(pollInterval:)``, with `follower` first offered each of the store's own commits on the committing
    /// thread, right after the commit, whenever the committer is otherwise idle: the commit held one transaction and
    /// no other waits; it is given the commit's seq and how many rows that transaction wrote. A follower that returns
    /// `true` has handled the commit, and the sequence does not yield it (it yields every commit the follower
    /// declined, and other processes' commits). The server's fan-out follows this way (at most one follower per
    /// store: a new one replaces the last). While `follower` runs, no other commit starts: it must be short, and must
    /// not wait for the store's writer.
    ///
    /// `idlePoll`: how often the poller polls at the least while no process writes the store's files (it then waits
    /// for a write instead of polling every `pollInterval`; see ``CommitPoller``).
    package func commits(
        pollInterval: Duration, idlePoll: Duration = .seconds(1),
        follower: (@Sendable (_ seq: Int64, _ rows: Int) -> Bool)?
    ) -> CommitSequence {
        let (stream, continuation) = AsyncStream<Int64>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = self.notifier.add(continuation, follower: follower)
        let notifier = self.notifier
        if let path = self.path,
            let queue = try? DatabaseQueue(path: path, configuration: Configuration().grdb(readonly: true))
        {
            let poller = CommitPoller(
                queue: queue, path: path, interval: pollInterval, idlePoll: idlePoll, counter: notifier.pollers
            ) { seq in
                notifier.offer(seq, to: id)
            }
            continuation.onTermination = { _ in
                poller.stop()
                notifier.remove(id)
            }
        } else {
            let writer = self.writer
            let task = Task {
                if let seq = try? await writer.read({ db in try Store.latestSeq(db) }) { notifier.offer(seq, to: id) }
            }
            continuation.onTermination = { _ in
                task.cancel()
                notifier.remove(id)
            }
        }
        return CommitSequence(stream: stream)
    }
}

/// Polls `PRAGMA data_version` on a read-only connection of its own, on a thread of its own, every `interval`, and
/// hands the latest seq to `found` at once and whenever another connection has committed since the last poll.
///
/// A thread that sleeps on a condition, not a task: a task's `Task.sleep` woke a dispatch timer thread and then a
/// thread of the cooperative pool for every poll, and each poll prepared its statement anew — an idle server spent
/// 32–40 ms of CPU a second, nearly all of it polling every 5 ms; 8–12 ms with this thread (docs/store.md). Here a
/// poll is one wake-up and one cached statement.
///
/// And it polls only while the store's files are being written (on Linux, a file store, an `interval` under
/// `idlePoll`): once nothing was written to them for ``activeWindow`` — no commit of any process, this one's
/// included — it waits for the next write (``StoreFileWatch``), or `idlePoll` at most, instead of waking every
/// `interval`. A commit becomes visible after its write (and flush), so every write starts another window of polls
/// every `interval`: a commit is seen within about `interval` of becoming visible unless it lands more than
/// ``activeWindow`` after its last write (a flush that slow), and then within `idlePoll`.
final class CommitPoller: Sendable {
    /// How long the poller keeps polling every interval after the store's files were last written, or a commit seen.
    static let activeWindow: Duration = .seconds(1)

    private let condition = NSCondition()
    private nonisolated(unsafe) var stopped = false  // guarded by `condition`
    #if canImport(Glibc)
        private let watch: StoreFileWatch?
    #endif

    /// - Parameters:
    ///   - path: The store file, watched for writes while nothing changes (`nil`: poll every `interval` throughout).
    ///   - idlePoll: How often to poll at the least while the store's files are not written.
    ///   - counter: Counts the running pollers' threads (one more until this one's ends) and their polls.
    init(
        queue: DatabaseQueue, path: String?, interval: Duration, idlePoll: Duration = .seconds(1),
        counter: PollerCounter, found: @escaping @Sendable (Int64) -> Void
    ) {
        counter.value.add(1, ordering: .relaxed)
        let seconds = Double(max(0, interval.nanoseconds)) / 1e9
        #if canImport(Glibc)
            let watch = interval < idlePoll ? path.flatMap { StoreFileWatch(path: $0) } : nil
            self.watch = watch
        #endif
        let thread = Thread { [self] in
            defer {
                try? queue.close()
                counter.value.subtract(1, ordering: .relaxed)
            }
            var dataVersion: Int64? = nil
            var lastActivity = ContinuousClock.now
            #if canImport(Glibc)
                var watch = watch
            #endif
            while true {
                counter.polls.add(1, ordering: .relaxed)
                let poll = try? queue.inDatabase { db -> (Int64, Int64?) in
                    let statement = try db.cachedStatement(sql: "PRAGMA data_version")
                    let version = try Int64.fetchOne(statement) ?? 0
                    return (version, version == dataVersion ? nil : try Store.latestSeq(db))
                }
                if let poll {
                    if dataVersion != nil, poll.0 != dataVersion { lastActivity = .now }
                    dataVersion = poll.0
                    if let seq = poll.1 { found(seq) }
                }
                #if canImport(Glibc)
                    if let files = watch {
                        if files.drain() { lastActivity = .now }
                        if lastActivity.duration(to: .now) >= Self.activeWindow {
                            switch files.wait(timeout: idlePoll) {
                            case .stopped: return
                            case .written: lastActivity = .now
                            case .timeout: break
                            case .failed: watch = nil  // polled every interval from now on
                            }
                            guard !self.isStopped else { return }
                            continue
                        }
                    }
                #endif
                guard self.sleep(seconds) else { return }
            }
        }
        thread.name = "meridian.commits"
        thread.start()
    }

    private var isStopped: Bool {
        self.condition.lock()
        defer { self.condition.unlock() }
        return self.stopped
    }

    /// Sleeps for `seconds`, or until stopped; `false` once stopped.
    private func sleep(_ seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        self.condition.lock()
        defer { self.condition.unlock() }
        while !self.stopped {
            if !self.condition.wait(until: deadline) { return !self.stopped }
        }
        return false
    }

    /// Ends the polling: the thread wakes (at once, not after its interval), closes its connection and ends.
    func stop() {
        self.condition.lock()
        self.stopped = true
        self.condition.signal()
        self.condition.unlock()
        #if canImport(Glibc)
            self.watch?.stop()
        #endif
    }
}

/// The latest committed `seq`, after each commit (see ``Store/commits(pollInterval:)``).
public struct CommitSequence: AsyncSequence, Sendable {
    public typealias Element = Int64
    let stream: AsyncStream<Int64>

    /// The sequence's iterator.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<Int64>.Iterator
        public mutating func next() async -> Int64? { await self.base.next() }

        /// The next element, on the caller's actor (no hop to the global executor and back).
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Int64? {
            await self.base.next(isolation: actor)
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: self.stream.makeAsyncIterator())
    }
}

/// How many of a store's ``CommitPoller`` threads are running, and how many polls they made.
final class PollerCounter: Sendable {
    let value = Atomic<Int>(0)
    let polls = Atomic<Int>(0)
}

extension Store {
    /// How many threads polling for other processes' commits run for this store's ``commits(pollInterval:)``
    /// subscriptions: one per subscription on a file store, until it ends (tests check that none outlives it).
    package var runningCommitPollers: Int { self.notifier.pollers.value.load(ordering: .relaxed) }

    /// How many polls of `PRAGMA data_version` this store's pollers made so far (tests check that an idle one waits).
    package var commitPolls: Int { self.notifier.pollers.polls.load(ordering: .relaxed) }
}

extension Store {
    /// Calls `observer` with the `seq` of each of this store's own commits as soon as the commit is durable, on the
    /// committing thread, before any ``commits(pollInterval:)`` subscriber is offered it (replacing an earlier
    /// observer). `meridian-bench server` starts its commit→client latencies there; the observer must be quick.
    package func observeCommits(_ observer: @escaping @Sendable (Int64) -> Void) {
        self.notifier.observe(observer)
    }
}
