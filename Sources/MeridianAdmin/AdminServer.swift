// MARK: - AdminServer: /metrics, /healthz, /readyz and the status page

internal import Foundation
internal import Hummingbird
internal import HummingbirdCore
internal import HummingbirdTLS
public import Logging
internal import MeridianCore
public import MeridianServer
internal import MeridianStore
internal import NIOCore
internal import NIOSSL
public import Prometheus
public import ServiceLifecycle
internal import Synchronization

/// Where and how the admin endpoint listens.
public struct AdminConfiguration: Sendable {
    /// The address to listen on (loopback unless a token protects it); port 0 picks a free port.
    public var host: String
    public var port: Int
    /// TLS with these PEM files (the server's own certificate and key); `nil` for plain HTTP.
    public var tls: (certificatePath: String, keyPath: String)?
    /// The bearer token `/metrics` and `/` require (`Authorization: Bearer …`); `nil` for none. `/healthz` and
    /// `/readyz` never require it: they say only whether the server serves, for probes that carry no secret.
    public var bearerToken: String?
    /// How often the status page's plot takes a sample of the seq.
    public var sampleInterval: Duration = .seconds(2)
    /// How many samples the plot keeps (with the default interval: ten minutes).
    public var samples = 300

    public init(
        host: String, port: Int, tls: (certificatePath: String, keyPath: String)? = nil, bearerToken: String? = nil
    ) {
        self.host = host
        self.port = port
        self.tls = tls
        self.bearerToken = bearerToken
    }
}

/// The admin endpoint of one ``MeridianServer``: an HTTP server (hummingbird) on a port of its own.
///
/// | path | what |
/// |---|---|
/// | `/metrics` | Prometheus text format: the server's swift-metrics (through swift-prometheus) and gauges read when scraped |
/// | `/healthz` | 200 `ok` while the process runs |
/// | `/readyz` | 200 when the store takes writes and the fan-out runs; 503 with `{"ready":false,"reason":…}` otherwise |
/// | `/` | the status page: seq and change rate over the last minutes, clients, costliest subscriptions |
/// | `/status.json` | what the status page shows, as JSON |
///
/// Run it beside the server, in the same `ServiceGroup`; it stops on the group's graceful shutdown.
public final class AdminServer: Service, Sendable {
    public let server: MeridianServer
    public let configuration: AdminConfiguration
    let exporter: MetricsExporter
    let history: SeqHistory
    private let logger: Logger
    private let address = Mutex<Result<(host: String, port: Int), any Error>?>(nil)
    private let addressWaiters = Mutex<[CheckedContinuation<(host: String, port: Int), any Error>]>([])

    /// - Parameters:
    ///   - server: The server it reports on.
    ///   - registry: The registry the server's metrics factory writes to (`PrometheusMetricsFactory(registry:)`,
    ///     bootstrapped or passed to the server); the scrape-time gauges are added to it.
    public init(
        server: MeridianServer, registry: PrometheusCollectorRegistry, configuration: AdminConfiguration,
        logger: Logger = Logger(label: "meridian.admin")
    ) {
        self.server = server
        self.configuration = configuration
        self.exporter = MetricsExporter(registry: registry)
        self.history = SeqHistory(capacity: configuration.samples)
        self.logger = logger
    }

    /// The address the endpoint listens on, once it does (with the port the OS picked for port 0).
    public var listeningAddress: (host: String, port: Int) {
        get async throws {
            try await withCheckedThrowingContinuation { continuation in
                let known = self.address.withLock { $0 }
                if let known {
                    continuation.resume(with: known)
                } else {
                    self.addressWaiters.withLock { $0.append(continuation) }
                    // Set between the two looks: answer now.
                    if let known = self.address.withLock({ $0 }) { self.resolveWaiters(known) }
                }
            }
        }
    }

