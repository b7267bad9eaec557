// MARK: - FanoutThread: the fan-out on a thread of its own

internal import MeridianStore
internal import NIOCore
internal import NIOPosix

/// The fan-out's own thread: an actor whose executor is a NIO event loop that nothing else uses.
///
/// The hub reads the log synchronously after every commit (see ``ChangeFeed``) and then evaluates, diffs and encodes
/// the batch. On the cooperative pool that would hold one of its threads (of two, on a 2-core machine) for as long
/// as SQLite reads; here the wake-up, the read and the processing run on this thread, with no hop between them.
actor FanoutThread {
    private let group: MultiThreadedEventLoopGroup
    private let loop: any EventLoop
    private let hub: Hub
    private let feed: ChangeFeed

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        self.loop.executor.asUnownedSerialExecutor()
    }

    init(hub: Hub, feed: ChangeFeed) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.group = group
        self.loop = group.next()
        self.hub = hub
        self.feed = feed
    }

    /// Processes the log after every element of `commits`, until it ends or the task is cancelled.
    ///
    /// - Throws: The first read or decode error (the caller stops the fan-out), or `CancellationError`.
    func follow(_ commits: CommitSequence) async throws {
        for await _ in commits {
            try Task.checkCancellation()
            try self.hub.catchUp(self.feed)
        }
        try Task.checkCancellation()
    }

    /// Stops the thread; call once ``follow(_:)`` has returned.
    nonisolated func shutdown() async {
        try? await self.group.shutdownGracefully()
    }
}
