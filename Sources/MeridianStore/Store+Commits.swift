// MARK: - Commit notifications

internal import GRDB
internal import Synchronization

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
            if let path, let queue = try? DatabaseQueue(path: path, configuration: Configuration().grdb(readonly: true)) {
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
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: self.stream.makeAsyncIterator())
    }
}

/// Fans the latest `seq` out to the store's commit subscribers, never repeating or going back.
final class CommitNotifier: Sendable {
    struct Subscriber {
        var continuation: AsyncStream<Int64>.Continuation
        var last: Int64 = -1
    }

    struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())

    func add(_ continuation: AsyncStream<Int64>.Continuation) -> Int {
        self.state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = Subscriber(continuation: continuation)
            return id
        }
    }

    func remove(_ id: Int) {
        _ = self.state.withLock { $0.subscribers.removeValue(forKey: id) }
    }

    /// After the store's own commit: every subscriber.
    func publish(_ seq: Int64) {
        self.state.withLock { state in
            for id in state.subscribers.keys { Self.offer(seq, to: id, &state) }
        }
    }

    /// From one subscriber's poller.
    func offer(_ seq: Int64, to id: Int) {
        self.state.withLock { Self.offer(seq, to: id, &$0) }
    }

    private static func offer(_ seq: Int64, to id: Int, _ state: inout State) {
        guard var subscriber = state.subscribers[id], seq > subscriber.last else { return }
        subscriber.last = seq
        state.subscribers[id] = subscriber
        subscriber.continuation.yield(seq)
    }

    func finishAll() {
        let all = self.state.withLock { state in
            let all = Array(state.subscribers.values)
            state.subscribers = [:]
            return all
        }
        for subscriber in all { subscriber.continuation.finish() }
    }
}
