// MARK: - StalledWriter: a failed stream whose client takes none of its writes

internal import MeridianCore
internal import NIOCore
internal import NIOPosix
internal import Synchronization

/// Ends a failed stream whose writer is held in a write the client does not take.
///
/// A stream fails through its queue (``ClientOutbox/fail(with:last:)``: a bad request, an expired or revoked
/// credential, no Hello, the fan-out stopping), and its writer ends when it next looks at the queue. A writer held in a
/// write — HTTP/2 flow control, a client that stopped reading — does not look: the stream, its tasks and its socket
/// stayed open for as long as the client kept the connection alive. Once the queue has failed, this cancels the
/// stream's task (the writer's: ``SyncSession`` writes in the task the call runs in) if it is still running `grace`
/// later; the write it is held in then throws. A client that reads is not affected: its writer finishes the write,
/// finds the queue failed and ends the stream with its error, well within `grace`.
final class StalledWriter: @unchecked Sendable {
    // `@unchecked`: `task` is read and written only under `lock`, and is set only while the task runs (``end()``
    // clears it before that task's function returns), so a cancel never reaches a task that has ended.
    private let lock = Mutex(())
    private var task: UnsafeCurrentTask?
    private var timer: Scheduled<Void>?
    private let grace: Duration

    init(grace: Duration) {
        self.grace = grace
    }

    /// From now until ``end()``, the calling task is cancelled when ``queueFailed()`` was called and ``end()`` was
    /// not `grace` later. Call ``end()`` before the task's function returns (a `defer` right after this call).
    func begin() {
        withUnsafeCurrentTask { task in self.lock.withLock { _ in self.task = task } }
    }

    /// The task is no longer cancelled by this.
    func end() {
        self.lock.withLock { _ in
            self.task = nil
            self.timer?.cancel()
            self.timer = nil
        }
    }

    /// The stream's queue failed: its task is cancelled `grace` from now unless it has ended.
    func queueFailed() {
        let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: .nanoseconds(self.grace.nanoseconds)) {
            self.lock.withLock { _ in
                if let task = self.task { task.cancel() }
            }
        }
        let ended = self.lock.withLock { _ -> Bool in
            guard self.task != nil, self.timer == nil else { return true }
            self.timer = timer
            return false
        }
        if ended { timer.cancel() }
    }
}
