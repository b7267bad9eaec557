// MARK: - ReadGate: a bounded wait for one of the store's readers

internal import Synchronization

/// Admits at most as many reads as the store has readers, in arrival order, and lets a read wait only so long.
///
/// GRDB's pool blocks a thread while every reader is busy, with no limit; a snapshot that streams to a slow client
/// holds its reader for as long as the client takes. In front of the pool, this gate makes the others wait without a
/// thread, and fail after the store's read timeout instead of queuing without bound.
final class ReadGate: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var available: Int
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
        /// The timeout of each waiter that has one, cancelled when it gets its permit: a satisfied wait's timer would
        /// otherwise sleep out the whole timeout, holding a task (about 2 KiB) per read that ever waited.
        var timers: [UInt64: Task<Void, Never>] = [:]
        /// Timer tasks not yet ended, cancelled or not (for tests).
        var runningTimers = 0
    }

    /// How many reads may run at once.
    let permits: Int
    private let state: Mutex<State>

    init(permits: Int) {
        self.permits = max(1, permits)
        self.state = Mutex(State(available: max(1, permits)))
    }

    /// Waits for a permit, at most `timeout` (`nil`: as long as it takes).
    ///
    /// - Returns: Whether the permit was given (then ``release()`` it), `false` after the timeout.
    func acquire(timeout: Duration?) async -> Bool {
        let taken = self.state.withLock { state -> Bool in
            guard state.available > 0, state.waiters.isEmpty else { return false }
            state.available -= 1
            return true
        }
        if taken { return true }
        return await withCheckedContinuation { continuation in
            let id = self.state.withLock { state -> UInt64? in
                if state.available > 0, state.waiters.isEmpty {
                    state.available -= 1
                    return nil
                }
                state.nextID += 1
                state.waiters.append(Waiter(id: state.nextID, continuation: continuation))
                return state.nextID
            }
            guard let id else {
                continuation.resume(returning: true)
                return
            }
            if let timeout {
                self.state.withLock { $0.runningTimers += 1 }
                let timer = Task {
                    try? await Task.sleep(for: timeout)
                    self.expire(id)
                    self.state.withLock { $0.runningTimers -= 1 }
                }
                let waiting = self.state.withLock { state -> Bool in
                    guard state.waiters.contains(where: { $0.id == id }) else { return false }
                    state.timers[id] = timer
                    return true
                }
                if !waiting { timer.cancel() }
            }
        }
    }

    /// Gives a permit back: to the first waiter, if any.
    func release() {
        let (waiter, timer) = self.state.withLock { state -> (Waiter?, Task<Void, Never>?) in
            if state.waiters.isEmpty {
                state.available += 1
                return (nil, nil)
            }
            let waiter = state.waiters.removeFirst()
            return (waiter, state.timers.removeValue(forKey: waiter.id))
        }
        timer?.cancel()
        waiter?.continuation.resume(returning: true)
    }

    /// How many reads wait for a permit (for tests).
    var waitingCount: Int { self.state.withLock { $0.waiters.count } }

    /// How many timeouts are running: waiting for their time, or cancelled and not yet ended (for tests).
    var runningTimerCount: Int { self.state.withLock { $0.runningTimers } }

    /// Ends a wait that ran out of time (if it is still waiting).
    private func expire(_ id: UInt64) {
        let waiter = self.state.withLock { state -> Waiter? in
            state.timers[id] = nil
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        waiter?.continuation.resume(returning: false)
    }
}
