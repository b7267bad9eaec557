// MARK: - CommitNotifier

internal import Synchronization

/// Fans the latest `seq` out to the store's commit subscribers, never repeating or going back.
final class CommitNotifier: Sendable {
    struct Subscriber {
        var continuation: AsyncStream<Int64>.Continuation
        var last: Int64 = -1
    }

    /// A subscriber that may handle a commit on the committing thread (``Store/commits(pollInterval:follower:)``).
    struct Follower {
        var id: Int
        var follow: @Sendable (_ seq: Int64, _ rows: Int) -> Bool
    }

    struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextID = 0
        /// At most one: the server's fan-out.
        var follower: Follower?
    }

    /// ``Store/observeCommits(_:)``'s observer, in a struct: a closure that is itself a `Mutex`'s value is stored at
    /// the generic value's abstraction, and every `withLock` rewraps it through its `inout` — a closure that ran
    /// through two more reabstraction thunks after every commit (4,000 deep after 2,000 commits in the benchmark,
    /// 3% of its CPU).
    struct Observer {
        var observe: @Sendable (Int64) -> Void
    }

    private let state = Mutex(State())
    /// Called with each of the store's own commits before its subscribers are offered it (``Store/observeCommits(_:)``).
    private let observer = Mutex<Observer?>(nil)
    /// The subscribers' pollers running (``CommitPoller``).
    let pollers = PollerCounter()

    /// Adds a subscriber; with `follower`, one that is first offered each commit on the committing thread when the
    /// committer is otherwise idle (replacing an earlier follower).
    func add(
        _ continuation: AsyncStream<Int64>.Continuation,
        follower: (@Sendable (_ seq: Int64, _ rows: Int) -> Bool)? = nil
    ) -> Int {
        self.state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = Subscriber(continuation: continuation)
            if let follower { state.follower = Follower(id: id, follow: follower) }
            return id
        }
    }

    func remove(_ id: Int) {
        self.state.withLock { state in
            state.subscribers.removeValue(forKey: id)
            if state.follower?.id == id { state.follower = nil }
        }
    }

    func observe(_ observer: @escaping @Sendable (Int64) -> Void) {
        self.observer.withLock { $0 = Observer(observe: observer) }
    }

    /// After the store's own commit: the observer, then — when the committer is idle (`idleRows`: the rows the
    /// commit's one transaction wrote) — the follower, on this thread, then every subscriber. A follower that handled
    /// the commit (returned `true`) is not woken for it.
    func publish(_ seq: Int64, idleRows: Int?) {
        if let observer = self.observer.withLock({ $0 }) { observer.observe(seq) }
        var handled: Int? = nil
        if let idleRows, let follower = self.state.withLock({ $0.follower }), follower.follow(seq, idleRows) {
            handled = follower.id
        }
        self.state.withLock { state in
            for id in state.subscribers.keys { Self.offer(seq, to: id, waking: id != handled, &state) }
        }
    }

    /// From one subscriber's poller.
    func offer(_ seq: Int64, to id: Int) {
        self.state.withLock { Self.offer(seq, to: id, &$0) }
    }

    /// Records `seq` as offered to `id` and yields it — unless `id` had it, or has handled it already (`waking`
    /// false: a follower that ran for it, which must not be woken for it again, by this offer or a poller's).
    private static func offer(_ seq: Int64, to id: Int, waking: Bool = true, _ state: inout State) {
        guard var subscriber = state.subscribers[id], seq > subscriber.last else { return }
        subscriber.last = seq
        state.subscribers[id] = subscriber
        if waking { subscriber.continuation.yield(seq) }
    }

    func finishAll() {
        let all = self.state.withLock { state in
            let all = Array(state.subscribers.values)
            state.subscribers = [:]
            state.follower = nil
            return all
        }
        for subscriber in all { subscriber.continuation.finish() }
    }
}
