// MARK: - BlockingHandoff: from a blocking producer thread to an async consumer, a few elements at a time

internal import Dispatch
internal import MeridianCore
internal import Synchronization

/// Hands elements from a thread that may block (a store reader inside its read transaction) to an async consumer (a
/// call's writer), holding at most `capacity` of them: the producer waits while that many wait, so a consumer that
/// stops reading stops the producer instead of growing a buffer.
final class BlockingHandoff<Element: Sendable>: Sendable {
    /// What ``put(_:timeout:)`` found.
    enum Put {
        /// The element was queued.
        case queued
        /// The consumer is gone (``close()``): stop producing.
        case closed
        /// The consumer took nothing for the whole timeout.
        case stalled
    }

    /// What ``put(_:timeout:)`` does next.
    private enum Step {
        case done(Put, CheckedContinuation<Element?, Never>?)
        case wait(DispatchSemaphore)
    }

    private struct State {
        var elements: [Element] = []
        var finished = false
        var closed = false
        var consumer: CheckedContinuation<Element?, Never>?
        var producer: DispatchSemaphore?
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Queues `element`, blocking the calling thread (never a cooperative pool's) while `capacity` elements wait.
    func put(_ element: Element, timeout: Duration) -> Put {
        while true {
            let step = self.state.withLock { state -> Step in
                if state.closed || state.finished { return .done(.closed, nil) }
                if let consumer = state.consumer {
                    state.consumer = nil
                    return .done(.queued, consumer)
                }
                if state.elements.count < self.capacity {
                    state.elements.append(element)
                    return .done(.queued, nil)
                }
                let semaphore = state.producer ?? DispatchSemaphore(value: 0)
                state.producer = semaphore
                return .wait(semaphore)
            }
            switch step {
            case .done(let put, let consumer):
                consumer?.resume(returning: element)
                return put
            case .wait(let semaphore):
                if semaphore.wait(timeout: .now() + .nanoseconds(Int(clamping: timeout.nanoseconds))) == .timedOut {
                    let full = self.state.withLock { state -> Bool in
                        if state.producer === semaphore { state.producer = nil }
                        return !state.closed && state.elements.count >= self.capacity
                    }
                    if full { return .stalled }
                }
            }
        }
    }

    /// Ends the elements: the consumer gets `nil` after the queued ones.
    func finish() {
        let consumer = self.state.withLock { state -> CheckedContinuation<Element?, Never>? in
            state.finished = true
            defer { state.consumer = nil }
            return state.elements.isEmpty ? state.consumer : nil
        }
        consumer?.resume(returning: nil)
    }

    /// The consumer stops reading: a waiting or later ``put(_:timeout:)`` returns `.closed`.
    func close() {
        self.state.withLock { state in
            state.closed = true
            state.elements = []
            state.producer?.signal()
            state.producer = nil
        }
    }

    /// The next element, waiting for one; `nil` once finished and empty.
    func next() async -> Element? {
        await withCheckedContinuation { continuation in
            let ready = self.state.withLock { state -> Element?? in
                if !state.elements.isEmpty {
                    let element = state.elements.removeFirst()
                    state.producer?.signal()
                    state.producer = nil
                    return .some(element)
                }
                if state.finished || state.closed { return .some(nil) }
                state.consumer = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
