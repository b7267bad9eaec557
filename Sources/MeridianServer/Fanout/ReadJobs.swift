// MARK: - ReadJobs: a stream's reads of its subscriptions' bases

import Synchronization

/// The reads a `Sync` stream owes its pending registrations (``Hub/read(_:)``), run one at a time in the order the
/// hub asks for them, in a task that lives only while there is a read to run.
///
/// A stream used to run them from a loop over an `AsyncStream`, in a task as long-lived as the stream: an idle
/// stream held that task and the slab its wait kept (about 2.4 KiB per idle client in `meridian-bench server --case
/// regions`, heaptrack). Reads are rare — a subscription's first snapshot, a resume, a replacement, a re-snapshot —
/// so starting a task for a run of them costs little; an idle stream holds none.
final class ReadJobs: Sendable {
    private struct State {
        var queue: [Int] = []
        /// The task running the queue, while it has reads left.
        var running: Task<Void, Never>?
        /// Set by ``finish()`` and ``stop()``: no read runs after it (those queued are dropped).
        var finished = false
    }

    private let state = Mutex(State())
    private let read: @Sendable (Int) async -> Void

    /// - Parameter read: Runs one job (the hub's `read(_:)` of a pending registration); called one at a time.
    init(read: @escaping @Sendable (Int) async -> Void) {
        self.read = read
    }

    /// Queues a read; starts a task to run the queue unless one is running.
    func yield(_ job: Int) {
        self.state.withLock { state in
            guard !state.finished else { return }
            state.queue.append(job)
            // Set under the lock, so the task's first look at the queue comes after it: the task clears it itself,
            // under the same lock, when it finds the queue empty.
            if state.running == nil { state.running = Task { await self.runQueue() } }
        }
    }

    /// No more reads: the hub forgot the client. Those queued are dropped (each would find its registration gone);
    /// a read running ends on its own.
    func finish() {
        self.state.withLock { state in
            state.finished = true
            state.queue = []
        }
    }

    /// Ends the jobs when the stream ends: drops those queued, cancels the one running and waits for it, so that no
    /// read outlives the stream's handler.
    func stop() async {
        let running = self.state.withLock { state in
            state.finished = true
            state.queue = []
            return state.running
        }
        running?.cancel()
        await running?.value
    }

    private func runQueue() async {
        while let job = self.next() { await self.read(job) }
    }

    private func next() -> Int? {
        self.state.withLock { state in
            guard !state.finished, !state.queue.isEmpty else {
                state.running = nil
                return nil
            }
            return state.queue.removeFirst()
        }
    }
}
