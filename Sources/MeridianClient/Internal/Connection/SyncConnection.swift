// MARK: - SyncConnection
//
// The network side of a container: one gRPC HTTP/2 connection at a time, and on it the Sync stream (fed to the
// context, message by message, in order), the writer (the context's queued transactions, pipelined over one
// ApplyStream that stays open) and a watchdog
// (no message for three heartbeat intervals, counted while the watchdog itself wakes on time, means the connection
// is lost: SilenceWatch). Any of the three ending ends the session;
// the loop then waits (exponential backoff with jitter) and reconnects, resuming from the applied seq.

internal import Foundation
internal import GRPCCore
internal import GRPCNIOTransportHTTP2
internal import Logging
internal import MeridianCore
internal import MeridianProto
internal import Synchronization

/// Runs the connection of one context until cancelled.
struct SyncConnection: Sendable {
    let address: ServerAddress
    let clientName: String
    /// The largest message asked for in Hello.
    let maxMessageBytes: Int
    /// The identity sent with every call, refreshed on the open stream before it expires.
    let credentials: Credentials?
    let context: CacheContext
    let logger: Logger
    let status: ConnectionStatusBox

    /// Connects, runs sessions and reconnects with backoff until the task is cancelled.
    func run() async {
        var backoff = Backoff()
        while !Task.isCancelled {
            self.setStatus(.connecting)
            let established = LockedValue(false)
            do {
                try await self.runSession(onEstablished: {
                    established.set(true)
                    self.setStatus(.connected)
                })
                self.logger.info("sync stream ended; reconnecting")
            } catch {
                if Task.isCancelled { break }
                if let error = error as? ClientError, error.code == .malformedRequest {
                    // Not the network: a message the client cannot apply as the protocol says (a Batch naming a
                    // snapshot that did not arrive whole, a first Batch leaving out a subscription Hello re-added, a
                    // row that does not decode). Reconnecting resumes from the applied seq, but it is a bug, in the
                    // server or here, and said as one.
                    self.logger.error(
                        "\(ConnectionLog.protocolBreach); reconnecting", metadata: ["meridian.error": "\(error)"])
                } else {
                    self.logger.info("connection lost", metadata: ["meridian.error": "\(error)"])
                }
            }
            await self.context.connectionClosed()
            if established.value { backoff.reset() }
            self.setStatus(.waitingToReconnect)
            do {
                try await Task.sleep(for: backoff.next())
            } catch {
                break
            }
        }
        self.setStatus(.disconnected)
    }

    /// The Sync call's options: messages up to 4 MiB or `maxMessageBytes`, whichever is more (a single row larger than
    /// the messages asked for still comes whole).
    private var callOptions: CallOptions {
        var options = CallOptions.defaults
        options.maxRequestMessageBytes = max(4 << 20, self.maxMessageBytes)
        options.maxResponseMessageBytes = max(4 << 20, self.maxMessageBytes)
        return options
    }

    /// Transactions sent ahead of their answers on the writer's `ApplyStream`.
    static let pipelineWindow = 16

