// MARK: - A real server for tests, always stopped

public import CoreMetrics
package import GRPCCore
package import GRPCInProcessTransport
public import MeridianAuth
public import MeridianServer
public import MeridianStore

/// Runs a real ``MeridianServer/MeridianServer`` for `store` on `127.0.0.1` with a port the OS picks, calls `body`
/// with the server and its port, and shuts the server down when `body` returns or throws.
///
/// ```swift
/// try await withTestServer(store: store) { server, port in
///     // connect a client to 127.0.0.1:port
/// }
/// ```
///
/// Shutdown is graceful (Goodbye on every stream); streams still open 5 seconds later are cancelled, so a test with
/// a stalled client still ends.
///
/// - Parameters:
///   - store: The store to serve.
///   - configuration: Limits and intervals; its host and port are replaced by `127.0.0.1` and 0.
///   - metricsFactory: Where the server's metrics go (`TestMetrics` in a test); `nil` for the global system.
///   - authenticator: Checks every call's credentials; `nil` for none.
///   - body: The test.
/// - Returns: What `body` returns.
public func withTestServer<Result: Sendable>(
    store: Store,
    configuration: ServerConfiguration = ServerConfiguration(),
    metricsFactory: (any MetricsFactory)? = nil,
    authenticator: Authenticator? = nil,
    _ body: (MeridianServer, Int) async throws -> Result
) async throws -> Result {
    var configuration = configuration
    configuration.host = "127.0.0.1"
    configuration.port = 0
    let server = MeridianServer(
        store: store, configuration: configuration, metricsFactory: metricsFactory, authenticator: authenticator)
    return try await withRunningServer(server) {
        try await body(server, try await server.listeningAddress.port)
    }
}

/// Runs `server` for the duration of `body`, then shuts it down gracefully (cancelling it after 5 seconds).
public func withRunningServer<Result: Sendable>(
    _ server: MeridianServer,
    _ body: () async throws -> Result
) async throws -> Result {
    try await withRunning({ try await server.run() }, shutdown: { server.beginGracefulShutdown() }, body)
}

/// Runs `serve` for the duration of `body`, then calls `shutdown` and waits for `serve` to return, cancelling it after
/// 5 seconds: a server of any kind (a test's own gRPC service too), always stopped.
package func withRunning<Result: Sendable>(
    _ serve: @escaping @Sendable () async throws -> Void,
    shutdown: () -> Void,
    _ body: () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await serve() }
        let result: Swift.Result<Result, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        shutdown()
        group.addTask { try? await Task.sleep(for: .seconds(5)) }
        _ = try? await group.next()
        group.cancelAll()
        while (try? await group.next()) != nil {}
        return try result.get()
    }
}

// MARK: - In process

/// Runs a server on an in-process transport and a client connected to it for the duration of `body`.
package func withInProcessServer<Result: Sendable>(
    store: Store,
    configuration: ServerConfiguration = ServerConfiguration(),
    authenticator: Authenticator? = nil,
    _ body: (MeridianServer, GRPCClient<InProcessTransport.Client>) async throws -> Result
) async throws -> Result {
    let transport = InProcessTransport()
    let server = MeridianServer(
        store: store, configuration: configuration, inProcess: transport, authenticator: authenticator)
    return try await withRunningServer(server) {
        try await withGRPCClient(transport: transport.client) { client in try await body(server, client) }
    }
}
