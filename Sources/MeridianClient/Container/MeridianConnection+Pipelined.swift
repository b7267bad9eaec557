// MARK: - MeridianConnection: pipelined transactions over ApplyStream

internal import GRPCCore
public import MeridianCore
internal import MeridianProto
internal import Synchronization

extension MeridianConnection {
    /// Applies transactions over one `ApplyStream` call, up to `window` sent and not yet answered, answered in order.
    ///
    /// The server commits transactions that arrive together in one group commit, and the caller's next transaction
    /// travels while the last one commits: a bulk load runs at the store's pace instead of one round trip and one
    /// flush per transaction. Each transaction still commits, or not, on its own.
    ///
    /// Sending stops at the first rejected transaction. Those already sent are still answered — each one committed or
    /// rejected on its own — and nothing after them is sent, so the answers say exactly what was written.
    ///
    /// ```swift
    /// let answers = try await connection.applyPipelined(chunks) { index, answer in progress.update(done: index + 1) }
    /// ```
    ///
    /// - Parameters:
    ///   - transactions: The transactions, in order.
    ///   - policy: How conflicts with concurrent changes are settled, for every transaction.
    ///   - window: The most transactions sent and not yet answered (at least 1; 1 is one round trip each).
    ///   - seqOnly: Whether each answer is its commit's seq alone (``apply(_:policy:idempotencyKey:seqOnly:)``).
    ///   - answered: Called with each transaction's index and answer, in order, as the answers arrive.
    /// - Returns: The answers of the transactions sent, in order: all of them, or a prefix that ends at or after the
    ///   first rejection.
    /// - Throws: ``ClientError`` `unavailable` when the call fails (the answers received before it were passed to
    ///   `answered`; a transaction sent and not answered may or may not have committed).
    public func applyPipelined(
        _ transactions: [[WriteOperation]], policy: ConflictPolicy = .storeWins, window: Int = 8,
        seqOnly: Bool = false,
        answered: @escaping @Sendable (Int, Result<CommitResult, ClientError>) -> Void = { _, _ in }
    ) async throws(ClientError) -> [Result<CommitResult, ClientError>] {
        guard !transactions.isEmpty else { return [] }
        let credits = SendWindow(size: max(1, window))
        do {
            // Each request is written straight from its operations (no generated message in between).
            return try await self.client.bidirectionalStreaming(
                request: StreamingClientRequest<[UInt8]> { writer in
                    for operations in transactions {
                        guard await credits.acquire() else { return }
                        try await writer.write(
                            ApplyRequestWireEncoding.encode(operations, policy: policy, seqOnly: seqOnly))
                    }
                },
                descriptor: Meridian_V1_Meridian.Method.ApplyStream.descriptor,
                serializer: EncodedMessageSerializer(), deserializer: ApplyResponseDeserializer(), options: .defaults,
                onResponse: { response in
                    // However the answers end, the sender stops waiting.
                    defer { credits.stop() }
                    var answers: [Result<CommitResult, ClientError>] = []
                    for try await message in response.messages {
                        let answer = Self.answer(message)
                        answered(answers.count, answer)
                        answers.append(answer)
                        if case .failure = answer { credits.stop() }
                        credits.release()
                        if answers.count == transactions.count { break }
                    }
                    return answers
                })
        } catch {
            throw ClientError(calling: error)
        }
    }

    /// One `Apply` answer as a result.
    static func answer(_ response: Meridian_V1_ApplyResponse) -> Result<CommitResult, ClientError> {
        switch response.outcome {
        case .result(let result)?:
            do {
                return .success(try CommitResult(result))
            } catch {
                return .failure(
                    ClientError(.internal, "the server answered Apply with an invalid result: \(error)", cause: error))
            }
        case .error(let detail)?:
            return .failure(ClientError(detail))
        case nil:
            return .failure(ClientError(.internal, "the server answered Apply with neither a result nor an error"))
        }
    }
}

/// The sender's credits: how many transactions may be sent and not yet answered; stopped after a rejection.
private final class SendWindow: Sendable {
    private struct State {
        var credits: Int
        var stopped = false
        var waiter: CheckedContinuation<Bool, Never>?
    }

    private let state: Mutex<State>

    init(size: Int) { self.state = Mutex(State(credits: size)) }

    /// Takes a credit, waiting for one; `false` once stopped (or cancelled).
    func acquire() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer = self.state.withLock { state -> Bool? in
                    if state.stopped || Task.isCancelled { return false }
                    if state.credits > 0 {
                        state.credits -= 1
                        return true
                    }
                    state.waiter = continuation
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            self.stop()
        }
    }

    /// Gives a credit back (an answer arrived).
    func release() {
        let waiter = self.state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if let waiter = state.waiter, !state.stopped {
                state.waiter = nil
                return waiter
            }
            state.credits += 1
            return nil
        }
        waiter?.resume(returning: true)
    }

    /// Sends no more: a waiting sender is told so.
    func stop() {
        let waiter = self.state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.stopped = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: false)
    }
}