    private func resolveWaiters(_ result: Result<(host: String, port: Int), any Error>) {
        self.address.withLock { if $0 == nil { $0 = result } }
        let waiters = self.addressWaiters.withLock { waiters in
            defer { waiters.removeAll() }
            return waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    /// Serves until the service group's graceful shutdown, or until cancelled.
    public func run() async throws {
        do {
            try await self.serve()
            self.resolveWaiters(.failure(AdminError("the admin endpoint stopped")))
        } catch {
            self.resolveWaiters(.failure(error))
            throw error
        }
    }

    private func serve() async throws {
        let router = Router()
        self.addRoutes(to: router)
        var builder: HTTPServerBuilder = .http1()
        if let tls = self.configuration.tls {
            let chain = try NIOSSLCertificate.fromPEMFile(tls.certificatePath).map {
                NIOSSLCertificateSource.certificate($0)
            }
            let key = try NIOSSLPrivateKey(file: tls.keyPath, format: .pem)
            let configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain, privateKey: NIOSSLPrivateKeySource.privateKey(key))
            builder = try HTTPServerBuilder.tls(HTTPServerBuilder.http1(), tlsConfiguration: configuration)
        }
        let application = Application(
            router: router, server: builder,
            configuration: ApplicationConfiguration(
                address: .hostname(self.configuration.host, port: self.configuration.port), serverName: nil),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? self.configuration.port
                self.resolveWaiters(.success((self.configuration.host, port)))
            },
            logger: self.logger)
        let history = self.history
        let server = self.server
        let interval = self.configuration.sampleInterval
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    history.record(seq: server.status().seq, at: .now)
                    try await Task.sleep(for: interval)
                }
            }
            try await application.run()
            group.cancelAll()
        }
    }

    private func addRoutes(to router: Router<BasicRequestContext>) {
        router.get("healthz") { _, _ in
            Self.response(.ok, "text/plain; charset=utf-8", "ok\n")
        }
        router.get("readyz") { _, _ in
            if let problem = self.server.readinessProblem {
                return Self.response(
                    .serviceUnavailable, "application/json",
                    "{\"ready\":false,\"reason\":\(JSONText.quoted(problem))}\n")
            }
            return Self.response(.ok, "application/json", "{\"ready\":true}\n")
        }
        router.get("metrics") { request, _ in
            if let refusal = self.refusal(request) { return refusal }
            let text = await self.exporter.scrape(self.server)
            return Self.response(.ok, "text/plain; version=0.0.4; charset=utf-8", text)
        }
        router.get("/") { request, _ in
            if let refusal = self.refusal(request) { return refusal }
            let page = await self.snapshot()
            return Self.response(.ok, "text/html; charset=utf-8", StatusPage.html(page))
        }
        router.get("status.json") { request, _ in
            if let refusal = self.refusal(request) { return refusal }
            let page = await self.snapshot()
            return Self.response(.ok, "application/json", StatusPage.json(page))
        }
    }

    /// What the status page shows, read now.
    func snapshot() async -> StatusSnapshot {
        let status = self.server.status()
        let log = try? await self.server.logStatistics()
        return StatusSnapshot(
            status: status, log: log, history: self.history.samples, now: .now)
    }

    /// 401 when a token is configured and the request does not carry it (compared in constant time).
    private func refusal(_ request: Request) -> Response? {
        guard let token = self.configuration.bearerToken else { return nil }
        let given = request.headers[.authorization] ?? ""
        let expected = "Bearer " + token
        var difference = UInt8(given.utf8.count == expected.utf8.count ? 0 : 1)
        for (a, b) in zip(given.utf8, expected.utf8) { difference |= a ^ b }
        guard difference != 0 else { return nil }
        var response = Self.response(.unauthorized, "text/plain; charset=utf-8", "a bearer token is required\n")
        response.headers[.wwwAuthenticate] = "Bearer realm=\"meridian-admin\""
        return response
    }

    static func response(_ status: HTTPResponse.Status, _ contentType: String, _ text: String) -> Response {
        Response(
            status: status, headers: [.contentType: contentType, .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}

/// The admin endpoint could not start or stopped.
public struct AdminError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
