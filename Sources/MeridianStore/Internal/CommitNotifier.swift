// MARK: - CommitNotifier

internal import Synchronization

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
    /// Called with each of the store's own commits before its subscribers are offered it (``Store/observeCommits(_:)``).
    private let observer = Mutex<(@Sendable (Int64) -> Void)?>(nil)
    /// The subscribers' pollers running (``CommitPoller``).
    let pollers = PollerCounter()

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

    func observe(_ observer: @escaping @Sendable (Int64) -> Void) {
        self.observer.withLock { $0 = observer }
    }

    /// After the store's own commit: the observer, then every subscriber.
    func publish(_ seq: Int64) {
        if let observer = self.observer.withLock({ $0 }) { observer(seq) }
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