    /// Sends the saved transactions over one `ApplyStream`, up to ``pipelineWindow`` ahead of their answers, and keeps
    /// the stream open while none is queued: a lone save is one message on a stream already open, not a call of its
    /// own (a unary `Apply` costs a new HTTP/2 stream and its tasks on both sides: about twice the time of a message on
    /// an open stream in `meridian-bench server`'s probe). The server commits them in the order they are sent, so each
    /// one sees the ones saved before it, as when they are sent one at a time; a rejected one is reverted alone.
    ///
    /// Returns once the stream ended: when `mustReopen` says so before a send (its token is due for refresh, or was
    /// replaced: the server refuses a stream's transaction once its token expired) and everything sent is answered,
    /// or when a failure of the call rejected the transactions in flight. The caller opens the next one.
    ///
    /// - Parameters:
    ///   - wake: Yields when a transaction is saved or answered (the context's write signal) and when the call's
    ///     responses end; `wakeUp` is its continuation.
    /// - Throws: The call's failure when it is transient or a cancellation (the transactions in flight are queued
    ///   again, to be sent with their idempotency keys on the next connection); other failures reject the
    ///   transactions in flight.
    static func sendOverStream(
        meridian: Meridian_V1_Meridian.Client<some ClientTransport>,
        context: CacheContext,
        wake: AsyncStream<Void>,
        wakeUp: AsyncStream<Void>.Continuation,
        mustReopen: @escaping @Sendable () -> Bool
    ) async throws {
        // Sent and not yet answered, oldest first: the answers come in this order.
        let inFlight = Mutex<[Int64]>([])
        let responsesEnded = Mutex(false)
        do {
            try await meridian.applyStreamEncodingByHand(
                requestProducer: { writer in
                    var signals = wake.makeAsyncIterator()
                    while !responsesEnded.withLock({ $0 }) {
                        let reopen = mustReopen()
                        if !reopen,
                            let (id, request) = await context.nextTransactionToSend(inFlightLimit: Self.pipelineWindow)
                        {
                            inFlight.withLock { $0.append(id) }
                            try await writer.write(request)
                            continue
                        }
                        // Nothing to send now: wait for a save or an answer (the stream stays open while idle), or
                        // end the requests of a stream to reopen once everything sent is answered.
                        if reopen, inFlight.withLock({ $0.isEmpty }) { return }
                        guard await signals.next() != nil else { return }
                    }
                },
                onResponse: { response in
                    defer {
                        responsesEnded.withLock { $0 = true }
                        wakeUp.yield()
                    }
                    for try await message in response.messages {
                        guard let id = inFlight.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
                            throw ClientError(.internal, "the server answered a transaction that was not sent")
                        }
                        await context.transactionAnswered(id, outcome: ApplyOutcome(message))
                    }
                })
        } catch {
            let failure = ClientError(calling: error)
            for id in inFlight.withLock({ $0 }) { await context.transactionFailed(id, error: failure) }
            // Cancelled (the session is ending): they were queued again; the writer stops with the session.
            if failure.isTransient || failure.code == .cancelled { throw failure }
            return
        }
        // The call ended without answering everything sent: those go back to the queue.
        let unanswered = inFlight.withLock { $0 }
        guard unanswered.isEmpty else {
            let failure = ClientError(
                .unavailable, "ApplyStream ended with \(unanswered.count) transactions unanswered")
            for id in unanswered { await context.transactionFailed(id, error: failure) }
            throw failure
        }
    }

    private func setStatus(_ status: ConnectionStatus) {
        self.status.set(status)
    }

    /// One connection: schema, Sync stream, writer and watchdog, until one of them ends.
    private func runSession(onEstablished: @escaping @Sendable () -> Void) async throws {
        let transport = try self.address.transport()
        try await withGRPCClient(transport: transport, interceptors: self.credentials.interceptors) { client in
            let meridian = Meridian_V1_Meridian.Client(wrapping: client)
            if await self.context.schema == nil {
                let response = try await meridian.getSchema(Meridian_V1_GetSchemaRequest())
                await self.context.setSchema(try Schema(response.schema))
            }
            let (outbound, outboundContinuation) = AsyncStream<Meridian_V1_SyncRequest>.makeStream(
                bufferingPolicy: .unbounded)
            await self.context.connectionOpened(
                outbound: outboundContinuation, clientName: self.clientName, maxMessageBytes: self.maxMessageBytes)
            let options = self.callOptions
            let lastHeard = LockedValue(ContinuousClock.now)
            // While the context takes a message, nothing is read: that time is the client's, not the server's silence.
            let receivingMessage = LockedValue(false)
            // The heartbeat interval this stream's Welcome announced (milliseconds), once it came.
            let welcomedInterval = LockedValue<UInt32?>(nil)
            let context = self.context

            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await client.bidirectionalStreaming(
                        request: StreamingClientRequest<Meridian_V1_SyncRequest> { writer in
                            for await message in outbound { try await writer.write(message) }
                        },
                        descriptor: Meridian_V1_Meridian.Method.Sync.descriptor,
                        serializer: SyncRequestSerializer(),
                        deserializer: SyncMessageDeserializer(),
                        options: options,
                        onResponse: { response in
                            // A large snapshot chunk is received by the context while the next message is read and
                            // decoded (in order: each receive starts after the one before it ended); others are
                            // received before the next message is read.
                            try await withThrowingTaskGroup(of: Void.self) { group in
                                var first = true
                                var receiving = OverlappedReceive { try await context.receive($0) }
                                for try await message in response.messages {
                                    lastHeard.set(.now)
                                    if first, case .response(let response) = message,
                                        case .welcome(let welcome)? = response.kind
                                    {
                                        first = false
                                        welcomedInterval.set(welcome.heartbeatIntervalMs)
                                        onEstablished()
                                        if let schema = await context.schema,
                                            schema.fingerprint != welcome.schemaFingerprint
                                        {
                                            let fresh = try await meridian.getSchema(Meridian_V1_GetSchemaRequest())
                                            await context.setSchema(try Schema(fresh.schema))
                                        }
                                    }
                                    // Decoded here, off the context's actor: it receives domain events only.
                                    receivingMessage.set(true)
                                    try await receiving.receive(try SyncEvent(message), in: &group)
                                    // Heard again once taken (set before the flag is cleared: the watchdog reads
                                    // the flag first).
                                    lastHeard.set(.now)
                                    receivingMessage.set(false)
                                }
                                try await group.waitForAll()
                            }
                        }
                    )
                }
                group.addTask {
                    // The writer: every saved transaction goes out over one ApplyStream, opened at the first save
                    // and kept open; a new one replaces it when its token is due for refresh (the Sync stream's
                    // refresh below replaces the source's token), so no transaction is sent under an expired one.
                    let source = self.credentials?.source
                    while true {
                        try Task.checkCancellation()
                        // A signal of its own for each stream: a call that ends cancels what waits on it.
                        let (wake, wakeUp) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
                        await context.setWriteSignal(wakeUp)
                        var signals = wake.makeAsyncIterator()
                        while await !context.hasTransactionToSend {
                            guard await signals.next() != nil else { return }
                        }
                        // The token the stream's call is about to send (the interceptor asks the source too).
                        let token = try await source?.current()
                        try await Self.sendOverStream(
                            meridian: meridian, context: context, wake: wake, wakeUp: wakeUp,
                            mustReopen: {
                                guard let source else { return false }
                                if let refreshAt = source.refreshAt, refreshAt <= Date() { return true }
                                return source.token != token
                            })
                    }
                }
                if let source = self.credentials?.source {
                    group.addTask {
                        // Before the token expires, a new one refreshes the open stream in place.
                        while let refreshAt = source.refreshAt {
                            let wait = refreshAt.timeIntervalSinceNow
                            if wait > 0 {
                                try await Task.sleep(for: .milliseconds(Int64(min(wait, 3_600) * 1_000) + 1))
                                continue
                            }
                            let previous = source.token
                            var refresh = Meridian_V1_RefreshToken()
                            refresh.token = try await source.fresh()
                            // A provider that gives the same token again cannot refresh: the server ends the stream
                            // at its expiry, and the next connection asks the provider again.
                            if refresh.token == previous { break }
                            var request = Meridian_V1_SyncRequest()
                            request.refresh = refresh
                            outboundContinuation.yield(request)
                        }
                        // A token without exp (an API key) needs no refresh: this task waits with the others.
                        try await Task.sleep(for: .seconds(1_000_000_000))
                    }
                }
                group.addTask {
                    // The watchdog: the server's heartbeat interval once this stream's Welcome said it (read off
                    // the Welcome by the reader, so that the watchdog never waits for the context, which may be
                    // busy), and silence counted as SilenceWatch says. Before it, a wake every quarter second.
                    var watch = SilenceWatch(start: .now)
                    while true {
                        let interval = welcomedInterval.value ?? 0
                        let period = interval == 0 ? SilenceWatch.handshakePeriod : .milliseconds(Int64(interval))
                        let due = ContinuousClock.now + (interval == 0 ? min(period, .milliseconds(250)) : period)
                        try await Task.sleep(until: due)
                        let now = ContinuousClock.now
                        let heard = receivingMessage.value ? now : lastHeard.value
                        if let silence = watch.check(now: now, due: due, lastHeard: heard, period: period) {
                            throw ClientError(.unavailable, "no message from the server for \(silence)")
                        }
                    }
                }
                defer { group.cancelAll() }
                try await group.next()
            }
            await context.setWriteSignal(nil)
        }
    }
}

