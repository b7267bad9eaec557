// MARK: - The witness: another client that must keep being served

internal import GRPCCore
internal import GRPCNIOTransportHTTP2
internal import MeridianCore
internal import MeridianProto

/// A client untouched by the fuzz inputs: a live `Sync` subscription to the rows whose id starts with
/// `fuzz-witness-`. ``check(id:)`` writes one such row through `Apply` and waits for the subscription to deliver it.
final class Witness: Sendable {
    /// What the witness's stream delivers, plus deadline markers its checks post to themselves.
    private enum Event: Sendable {
        case response(Meridian_V1_SyncResponse)
        case deadline(String)
    }

    private let meridian: Meridian_V1_Meridian.Client<HTTP2ClientTransport.Posix>
    private let entity: EntitySchema
    private let timeout: Duration
    private let events: AsyncThrowingStream<Event, any Error>
    private let continuation: AsyncThrowingStream<Event, any Error>.Continuation
    /// The server's request size limit, from its Welcome.
    let maxRequestBytes: Int

    private init(
        meridian: Meridian_V1_Meridian.Client<HTTP2ClientTransport.Posix>, entity: EntitySchema, timeout: Duration,
        events: AsyncThrowingStream<Event, any Error>, continuation: AsyncThrowingStream<Event, any Error>.Continuation,
        maxRequestBytes: Int
    ) {
        self.meridian = meridian
        self.entity = entity
        self.timeout = timeout
        self.events = events
        self.continuation = continuation
        self.maxRequestBytes = maxRequestBytes
    }

    static let predicate = "id BEGINSWITH \"fuzz-witness-\""

    /// Opens the witness stream, waits for its snapshot, runs `body`, and closes the stream.
    static func with(
        _ meridian: Meridian_V1_Meridian.Client<HTTP2ClientTransport.Posix>, entity: EntitySchema, timeout: Duration,
        _ body: (Witness) async throws -> Void
    ) async throws {
        let (events, continuation) = AsyncThrowingStream<Event, any Error>.makeStream()
        let (requests, requestContinuation) = AsyncStream<Meridian_V1_SyncRequest>.makeStream()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await meridian.sync(
                        requestProducer: { writer in
                            for await request in requests { try await writer.write(request) }
                        },
                        onResponse: { response in
                            for try await message in response.messages { continuation.yield(.response(message)) }
                        })
                    continuation.finish(throwing: FuzzSetupError("the witness's Sync stream ended"))
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            defer {
                requestContinuation.finish()
                group.cancelAll()
            }
            var hello = Meridian_V1_SyncRequest()
            hello.hello.clientName = "fuzz-witness"
            hello.hello.protocolVersion = ProtocolVersion.current
            requestContinuation.yield(hello)
            var subscribe = Meridian_V1_SyncRequest()
            subscribe.subscribe.subscriptionID = "witness"
            subscribe.subscribe.fetch = Meridian_V1_FetchRequest(entity: entity.name, predicate: Self.predicate)
            requestContinuation.yield(subscribe)
            var maxRequestBytes = 0
            for try await event in events {
                guard case .response(let response) = event else { continue }
                switch response.kind {
                case .welcome(let welcome): maxRequestBytes = Int(welcome.maxRequestBytes)
                case .batch(let batch) where batch.deltas.contains(where: \.snapshot): break
                case .subscriptionError(let error):
                    throw FuzzSetupError("the witness could not subscribe: \(error.error.message)")
                default: continue
                }
                // The Batch that makes the witness's snapshot visible: it is live from here.
                if case .batch = response.kind { break }
            }
            let witness = Witness(
                meridian: meridian, entity: entity, timeout: timeout, events: events, continuation: continuation,
                maxRequestBytes: maxRequestBytes)
            try await body(witness)
        }
    }

    /// Inserts the row `id` and waits for the witness stream to deliver it; nil when it does, otherwise what went
    /// wrong.
    func check(id: String) async -> String? {
        var values: [String: Value] = [:]
        for attribute in self.entity.attributes where attribute.isRequiredOnInsert {
            values[attribute.name] =
                switch attribute.type {
                case .string: .string(id)
                case .int: .int(1)
                case .double: .double(1)
                case .bool: .bool(true)
                case .bytes: .bytes(Array(id.utf8))
                case .timestamp: .timestamp(Timestamp(microseconds: 0))
                }
        }
        var request = Meridian_V1_ApplyRequest()
        request.operations = [Meridian_V1_Operation(kind: .insert, entity: self.entity.name, id: id, values: values)]
        var options = CallOptions.defaults
        options.timeout = self.timeout
        do {
            let response = try await self.meridian.apply(request, options: options)
            if case .error(let detail) = response.outcome {
                return "the witness's write was rejected: \(detail.code) \(detail.message)"
            }
        } catch {
            return "the witness's write failed: \(error)"
        }
        let continuation = self.continuation
        let timeout = self.timeout
        let deadline = Task {
            try await Task.sleep(for: timeout)
            continuation.yield(.deadline(id))
        }
        defer { deadline.cancel() }
        do {
            for try await event in self.events {
                switch event {
                case .deadline(let marker) where marker == id:
                    return "the witness's subscription did not deliver its write within \(timeout)"
                case .deadline:
                    continue
                case .response(let response):
                    if case .batch(let batch) = response.kind,
                        batch.deltas.contains(where: { $0.entered.contains { $0.id == id } })
                    {
                        return nil
                    }
                    if case .goodbye(let goodbye) = response.kind {
                        return "the witness got Goodbye: \(goodbye.reason)"
                    }
                }
            }
            return "the witness's stream ended"
        } catch {
            return "the witness's stream failed: \(error)"
        }
    }
}
