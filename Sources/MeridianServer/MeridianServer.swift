// MARK: - MeridianServer

public import CoreMetrics
internal import GRPCCore
package import GRPCInProcessTransport
package import GRPCNIOTransportHTTP2
public import Logging
public import MeridianAuth
internal import MeridianProto
public import MeridianStore
internal import NIOCertificateReloading
public import ServiceLifecycle
internal import Synchronization

/// The replication server: serves a ``MeridianStore/Store`` over gRPC (HTTP/2) until it is shut down gracefully.
///
/// It is a `ServiceLifecycle.Service`: run it in a `ServiceGroup` that shuts down on SIGTERM and SIGINT, or call
/// ``run()`` yourself and ``beginGracefulShutdown()`` to stop it.
///
/// ```swift
/// let store = try Store.open(path: "data/store.sqlite", schema: schema)
/// let server = MeridianServer(store: store, configuration: ServerConfiguration(host: "127.0.0.1", port: 0))
/// let group = ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
/// async let running: Void = group.run()
/// print("listening on \(try await server.listeningAddress)")
/// try await running
/// ```
///
/// On graceful shutdown it stops accepting streams and calls, sends `Goodbye` on every `Sync` stream, ends every
/// `ApplyStream` once it answered the transactions it read (`UNAVAILABLE`, `SHUTTING_DOWN`), lets in-flight calls
/// (commits included) finish, and returns.
public final class MeridianServer: Service, Sendable {
    /// The store served.
    public let store: Store
    /// The configuration the server was created with.
    public let configuration: ServerConfiguration
    let logger: Logger
    let hub: Hub
    let service: MeridianService
    let health: ServerHealth
    private let transport: Transport
    /// The open connections (HTTP/2 transport only).
    private let connections: ConnectionLimiter?
    private let grpc: Mutex<GRPCServerHandle?> = Mutex(nil)
    /// Reads the TLS certificate and key again every `reloadInterval` (run with the server).
    private var certificateReloader: TimedCertificateReloader? {
        get { self.reloaderBox.withLock { $0 } }
        set { self.reloaderBox.withLock { $0 = newValue } }
    }
    private let reloaderBox = Mutex<TimedCertificateReloader?>(nil)
    private let shutdownRequested = Mutex(false)

    private enum Transport: Sendable {
        case http2(HTTP2ServerTransport.Posix)
        case inProcess(InProcessTransport.Server)
    }

    /// A type-erased handle on the running gRPC server, to begin its graceful shutdown.
    private struct GRPCServerHandle: Sendable {
        let beginGracefulShutdown: @Sendable () -> Void
    }

    /// Creates a server for `store`; nothing listens until ``run()``.
    ///
    /// - Parameters:
    ///   - store: The store to serve (the server never closes it).
    ///   - configuration: Where to listen and the limits to enforce.
    ///   - logger: Receives the server's logs (label it `meridian.server`); the server logs at info and below.
    ///   - metricsFactory: Where the server's metrics go; `nil` for the bootstrapped `MetricsSystem`.
    ///   - authenticator: Checks every call's credentials; `nil` serves anonymous calls — unless the schema has rules,
    ///     which then refuse every call (the server fails closed).
    public convenience init(
        store: Store,
        configuration: ServerConfiguration = ServerConfiguration(),
        logger: Logger = Logger(label: "meridian.server"),
        metricsFactory: (any MetricsFactory)? = nil,
        authenticator: Authenticator? = nil
    ) {
        let host = configuration.host == "localhost" ? "127.0.0.1" : configuration.host
        let reloader = configuration.tls.map { tls in
            let reloader = TimedCertificateReloader(
                refreshInterval: tls.reloadInterval,
                certificateSource: .init(location: .file(path: tls.certificatePath), format: .pem),
                privateKeySource: .init(location: .file(path: tls.keyPath), format: .pem), logger: logger)
            // Loaded now, so that the first connection already uses it; a bad file is reported by the reloader's log
            // and the files given at start are used (the command-line checks them before starting).
            try? reloader.reload()
            return reloader
        }
        let connections = ConnectionLimiter(
            limit: configuration.maxConnections, firstBytesTimeout: configuration.helloTimeout,
            silenceTimeout: configuration.keepaliveInterval + configuration.helloTimeout,
            idleTimeout: configuration.idleTimeout, logger: logger)
        let transport = HTTP2ServerTransport.Posix(
            address: host.contains(":")
                ? .ipv6(host: host, port: configuration.port) : .ipv4(host: host, port: configuration.port),
            transportSecurity: Self.transportSecurity(configuration.tls, reloader: reloader),
            config: .defaults { config in
                // Leave room above our own limit so that oversized messages reach the deserializer, which answers
                // them with a MESSAGE_TOO_LARGE detail; far larger ones are refused by the transport itself.
                config.rpc.maxRequestPayloadSize = max(4 << 20, configuration.maxRequestBytes * 4)
                config.http2.maxConcurrentStreams = configuration.maxStreamsPerConnection
                config.connection.maxIdleTime = configuration.idleTimeout
                // Pings a silent peer, so that a live one speaks (see SilentConnectionHandler).
                config.connection.keepalive.time = configuration.keepaliveInterval
                config.connection.keepalive.timeout = configuration.helloTimeout
                config.connection.flushCoalescing = configuration.flushCoalescing
                config.channelDebuggingCallbacks.onAcceptTCPConnection = { channel in connections.accept(channel) }
                config.channelDebuggingCallbacks.onAcceptHTTP2Stream = { stream in connections.acceptStream(stream) }
            })
        self.init(
            store: store, configuration: configuration, logger: logger, metricsFactory: metricsFactory,
            transport: .http2(transport), connections: connections, authenticator: authenticator)
        self.certificateReloader = reloader
    }

