// MARK: - Sending raw bytes over gRPC and judging the answer

internal import GRPCCore
internal import MeridianProto
internal import SwiftProtobuf

/// Passes bytes through unchanged, so a wire input reaches the server exactly as generated.
struct RawSerializer: MessageSerializer, MessageDeserializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Bytes { Bytes(message) }

    func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> [UInt8] {
        serializedMessageBytes.withUnsafeBytes { Array($0) }
    }
}

/// How one wire input ended.
enum WireOutcome: Equatable {
    /// A valid answer (`kind` names it, e.g. `answered Apply`).
    case acceptable(String)
    /// A broken promise, in words.
    case failure(String)
}

/// Sends wire inputs on one client and judges each outcome against the protocol's promises: a non-OK status must
/// carry one of the protocol's codes and a message (and, when present, an `ErrorDetail` that is not `INTERNAL`);
/// an OK answer must decode and be complete; nothing may take longer than `timeout`.
struct WireExecutor<Transport: ClientTransport> {
    let client: GRPCClient<Transport>
    let timeout: Duration
    /// The entity the Sync probe subscribes to.
    let probeEntity: String

    static var probeID: String { "fuzz-probe" }

    /// Sends `input` and judges what comes back.
    func run(_ input: WireInput) async -> WireOutcome {
        var options = CallOptions.defaults
        options.timeout = self.timeout
        do {
            switch input.method {
            case .sync:
                return try await self.sync(input.messages, options: options)
            case .applyStream:
                return try await self.applyStream(input.messages, options: options)
            case .query:
                return try await self.query(input.messages.first ?? [], options: options)
            case .apply, .getSchema:
                let bytes = try await self.client.unary(
                    request: ClientRequest(message: input.messages.first ?? []), descriptor: input.method.descriptor,
                    serializer: RawSerializer(), deserializer: RawSerializer(), options: options
                ) { response in try response.message }
                if input.method == .getSchema {
                    let schema = try Meridian_V1_GetSchemaResponse(serializedBytes: bytes)
                    return schema.fingerprint.isEmpty
                        ? .failure("GetSchema answered without a fingerprint") : .acceptable("answered GetSchema")
                }
                return Self.judge(try Meridian_V1_ApplyResponse(serializedBytes: bytes))
            }
        } catch let error as RPCError {
            return Self.judge(error)
        } catch let error as SwiftProtobuf.BinaryDecodingError {
            return .failure("the server's answer does not decode: \(error)")
        } catch {
            return .failure("unexpected error from the call: \(error)")
        }
    }

    // MARK: - Judging

    /// An error status: clear when it is one of the protocol's codes with a message and, if there is one, a detail
    /// that is not INTERNAL.
    static func judge(_ error: RPCError) -> WireOutcome {
        let detail = error.errorDetail
        switch error.code {
        case .deadlineExceeded:
            return .failure("no answer before the deadline (a hang): \(error.message)")
        case .unavailable where detail?.code != .shuttingDown:
            return .failure("the server became unreachable (crashed or closed the connection): \(error.message)")
        case .invalidArgument, .resourceExhausted, .failedPrecondition, .notFound, .alreadyExists, .aborted,
            .unavailable:
            break
        default:
            return .failure("an unclear error status \(error.code): \"\(error.message)\"")
        }
        guard !error.message.isEmpty else { return .failure("status \(error.code) with an empty message") }
        if let detail {
            if detail.code == .internal || detail.code == .unspecified {
                return .failure("status \(error.code) carries an \(detail.code) detail: \"\(detail.message)\"")
            }
            if detail.message.isEmpty { return .failure("status \(error.code): its ErrorDetail has no message") }
            return .acceptable("rejected \(error.code) \(detail.code)")
        }
        return .acceptable("rejected \(error.code)")
    }

    /// An Apply answer: a commit, or a rejection with a clear detail.
    static func judge(_ response: Meridian_V1_ApplyResponse) -> WireOutcome {
        switch response.outcome {
        case .result(let result):
            // A transaction with no operation commits nothing and is answered with seq 0 and no rows.
            if result.rows.isEmpty { return .acceptable("answered Apply empty") }
            return result.seq > 0
                ? .acceptable("answered Apply committed") : .failure("a commit with seq \(result.seq)")
        case .error(let detail):
            if detail.code == .internal || detail.code == .unspecified || detail.message.isEmpty {
                return .failure("Apply rejected with an unclear detail \(detail.code): \"\(detail.message)\"")
            }
            return .acceptable("answered Apply \(detail.code)")
        case nil:
            return .failure("an ApplyResponse with neither result nor error")
        }
    }

    // MARK: - Calls

