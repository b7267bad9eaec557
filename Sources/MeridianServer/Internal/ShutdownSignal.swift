// MARK: - ShutdownSignal: calls that end when the server begins its graceful shutdown

import Synchronization

/// Tells the calls that would otherwise hold a graceful shutdown open that it began: a graceful shutdown waits for
/// every open call, and an `ApplyStream` waits on its client's next request for as long as the client keeps it open.
final class ShutdownSignal: Sendable {
    private struct State {
        var begun = false
        var nextKey = 0
        var handlers: [Int: @Sendable () -> Void] = [:]
    }

    private let state = Mutex(State())

    /// Calls `handler` once when the shutdown begins — at once when it already has. Returns a key for
    /// ``unregister(_:)``.
    func register(_ handler: @escaping @Sendable () -> Void) -> Int {
        let key = self.state.withLock { state -> Int? in
            guard !state.begun else { return nil }
            state.nextKey += 1
            state.handlers[state.nextKey] = handler
            return state.nextKey
        }
        guard let key else {
            handler()
            return 0
        }
        return key
    }

    /// Removes a handler that has not run (nothing when it ran).
    func unregister(_ key: Int) {
        _ = self.state.withLock { $0.handlers.removeValue(forKey: key) }
    }

    /// Runs every handler registered (once), and from now on runs new ones at once.
    func begin() {
        let handlers = self.state.withLock { state -> [@Sendable () -> Void] in
            state.begun = true
            defer { state.handlers = [:] }
            return Array(state.handlers.values)
        }
        for handler in handlers { handler() }
    }
}