/// What the connection logs that tools look for.
package enum ConnectionLog {
    /// The start of the error logged when the Sync stream broke the protocol (`meridian-check` counts it as a
    /// violation).
    package static let protocolBreach = "the Sync stream broke the protocol"
}

/// The connection's status and its observers.
final class ConnectionStatusBox: Sendable {
    private let state = Mutex(
        (
            current: ConnectionStatus.disconnected, observers: [UInt64: AsyncStream<ConnectionStatus>.Continuation](),
            next: UInt64(0)
        ))

    var current: ConnectionStatus { self.state.withLock { $0.current } }

    func set(_ status: ConnectionStatus) {
        self.state.withLock { state in
            state.current = status
            for observer in state.observers.values { observer.yield(status) }
        }
    }

    func updates() -> AsyncStream<ConnectionStatus> {
        let (stream, continuation) = AsyncStream<ConnectionStatus>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let key = self.state.withLock { state in
            let key = state.next
            state.next += 1
            state.observers[key] = continuation
            continuation.yield(state.current)
            return key
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.observers.removeValue(forKey: key) }
        }
        return stream
    }
}

/// Where a container's connection stands.
public struct ConnectionStatus: Sendable, Hashable, CustomStringConvertible {
    enum Wrapped: String, Sendable, Hashable {
        case disconnected, connecting, connected, waitingToReconnect
    }

