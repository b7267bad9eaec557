// MARK: - FanoutThread: the fan-out on a thread of its own, or on the committing one

internal import CoreMetrics
internal import MeridianCore
internal import MeridianStore
internal import NIOCore
internal import NIOPosix
internal import Synchronization

/// The fan-out's own thread: an actor whose executor is a NIO event loop that nothing else uses.
///
/// The hub reads the log synchronously after every commit (see ``ChangeFeed``) and then evaluates, diffs and encodes
/// the batch. On the cooperative pool that would hold one of its threads (of two, on a 2-core machine) for as long
/// as SQLite reads; here the wake-up, the read and the processing run on this thread, with no hop between them.
///
/// A commit that leaves the store's committer idle (one transaction, none waiting) is offered to the fan-out on the
/// committing thread first (``followInline(_:rows:)``): when no run is under way and the commit's fan-out looks short
/// — the last run's cost per row change times the commit's rows — it runs there, right after the commit, and this
/// thread is not woken: one thread wake-up less between a lone commit and its clients. Runs never overlap (a gate
/// serializes them), so the hub still sees one fan-out at a time.
actor FanoutThread {
    private struct Gate {
        /// Set when the fan-out stops: no run starts afterwards (the feed is closed next).
        var closed = false
        /// A run on the committing thread that failed: this thread throws it (and the hub stops) at its next wake.
        var failure: (any Error)?
    }

    private let group: MultiThreadedEventLoopGroup
    private let loop: any EventLoop
    private let hub: Hub
    private let feed: ChangeFeed
    private let gate = Mutex(Gate())
    /// How long the last run that found commits took per row change it found, in nanoseconds; before any such run,
    /// ``firstEstimatePerRow``.
    private let lastRunPerRow = Atomic<Int64>(FanoutThread.firstEstimatePerRow)
    /// Runs on the committing thread when its estimate is less (``ServerConfiguration/inlineFanoutBudget``).
    private let inlineBudget: Int64

    /// The cost per row change assumed until a run has been timed: about what a small commit's run costs per row to
    /// one client (a read of the commit and a Batch, well over 10 µs a row for a few rows; a large commit's costs a
    /// couple of µs a row). Without it a fresh server's first commit looked free whatever its size: the first
    /// 20,000-row `Apply` of a new server fanned out on the committing thread, and this thread, woken meanwhile by the
    /// poll of the file's data version, waited on the gate for the whole run (perf: the kernel spinning on its
    /// futex). With the default budget a first commit of up to 12 rows still runs inline.
    static let firstEstimatePerRow: Int64 = 20_000

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        self.loop.executor.asUnownedSerialExecutor()
    }

    init(hub: Hub, feed: ChangeFeed) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.group = group
        self.loop = group.next()
        self.hub = hub
        self.feed = feed
        self.inlineBudget = hub.configuration.inlineFanoutBudget.nanoseconds
    }

    /// Processes the log after every element of `commits`, until it ends or the task is cancelled.
    ///
    /// - Throws: The first read or decode error (the caller stops the fan-out), or `CancellationError`.
    func follow(_ commits: CommitSequence) async throws {
        for await _ in commits {
            try Task.checkCancellation()
            try self.gate.withLock { gate throws in
                if let failure = gate.failure { throw failure }
                guard !gate.closed else { return }
                try self.run()
            }
        }
        try Task.checkCancellation()
    }

    /// Runs the fan-out on the calling thread — the committing one, right after a commit of `rows` row changes —
    /// unless a run is under way, the fan-out has stopped, or the run's estimate (the last run that found commits,
    /// per row change, times `rows`) reaches the budget (``ServerConfiguration/inlineFanoutBudget``): no other commit
    /// starts while this one runs, so a costly fan-out — a large commit's, or one to many clients — stays on this
    /// thread, in parallel with the next commit. (The estimate was the last run's time alone, which let the first
    /// large commit after small ones hold the committer for its whole fan-out: 130 ms for a 20,000-row `Apply`.)
    ///
    /// - Returns: `true` when it ran (the commit needs no wake-up of this thread); `false` leaves it to this thread.
    ///   A run that fails returns `false`, and this thread, woken for the commit, throws its error.
    nonisolated func followInline(_ seq: Int64, rows: Int) -> Bool {
        let (estimate, overflow) = self.lastRunPerRow.load(ordering: .relaxed).multipliedReportingOverflow(
            by: Int64(max(1, rows)))
        guard !overflow, estimate < self.inlineBudget else { return false }
        let ran = self.gate.withLockIfAvailable { gate -> Bool in
            guard !gate.closed, gate.failure == nil else { return false }
            do {
                try self.run()
                self.hub.metrics.fanoutInlineRuns.increment()
                return true
            } catch {
                gate.failure = error
                return false
            }
        }
        return ran ?? false
    }

    /// One run of the fan-out, timed per row change when it found commits to process (a run woken for commits that
    /// an earlier one already read costs next to nothing, and would let a costly fan-out onto the committing thread);
    /// called with the gate held.
    private nonisolated func run() throws {
        let start = ContinuousClock.now
        let rows = try self.hub.catchUp(self.feed)
        if rows > 0 {
            let took = (ContinuousClock.now - start).nanoseconds
            self.lastRunPerRow.store(took / Int64(rows), ordering: .relaxed)
        }
    }

    /// Ends the runs: none starts after this returns (a run under way is waited for), so the feed may be closed.
    nonisolated func close() {
        self.gate.withLock { $0.closed = true }
    }

    /// Stops the thread; call once ``follow(_:)`` has returned.
    nonisolated func shutdown() async {
        try? await self.group.shutdownGracefully()
    }
}
