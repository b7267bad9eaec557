// MARK: - Commit notifications

internal import GRDB

extension Store {
    /// The latest `seq`, yielded now and again after every commit — the store's own right away, other processes'
    /// within about `pollInterval`.
    ///
    /// Commits of other processes are detected by polling `PRAGMA data_version` on a dedicated read-only
    /// connection, which costs a few microseconds per poll when nothing changes. Consecutive commits may be
    /// coalesced into one element (only the newest is buffered); every element is a commit boundary. Ending the
    /// iteration (or cancelling its task) stops the polling.
    ///
    /// ```swift
    /// for await seq in store.commits() {
    ///     if case .changes(let batch) = try await store.changes(after: applied) { … }
    /// }
    /// ```
    public func commits(pollInterval: Duration = .milliseconds(5)) -> CommitSequence {
        let (stream, continuation) = AsyncStream<Int64>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = self.notifier.add(continuation)
        let path = self.path
        let writer = self.writer
        let notifier = self.notifier
        let task = Task {
            if let path, let queue = try? DatabaseQueue(path: path, configuration: Configuration().grdb(readonly: true))
            {
                var dataVersion: Int64? = nil
                while !Task.isCancelled {
                    let poll = try? queue.inDatabase { db -> (Int64, Int64?) in
                        let version = try Int64.fetchOne(db, sql: "PRAGMA data_version") ?? 0
                        return (version, version == dataVersion ? nil : try Store.latestSeq(db))
                    }
                    if let poll {
                        dataVersion = poll.0
                        if let seq = poll.1 { notifier.offer(seq, to: id) }
                    }
                    try? await Task.sleep(for: pollInterval)
                }
                try? queue.close()
            } else if let seq = try? await writer.read({ db in try Store.latestSeq(db) }) {
                notifier.offer(seq, to: id)
            }
        }
        continuation.onTermination = { _ in
            task.cancel()
            notifier.remove(id)
        }
        return CommitSequence(stream: stream)
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