    let wrapped: Wrapped

    /// Not running (before ``MeridianContainer/run()`` or after it ended).
    public static let disconnected = ConnectionStatus(wrapped: .disconnected)
    /// Opening a connection.
    public static let connecting = ConnectionStatus(wrapped: .connecting)
    /// The Sync stream is open (the server said Welcome).
    public static let connected = ConnectionStatus(wrapped: .connected)
    /// The connection was lost; waiting (with backoff) before reconnecting.
    public static let waitingToReconnect = ConnectionStatus(wrapped: .waitingToReconnect)

    public var description: String { self.wrapped.rawValue }
}

/// Hands the Sync stream's events to the context in order, a large snapshot chunk in a child task while the stream's
/// next message is read and decoded: an initial sync of 200,000 rows decoded every chunk and then staged it on the
/// same task, one after the other, while the server had already sent the rest. Each event is received only after the
/// one before it was (a chunk's receive is awaited before the next event's starts), so the context sees them in the
/// stream's order; other events are received before the next message is read, as they were.
struct OverlappedReceive {
    /// The rows from which a snapshot chunk is received in a child task: a chunk of the server's default size
    /// (1 MiB) holds thousands; a small one is not worth a task.
    static let overlappedChunkRows = 512

    private let receive: @Sendable (SyncEvent) async throws -> Void
    /// Whether a chunk's receive runs in the group.
    private var pending = false

    init(_ receive: @escaping @Sendable (SyncEvent) async throws -> Void) {
        self.receive = receive
    }

    /// Receives `event` after the one before it, in `group` when it is a large snapshot chunk (its receive, and
    /// any error from it, is awaited by the next call or by the group).
    mutating func receive(_ event: SyncEvent, in group: inout ThrowingTaskGroup<Void, any Error>) async throws {
        if self.pending {
            try await group.next()
            self.pending = false
        }
        if case .snapshotChunk(let chunk) = event, chunk.rows.count >= Self.overlappedChunkRows {
            let receive = self.receive
            group.addTask { try await receive(event) }
            self.pending = true
        } else {
            try await self.receive(event)
        }
    }
}