    /// The audit log; a file that cannot be opened is logged as an error (the command-line opens it first, exit 2).
    private static func auditLog(_ configuration: ServerConfiguration, _ logger: Logger) -> AuditLog? {
        guard let path = configuration.auditLogPath else { return nil }
        do {
            return try AuditLog(path: path)
        } catch {
            logger.error("cannot open the audit log \(path): \(error)")
            return nil
        }
    }

    /// Plaintext, or TLS with the configured files (and the reloader that reads them again).
    private static func transportSecurity(
        _ tls: ServerTLS?, reloader: TimedCertificateReloader?
    ) -> HTTP2ServerTransport.Posix.TransportSecurity {
        guard let tls else { return .plaintext }
        return .tls(
            certificateChain: [.file(path: tls.certificatePath, format: .pem)],
            privateKey: .file(path: tls.keyPath, format: .pem)
        ) { config in
            config.certificateReloader = reloader
            if tls.clientAuthentication == .require, let ca = tls.clientCAPath {
                config.clientCertificateVerification = .noHostnameVerification
                config.trustRoots = .certificates([.file(path: ca, format: .pem)])
            }
        }
    }

    /// Creates a server on an in-process transport (tests): connect a client to `transport.client`.
    package convenience init(
        store: Store,
        configuration: ServerConfiguration = ServerConfiguration(),
        logger: Logger = Logger(label: "meridian.server"),
        inProcess transport: InProcessTransport,
        authenticator: Authenticator? = nil
    ) {
        self.init(
            store: store, configuration: configuration, logger: logger, metricsFactory: nil,
            transport: .inProcess(transport.server), authenticator: authenticator)
    }

    private init(
        store: Store, configuration: ServerConfiguration, logger: Logger, metricsFactory: (any MetricsFactory)?,
        transport: Transport, connections: ConnectionLimiter? = nil, authenticator: Authenticator?
    ) {
        self.connections = connections
        self.store = store
        self.configuration = configuration
        self.logger = logger
        self.transport = transport
        let metrics = ServerMetrics(factory: metricsFactory ?? MetricsSystem.factory)
        self.hub = Hub(store: store, configuration: configuration, metrics: metrics, logger: logger)
        self.service = MeridianService(
            store: store, hub: self.hub, configuration: configuration, metrics: metrics, logger: logger,
            accessControl: AccessControl(
                authenticator: authenticator, schema: store.schema, logger: logger,
                peerCertificates: connections?.peerCertificates, audit: Self.auditLog(configuration, logger),
                quotas: PrincipalQuotas(
                    maxStreams: configuration.maxStreamsPerPrincipal,
                    maxSubscriptions: configuration.maxSubscriptionsPerPrincipal,
                    applyRate: configuration.applyRatePerPrincipal)))
        self.health = ServerHealth(hub: self.hub, logger: logger)
    }

