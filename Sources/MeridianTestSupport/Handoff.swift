// MARK: - Handoff: a small bounded channel between two tasks

internal import Synchronization

/// A bounded, single-consumer channel: `send` suspends while `capacity` values wait, so a consumer that stops
/// receiving stops the producer (a test client that "stops reading" really stops its transport reading).
public final class Handoff<Element: Sendable>: Sendable {
    private struct State {
        var buffer: [Element] = []
        var end: Result<Void, any Error>? = nil
        var receiver: CheckedContinuation<Element?, any Error>?
        var senders: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    /// How many values may wait before `send` suspends.
    public let capacity: Int

    /// Creates a channel.
    public init(capacity: Int = 8) {
        self.capacity = max(1, capacity)
    }

    /// Hands `value` to the receiver, or buffers it; suspends while the buffer is full.
    public func send(_ value: Element) async {
        while true {
            let outcome: (receiver: CheckedContinuation<Element?, any Error>?, mustWait: Bool) = self.state.withLock {
                state in
                if let receiver = state.receiver {
                    state.receiver = nil
                    return (receiver, false)
                }
                if state.buffer.count < self.capacity || state.end != nil {
                    if state.end == nil { state.buffer.append(value) }
                    return (nil, false)
                }
                return (nil, true)
            }
            if let receiver = outcome.receiver {
                receiver.resume(returning: value)
                return
            }
            if !outcome.mustWait { return }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = self.state.withLock { state -> Bool in
                    if state.buffer.count < self.capacity || state.end != nil { return true }
                    state.senders.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    /// Ends the channel; the receiver gets the buffered values, then `nil` (or the error).
    public func finish(throwing error: (any Error)? = nil) {
        let (receiver, senders) = self.state.withLock { state in
            if state.end == nil { state.end = error.map { .failure($0) } ?? .success(()) }
            let receiver = state.buffer.isEmpty ? state.receiver : nil
            if receiver != nil { state.receiver = nil }
            defer { state.senders = [] }
            return (receiver, state.senders)
        }
        if let receiver {
            if let error { receiver.resume(throwing: error) } else { receiver.resume(returning: nil) }
        }
        for sender in senders { sender.resume() }
    }

    /// The next value, waiting for one; `nil` at the end.
    public func receive() async throws -> Element? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Element?, any Error>) in
            let (ready, sender): (Result<Element?, any Error>?, CheckedContinuation<Void, Never>?) = self.state.withLock
            { state in
                if !state.buffer.isEmpty {
                    let value = state.buffer.removeFirst()
                    let sender = state.senders.isEmpty ? nil : state.senders.removeFirst()
                    return (.success(value), sender)
                }
                if let end = state.end {
                    switch end {
                    case .success: return (.success(nil), nil)
                    case .failure(let error): return (.failure(error), nil)
                    }
                }
                state.receiver = continuation
                return (nil, nil)
            }
            sender?.resume()
            if let ready { continuation.resume(with: ready) }
        }
    }
}