    private func sync(_ messages: [[UInt8]], options: CallOptions) async throws -> WireOutcome {
        var probe = Meridian_V1_Subscribe()
        probe.subscriptionID = Self.probeID
        probe.fetch = Meridian_V1_FetchRequest(entity: self.probeEntity, predicate: "id == \"fuzz-probe-none\"")
        var probeRequest = Meridian_V1_SyncRequest()
        probeRequest.subscribe = probe
        let all = messages + [WireGenerator.encode(probeRequest)]
        let expected = Self.subscriptionsToAnswer(messages)
        return try await self.client.bidirectionalStreaming(
            request: StreamingClientRequest(of: [UInt8].self) { writer in
                for message in all { try await writer.write(message) }
            },
            descriptor: WireMethod.sync.descriptor, serializer: RawSerializer(), deserializer: RawSerializer(),
            options: options
        ) { response -> WireOutcome in
            var answered: Set<String> = []
            for try await bytes in response.messages {
                let message = try Meridian_V1_SyncResponse(serializedBytes: bytes)
                switch message.kind {
                case .subscriptionError(let error):
                    if error.error.code == .internal || error.error.code == .unspecified || error.error.message.isEmpty
                    {
                        return .failure(
                            "SubscriptionError '\(error.subscriptionID)' is unclear: \(error.error.code) \"\(error.error.message)\""
                        )
                    }
                    answered.insert(error.subscriptionID)
                case .batch(let batch):
                    // A snapshot is answered when a Batch makes it visible.
                    for delta in batch.deltas where delta.snapshot { answered.insert(delta.subscriptionID) }
                case .goodbye(let goodbye):
                    return .failure("the server said Goodbye (\(goodbye.reason)) to a fuzz stream")
                case nil:
                    return .failure("a SyncResponse with no message set")
                default:
                    continue
                }
                if answered.contains(Self.probeID), expected.isSubset(of: answered) {
                    return .acceptable("answered Sync")
                }
            }
            return .failure("the Sync stream ended OK without answering the probe Subscribe")
        }
    }

    /// The subscriptions of `messages` that must be answered (a snapshot or a SubscriptionError) on a stream that
    /// opens with Hello: those subscribed once, not with `resume` (a resumed one may get only batches), and never
    /// replaced or unsubscribed in the input.
    static func subscriptionsToAnswer(_ messages: [[UInt8]]) -> Set<String> {
        let requests = messages.map { try? Meridian_V1_SyncRequest(serializedBytes: $0) }
        guard case .hello? = requests.first??.kind else { return [] }
        var counts: [String: Int] = [:]
        var excluded: Set<String> = [Self.probeID, ""]
        for request in requests.dropFirst() {
            switch request?.kind {
            case .subscribe(let subscribe):
                counts[subscribe.subscriptionID, default: 0] += 1
                if subscribe.resume { excluded.insert(subscribe.subscriptionID) }
            case .replace(let replace): excluded.insert(replace.subscriptionID)
            case .unsubscribe(let unsubscribe): excluded.insert(unsubscribe.subscriptionID)
            case .hello: return []
            default: continue
            }
        }
        return Set(counts.filter { $0.value == 1 && !excluded.contains($0.key) }.keys)
    }

    private func applyStream(_ messages: [[UInt8]], options: CallOptions) async throws -> WireOutcome {
        try await self.client.bidirectionalStreaming(
            request: StreamingClientRequest(of: [UInt8].self) { writer in
                for message in messages { try await writer.write(message) }
            },
            descriptor: WireMethod.applyStream.descriptor, serializer: RawSerializer(),
            deserializer: RawSerializer(), options: options
        ) { response -> WireOutcome in
            var answers = 0
            for try await bytes in response.messages {
                let answer = try Meridian_V1_ApplyResponse(serializedBytes: bytes)
                if case .failure(let message) = Self.judge(answer) { return .failure("ApplyStream: " + message) }
                answers += 1
            }
            guard answers == messages.count else {
                return .failure("ApplyStream answered \(answers) of \(messages.count) requests and ended OK")
            }
            return .acceptable("answered ApplyStream")
        }
    }

    private func query(_ message: [UInt8], options: CallOptions) async throws -> WireOutcome {
        try await self.client.serverStreaming(
            request: ClientRequest(message: message), descriptor: WireMethod.query.descriptor,
            serializer: RawSerializer(), deserializer: RawSerializer(), options: options
        ) { response -> WireOutcome in
            var seqs: Set<Int64> = []
            var last = false
            for try await bytes in response.messages {
                let chunk = try Meridian_V1_QueryResponse(serializedBytes: bytes)
                if last { return .failure("Query sent a chunk after the one flagged last") }
                seqs.insert(chunk.seq)
                last = chunk.last
            }
            guard last else { return .failure("Query ended OK without a chunk flagged last") }
            guard seqs.count == 1 else { return .failure("Query chunks carry different seqs: \(seqs.sorted())") }
            return .acceptable("answered Query")
        }
    }
}
