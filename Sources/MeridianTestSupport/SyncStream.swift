// MARK: - Raw protocol clients for tests

package import GRPCCore
internal import GRPCInProcessTransport
package import GRPCNIOTransportHTTP2
package import MeridianProto

/// The client end of one `Sync` stream in a test: send requests, receive responses one at a time.
///
/// Responses are pulled through a small ``Handoff``: a test that stops calling ``next()`` stops its transport from
/// reading, so the server sees a stalled client.
package struct SyncStream: Sendable {
    let requests: AsyncStream<Meridian_V1_SyncRequest>.Continuation
    let responses: Handoff<Meridian_V1_SyncResponse>

    /// Sends a request.
    package func send(_ request: Meridian_V1_SyncRequest) {
        self.requests.yield(request)
    }

    /// Ends the client's side of the stream.
    package func finishSending() {
        self.requests.finish()
    }

    /// Sends Hello (speaking the current protocol version), re-adding `subscriptions` with it.
    package func hello(
        resumeFrom seq: Int64? = nil, maxBatchBytes: UInt32 = 0, name: String = "test",
        subscriptions: [Meridian_V1_Subscribe] = [], protocolVersion: UInt32 = ProtocolVersion.current
    ) {
        var hello = Meridian_V1_Hello()
        if let seq { hello.resumeFromSeq = seq }
        hello.clientName = name
        hello.maxBatchBytes = maxBatchBytes
        hello.subscriptions = subscriptions
        hello.protocolVersion = protocolVersion
        var request = Meridian_V1_SyncRequest()
        request.hello = hello
        self.send(request)
    }

    /// Sends Subscribe.
    package func subscribe(_ id: String, _ fetch: Meridian_V1_FetchRequest, resume: Bool = false) {
        var subscribe = Meridian_V1_Subscribe()
        subscribe.subscriptionID = id
        subscribe.fetch = fetch
        subscribe.resume = resume
        var request = Meridian_V1_SyncRequest()
        request.subscribe = subscribe
        self.send(request)
    }

    /// Sends Replace.
    package func replace(_ id: String, _ fetch: Meridian_V1_FetchRequest) {
        var replace = Meridian_V1_Replace()
        replace.subscriptionID = id
        replace.fetch = fetch
        var request = Meridian_V1_SyncRequest()
        request.replace = replace
        self.send(request)
    }

    /// Sends a new token for the stream.
    package func refresh(_ token: String) {
        var refresh = Meridian_V1_RefreshToken()
        refresh.token = token
        var request = Meridian_V1_SyncRequest()
        request.refresh = refresh
        self.send(request)
    }

    /// Sends Unsubscribe.
    package func unsubscribe(_ id: String) {
        var unsubscribe = Meridian_V1_Unsubscribe()
        unsubscribe.subscriptionID = id
        var request = Meridian_V1_SyncRequest()
        request.unsubscribe = unsubscribe
        self.send(request)
    }

    /// The next response, heartbeats included; throws the call's error, or when the stream ended.
    package func next() async throws -> Meridian_V1_SyncResponse {
        guard let response = try await self.responses.receive() else { throw SyncStreamEnded() }
        return response
    }

    /// The next response that is not a heartbeat.
    package func nextMessage() async throws -> Meridian_V1_SyncResponse {
        while true {
            let response = try await self.next()
            if case .heartbeat = response.kind { continue }
            return response
        }
    }
}

/// The server ended a test's `Sync` stream.
package struct SyncStreamEnded: Error {}

/// Opens a `Sync` stream on `client` for the duration of `body`.
///
/// - Parameters:
///   - client: A running client.
///   - capacity: How many responses may wait unread before the transport stops reading.
package func withSyncStream<Result: Sendable>(
    _ meridian: some Meridian_V1_Meridian.ClientProtocol,
    capacity: Int = 1024,
    metadata: Metadata = [:],
    _ body: (SyncStream) async throws -> Result
) async throws -> Result {
    let (requests, continuation) = AsyncStream<Meridian_V1_SyncRequest>.makeStream()
    let responses = Handoff<Meridian_V1_SyncResponse>(capacity: capacity)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            do {
                try await meridian.sync(
                    metadata: metadata,
                    requestProducer: { writer in
                        for await request in requests { try await writer.write(request) }
                    },
                    onResponse: { response in
                        for try await message in response.messages { await responses.send(message) }
                    })
                responses.finish()
            } catch {
                responses.finish(throwing: error)
            }
        }
        let stream = SyncStream(requests: continuation, responses: responses)
        let result: Swift.Result<Result, any Error>
        do {
            result = .success(try await body(stream))
        } catch {
            result = .failure(error)
        }
        continuation.finish()
        group.cancelAll()
        responses.finish()
        try? await group.waitForAll()
        return try result.get()
    }
}

/// Runs `body` with a client connected over HTTP/2 to `127.0.0.1:port`.
///
/// - Parameter windowSize: The client's HTTP/2 flow-control window; small values make a client that stops reading
///   stall the server quickly.
package func withHTTP2Client<Result: Sendable>(
    port: Int,
    windowSize: Int? = nil,
    _ body: (GRPCClient<HTTP2ClientTransport.Posix>) async throws -> Result
) async throws -> Result {
    let transport = try HTTP2ClientTransport.Posix(
        target: .ipv4(address: "127.0.0.1", port: port),
        transportSecurity: .plaintext,
        config: .defaults { config in
            if let windowSize { config.http2.targetWindowSize = windowSize }
        })
    return try await withGRPCClient(transport: transport) { client in try await body(client) }
}
