// MARK: - InFlightQueue: from one async producer to one async consumer, at most `capacity` waiting

internal import Synchronization

/// Hands elements from one task to another, in order, holding at most `capacity` of them: ``put(_:)`` waits while
/// that many wait for the consumer. `ApplyStream` queues each transaction for commit as it is read and hands it here;
/// the stream's writer takes them in order and awaits each one's commit, so the answers go out in request order
/// without a task per transaction, and a client that reads no answers stops the reading of its requests.
final class InFlightQueue<Element: Sendable>: Sendable {
    private struct State {
        /// At most `capacity` (64 for `ApplyStream`): taking the first moves the rest, as in `BlockingHandoff`.
        var elements: [Element] = []
        var finished = false
        var consumer: CheckedContinuation<Element?, Never>?
        /// The producer's element and continuation, while the queue is full.
        var producer: (element: Element, continuation: CheckedContinuation<Bool, any Error>)?
    }

    /// What ``put(_:)`` does next.
    private enum PutStep {
        case done(Bool, CheckedContinuation<Element?, Never>?)
        case cancelled
        case wait
    }

    /// What ``next()`` does next.
    private enum NextStep {
        case ready(Element?, CheckedContinuation<Bool, any Error>?)
        case wait
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Queues `element`, waiting while `capacity` elements wait; `false` once the queue is finished (the element is
    /// dropped). Throws `CancellationError` when its task is cancelled, before or while it waits (the element is
    /// dropped).
    func put(_ element: Element) async throws -> Bool {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
                let step = self.state.withLock { state -> PutStep in
                    // Read under the lock that the cancellation handler takes: a task cancelled before this point
                    // stops here, one cancelled after it finds its continuation registered below and resumes it.
                    if Task.isCancelled { return .cancelled }
                    if state.finished { return .done(false, nil) }
                    if let consumer = state.consumer {
                        state.consumer = nil
                        return .done(true, consumer)
                    }
                    if state.elements.count < self.capacity {
                        state.elements.append(element)
                        return .done(true, nil)
                    }
                    state.producer = (element, continuation)
                    return .wait
                }
                switch step {
                case .done(let queued, let consumer):
                    consumer?.resume(returning: element)
                    continuation.resume(returning: queued)
                case .cancelled:
                    continuation.resume(throwing: CancellationError())
                case .wait:
                    break
                }
            }
        } onCancel: {
            // A producer not waiting yet sees `Task.isCancelled` under this lock and does not wait.
            let waiting = self.state.withLock { state -> CheckedContinuation<Bool, any Error>? in
                defer { state.producer = nil }
                return state.producer?.continuation
            }
            waiting?.resume(throwing: CancellationError())
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

    /// The next element, waiting for one; `nil` once finished and empty.
    func next() async -> Element? {
        await withCheckedContinuation { continuation in
            let step = self.state.withLock { state -> NextStep in
                if !state.elements.isEmpty {
                    let element = state.elements.removeFirst()
                    // A waiting producer's element takes the freed place.
                    guard let producer = state.producer else { return .ready(element, nil) }
                    state.producer = nil
                    state.elements.append(producer.element)
                    return .ready(element, producer.continuation)
                }
                if state.finished { return .ready(nil, nil) }
                state.consumer = continuation
                return .wait
            }
            if case .ready(let element, let producer) = step {
                producer?.resume(returning: true)
                continuation.resume(returning: element)
            }
        }
    }
}
