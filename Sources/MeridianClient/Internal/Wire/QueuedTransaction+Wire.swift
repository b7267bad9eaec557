// MARK: - QueuedTransaction ↔ the wire
//
// A queued transaction becomes an `ApplyRequest` when it is sent or persisted (the cache file keeps the request's
// bytes), and a persisted request becomes a queued transaction again at start-up.

internal import MeridianCore
internal import MeridianProto

extension Meridian_V1_ApplyRequest {
    /// The `Apply` for a queued transaction: its operations, policy, local number (as the client tag) and
    /// idempotency key.
    init(_ transaction: QueuedTransaction) {
        self.init()
        self.operations = transaction.operations.map(Meridian_V1_Operation.init)
        self.conflictPolicy = Meridian_V1_ConflictPolicy(transaction.policy)
        self.clientTag = String(transaction.id)
        self.idempotencyKey = transaction.idempotencyKey
    }
}

extension QueuedTransaction {
    /// A transaction restored from the cache file.
    ///
    /// - Parameters:
    ///   - id: Its local number.
    ///   - request: The `Apply` it was saved as.
    ///   - commitSeq: The seq the server committed it at, if it answered.
    /// - Throws: ``ProtoConversionError`` when the request does not decode.
    init(id: Int64, request: Meridian_V1_ApplyRequest, commitSeq: Int64?) throws(ProtoConversionError) {
        self.init(
            id: id, operations: try request.decodedOperations(), policy: try ConflictPolicy(request.conflictPolicy),
            idempotencyKey: request.idempotencyKey, phase: commitSeq.map { .committed($0) } ?? .queued)
    }
}

extension ApplyOutcome {
    /// The client form of the server's answer to an `Apply`.
    init(_ response: Meridian_V1_ApplyResponse) {
        switch response.outcome {
        case .result(let result)?:
            self = .committed(seq: result.seq)
        case .error(let detail)?:
            self = .rejected(ClientError(detail))
        case nil:
            self = .rejected(ClientError(.internal, "the server answered Apply with neither a result nor an error"))
        }
    }
}