    /// The address the server listens on, once it does (with the port the OS picked for port 0).
    ///
    /// - Throws: When the server could not bind its address, or has stopped; `RuntimeError` for an in-process server.
    public var listeningAddress: ServerAddress {
        get async throws {
            guard case .http2(let transport) = self.transport else {
                throw RuntimeError(code: .transportError, message: "an in-process server has no network address")
            }
            let address = try await transport.listeningAddress
            if let ipv4 = address.ipv4 { return ServerAddress(host: ipv4.host, port: ipv4.port) }
            if let ipv6 = address.ipv6 { return ServerAddress(host: ipv6.host, port: ipv6.port) }
            throw RuntimeError(code: .transportError, message: "the server listens on \(address), not an IP address")
        }
    }

    /// The client connections open now (0 for an in-process server).
    public var openConnections: Int { self.connections?.count ?? 0 }

    /// The client connections closed since the server started, by either side (0 for an in-process server).
    public var closedConnections: Int { self.connections?.closedCount ?? 0 }

    /// Serves until graceful shutdown (the service group's, or ``beginGracefulShutdown()``), or until cancelled.
    ///
    /// - Throws: When the address cannot be bound or the store fails.
    public func run() async throws {
        switch self.transport {
        case .http2(let transport): try await self.serve(transport)
        case .inProcess(let transport): try await self.serve(transport)
        }
    }

    /// Begins a graceful shutdown: stops accepting, says Goodbye to every stream, lets in-flight calls finish.
    public func beginGracefulShutdown() {
        self.shutdownRequested.withLock { $0 = true }
        self.hub.beginShutdown(reason: Hub.shutdownReason)
        self.service.shutdown.begin()
        self.grpc.withLock { $0 }?.beginGracefulShutdown()
    }

    private func serve<T: ServerTransport>(_ transport: T) async throws {
        try await self.hub.start()
        let health = self.health
        let healthService = HealthService(
            health: health, watchInterval: min(.milliseconds(500), self.configuration.healthProbeInterval))
        let server = GRPCServer(transport: transport, services: [self.service, healthService])
        self.grpc.withLock { $0 = GRPCServerHandle(beginGracefulShutdown: { server.beginGracefulShutdown() }) }
        if self.shutdownRequested.withLock({ $0 }) { server.beginGracefulShutdown() }
        let hub = self.hub
        let configuration = self.configuration
        let store = self.store
        let logger = self.logger
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await hub.run() }
                if let reloader = self.certificateReloader {
                    group.addTask { try await reloader.run() }
                }
                group.addTask {
                    let tick = max(.milliseconds(10), configuration.heartbeatInterval / 4)
                    while !Task.isCancelled {
                        try await Task.sleep(for: tick)
                        hub.heartbeat()
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        await health.probe(store)
                        try await Task.sleep(for: configuration.healthProbeInterval)
                    }
                }
                let accessControl = self.service.accessControl
                if accessControl.isEnabled {
                    group.addTask {
                        // Revocations recorded by `meridian-server revoke` (another process) take effect within a
                        // second: calls are refused and open streams end.
                        while !Task.isCancelled {
                            do {
                                let revocations = try await store.revocations()
                                for new in accessControl.revocations.update(revocations) {
                                    accessControl.audit?.record(
                                        "revocation", ["sub": new.subject, "credential": new.tokenID])
                                }
                            } catch {
                                logger.info("cannot read the revocations: \(error)")
                            }
                            try await Task.sleep(for: .milliseconds(500))
                        }
                    }
                }
                group.addTask {
                    let retention = configuration.logRetention
                    guard retention.changes != nil || retention.age != nil else { return }
                    while !Task.isCancelled {
                        do {
                            let result = try await store.prune(keepingLast: retention.changes, olderThan: retention.age)
                            if result.removed > 0 {
                                logger.debug(
                                    "pruned the change log",
                                    metadata: ["meridian.pruned_through": "\(result.prunedThrough)"])
                            }
                        } catch {
                            logger.info("cannot prune the change log: \(error)")
                        }
                        try await Task.sleep(for: retention.interval)
                    }
                }
                logger.info("meridian server starting", metadata: ["meridian.seq": "\(hub.processedSeq)"])
                try await server.serve()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.beginGracefulShutdown()
        }
        logger.info("meridian server stopped")
    }
}

extension ServerConfiguration {
    /// The transport's flush coalescing for ``flushDelay``: none (each write flushed at once) at `.zero`, the default.
    /// `meridian-bench`'s raw gRPC ceilings take it from a default configuration, so that they send as the server does.
    package var flushCoalescing: HTTP2ServerTransport.Config.Connection.FlushCoalescing? {
        self.flushDelay > .zero ? .init(maxFlushDelay: self.flushDelay, maxBytes: 64 << 10) : nil
    }
}
