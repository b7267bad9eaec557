// meridian-server: parse arguments, build the configuration, bootstrap logging, run until SIGTERM/SIGINT.

import ArgumentParser
import CoreMetrics
import Foundation
import Logging
import MeridianAdmin
import MeridianAuth
import MeridianCommandLine
import MeridianCore
import MeridianServer
import MeridianStore
import Prometheus
import ServiceLifecycle
import UnixSignals

@main
struct MeridianServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "meridian-server",
        abstract: "Serve a Meridian store over gRPC: live subscriptions, snapshots, deltas and writes.",
        discussion: """
            Prints one line, `listening on HOST:PORT`, on stdout once it accepts connections; logs go to stderr.
            SIGTERM or SIGINT: stop accepting, say Goodbye to every client, finish in-flight commits, exit 0.
            Exit status 2: bad arguments, an unreadable schema, a corrupt store file, or a store that would need a \
            destructive migration.

            meridian-server backup --db PATH --to FILE: a consistent copy of the store file, taken while it is \
            served (see meridian-server backup --help).

            meridian-server revoke --db PATH --sub ID (or --token-id ID): refuse an identity on the server serving \
            the file, within a second (see meridian-server revoke --help).

            meridian-server log --db PATH: the change log with the subject that wrote each change (see \
            meridian-server log --help).
            """)

    @Option(
        help: ArgumentHelp(
            "The SQLite store file (created if missing; other processes may write it).", valueName: "path"))
    var db: String?

    @Flag(help: "Serve an in-memory store instead of a file (nothing is kept; other processes cannot write it).")
    var inMemory = false

    @Option(help: ArgumentHelp("The schema file (YAML, docs/schema.md).", valueName: "path"))
    var schema: String

    @Option(help: ArgumentHelp("The address to listen on; port 0 picks a free port.", valueName: "host:port"))
    var listen = "127.0.0.1:7400"

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    @Option(
        help: ArgumentHelp(
            "How logs are written to standard error: text (readable lines) or json (one JSON object a line, with the metadata, for log shippers).",
            valueName: "format"))
    var logFormat = "text"

    @Option(
        help: ArgumentHelp(
            "Serve the admin endpoint at this address: /metrics (Prometheus), /healthz, /readyz and a status page at /. Off by default; TLS with --tls-cert.",
            valueName: "host:port"))
    var admin: String?

    @Option(
        help: ArgumentHelp(
            "A file holding the bearer token /metrics and the status page require (needed with --auth, or when --admin is not on loopback).",
            valueName: "path"))
    var adminTokenFile: String?

    @Option(
        help: ArgumentHelp(
            "How much change log to keep for resuming clients: a number of changes, an age (7d, 12h, 30m, 45s), both (1000000,7d), or none.",
            valueName: "retention"))
    var logRetention = "1000000,7d"

    @Option(help: "The most subscriptions one Sync stream may hold (0: no limit).")
    var maxSubscriptions = 256

    @Option(help: "The largest request message accepted, in bytes.")
    var maxRequestBytes = 4 << 20

    @Option(help: "Row changes that may wait for a slow client before it is re-snapshotted.")
    var clientQueueLimit = 100_000

    @Option(
        help:
            "Bytes of changes that may wait for a slow client before it is re-snapshotted; also the most bytes of snapshots that may wait for one client (a subscription whose snapshot does not fit is refused)."
    )
    var clientQueueBytes = 64 << 20

    @Option(
        help: "The size snapshot and query chunks are cut to, in bytes (smaller for a client taking smaller messages).")
    var snapshotChunkBytes = 1 << 20

    @Option(help: "Milliseconds of silence on a Sync stream before a heartbeat.")
    var heartbeatMs = 10_000

    @Option(help: "Milliseconds between checks for commits by other processes.")
    var commitPollMs = 5

    @Option(
        help: ArgumentHelp(
            "Microseconds the transport may hold a connection's writes to send them together (0: each at once).",
            discussion: "grpc-swift's flush coalescing: held bytes go out after this delay, or once 64 KiB wait."))
    var flushDelayUs = 0

    @Option(
        help: ArgumentHelp(
            "How long a Sync stream may stay open without sending Hello: seconds, or a number with ms, s, m, h or d (500ms, 10s, 1m).",
            valueName: "duration"))
    var helloTimeout = "10s"

    @Option(help: "The most client connections open at once; one past it is closed as soon as it is accepted.")
    var maxConnections = 1_000

    @Option(help: "The most calls open at once on one connection (HTTP/2 concurrent streams).")
    var maxStreamsPerConnection = 100

    @Option(
        help: ArgumentHelp(
            "How long a connection with no call open stays open: seconds, or a number with ms, s, m, h or d.",
            valueName: "duration"))
    var idleTimeout = "5m"

    @Option(
        help: ArgumentHelp(
            "How long a connection may stay silent before the server pings it; one that then sends nothing for --hello-timeout more is closed (a duration, like --hello-timeout).",
            valueName: "duration"))
    var keepaliveInterval = "60s"

    @Option(
        help: ArgumentHelp(
            "How often the server commits a small write probe, so that the gRPC health service (grpc.health.v1) says NOT_SERVING while the store takes no writes: seconds, or a number with ms, s, m, h or d.",
            valueName: "duration"))
    var healthProbeInterval = "5s"

    @Option(
        help: ArgumentHelp(
            "How long one read of a subscription's rows or of a query may run before it is stopped, and how long a failed Sync stream whose client reads nothing stays open (at least 1 s): seconds, or a number with ms, s, m, h or d.",
            valueName: "duration"))
    var queryTimeout = "15s"

    @Option(
        help: ArgumentHelp(
            "How long a graceful shutdown (SIGTERM, SIGINT) waits for the calls still open before it cancels them: seconds, or a number with ms, s, m, h or d.",
            discussion:
                "Sync streams get a Goodbye and ApplyStreams end at once; this bounds the rest, such as a Query whose client stopped reading.",
            valueName: "duration"))
    var shutdownTimeout = "30s"

    @Option(
        help: "The most missed changes a resuming subscription is sent as deltas; past it, it gets a snapshot instead.")
    var maxResumeChanges = 100_000

    @Option(help: "The most operations one transaction may hold.")
    var maxOperations = 100_000

    @Option(help: "The most Sync streams one authenticated subject may hold open at once (0: no limit).")
    var maxStreamsPerPrincipal = 64

    @Option(help: "The most subscriptions one authenticated subject may hold over all its streams (0: no limit).")
    var maxSubscriptionsPerPrincipal = 4_096

    @Option(
        help: "The transactions per second one authenticated subject may commit, in bursts of as many (0: no limit).")
    var applyRatePerPrincipal = 1_000

    @Option(help: "The longest id (a row's, a subscription's), in UTF-8 bytes.")
    var maxIdBytes = 1_024

    @Option(help: "The longest predicate of a subscription or query, in UTF-8 bytes.")
    var maxPredicateBytes = 64 << 10

    @Option(help: "The most values the IN lists of one predicate may hold together.")
    var maxInValues = 10_000

    @Option(
        help:
            "The largest row a write may leave, in bytes (its id, and each attribute's name and value: a string's UTF-8 bytes, a blob's bytes, 8 for a number or timestamp, 1 for a Boolean)."
    )
    var maxRowBytes = 1 << 20

    @Option(
        help: ArgumentHelp(
            "full: every commit is flushed to the disk before it is acknowledged, and survives a power loss; normal: flushed at checkpoints only, faster, but a power loss or OS crash may undo the last commits.",
            valueName: "full|normal"))
    var durability = "full"

    @Option(
        help: ArgumentHelp(
            "The check of the store file at start: quick (every page's structure; linear in the file), full (indexes too), or off. A corrupt file is refused with exit 2.",
            valueName: "quick|full|off"))
    var integrity = "quick"

    @Flag(
        help:
            "Check the whole store file (indexes included), print ok or what is wrong, and exit: 0 if sound, 2 if not.")
    var checkIntegrity = false

    @OptionGroup(title: "Identity")
    var identity: AuthOptions

    @OptionGroup(title: "TLS")
    var tls: TLSOptions

    func validate() throws {
        if self.inMemory == (self.db != nil) {
            throw ValidationError("give exactly one of --db PATH and --in-memory")
        }
        guard let (host, _) = Self.address(self.listen) else {
            throw ValidationError("--listen must be HOST:PORT with a port from 0 to 65535, not '\(self.listen)'")
        }
        try self.identity.validate(
            listenHost: host, clientCertificatesRequired: self.tls.tlsClientAuth == "require")
        guard ["text", "json"].contains(self.logFormat) else {
            throw ValidationError("--log-format must be text or json, not '\(self.logFormat)'")
        }
        try self.validateAdmin()
        guard Logger.Level(rawValue: self.logLevel) != nil else {
            throw ValidationError(
                "--log-level must be one of trace, debug, info, notice, warning, error, critical, not '\(self.logLevel)'"
            )
        }
        guard LogRetention(parsing: self.logRetention) != nil else {
            throw ValidationError(
                "--log-retention must be a number of changes, an age like 7d, 12h, 30m or 45s, both (1000000,7d), or none; not '\(self.logRetention)'"
            )
        }
        guard self.integrity == "off" || Store.IntegrityCheck(rawValue: self.integrity) != nil else {
            throw ValidationError("--integrity must be quick, full or off, not '\(self.integrity)'")
        }
        if self.checkIntegrity, self.inMemory {
            throw ValidationError("--check-integrity checks a store file: give --db PATH")
        }
        guard Store.Durability(rawValue: self.durability) != nil else {
            throw ValidationError("--durability must be full or normal, not '\(self.durability)'")
        }
        for (name, text) in [
            ("--hello-timeout", self.helloTimeout), ("--idle-timeout", self.idleTimeout),
            ("--keepalive-interval", self.keepaliveInterval),
            ("--query-timeout", self.queryTimeout), ("--health-probe-interval", self.healthProbeInterval),
            ("--shutdown-timeout", self.shutdownTimeout),
        ] where Self.duration(text) == nil {
            throw ValidationError(
                "\(name) must be a positive number of seconds, or a number with ms, s, m, h or d (500ms, 15s, 5m); not '\(text)'"
            )
        }
        for (name, value) in [
            ("--max-operations", self.maxOperations), ("--max-connections", self.maxConnections),
            ("--max-streams-per-connection", self.maxStreamsPerConnection),
            ("--max-resume-changes", self.maxResumeChanges), ("--max-in-values", self.maxInValues),
            ("--max-id-bytes", self.maxIdBytes),
            ("--max-predicate-bytes", self.maxPredicateBytes), ("--max-row-bytes", self.maxRowBytes),
            ("--max-subscriptions", self.maxSubscriptions), ("--max-request-bytes", self.maxRequestBytes),
            ("--client-queue-limit", self.clientQueueLimit), ("--client-queue-bytes", self.clientQueueBytes),
            ("--snapshot-chunk-bytes", self.snapshotChunkBytes),
            ("--heartbeat-ms", self.heartbeatMs), ("--commit-poll-ms", self.commitPollMs),
            ("--flush-delay-us", self.flushDelayUs),
            ("--max-streams-per-principal", self.maxStreamsPerPrincipal),
            ("--apply-rate-per-principal", self.applyRatePerPrincipal),
            ("--max-subscriptions-per-principal", self.maxSubscriptionsPerPrincipal),
        ]
        where value < 0
            || (value == 0
                && ![
                    "--max-subscriptions", "--max-streams-per-principal", "--apply-rate-per-principal",
                    "--max-subscriptions-per-principal", "--flush-delay-us",
                ].contains(name))
        {
            throw ValidationError("\(name) must be positive, not \(value)")
        }
    }

    /// `--hello-timeout`, `--idle-timeout`, `--query-timeout`: a positive duration of at most 1,000,000 minutes, as the server's flags
    /// write one (``ServerConfiguration/duration(parsing:)``), or a bare number of seconds.
    static func duration(_ text: String) -> Duration? {
        let withUnit = text.allSatisfy({ $0.isASCII && $0.isNumber }) ? text + "s" : text
        guard let duration = ServerConfiguration.duration(parsing: withUnit), duration > .zero,
            duration <= .seconds(60_000_000)
        else { return nil }
        return duration
    }

    /// `HOST:PORT` or `[IPV6]:PORT`.
    static func address(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else {
            return nil
        }
        return (host, port)
    }

    func run() async throws {
        Self.stopWhenOrphaned()
        let level = Logger.Level(rawValue: self.logLevel) ?? .info
        let json = self.logFormat == "json"
        LoggingSystem.bootstrap { label in
            if json {
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        // Every metric goes to one Prometheus registry, which the admin endpoint serves (when --admin is given).
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let logger = Logger(label: "meridian.server")
        let schema: Schema
        do {
            schema = try Schema.load(contentsOf: self.schema)
        } catch {
            Self.fail("cannot load the schema: \(error)")
        }
        var storeConfiguration = Store.Configuration()
        storeConfiguration.durability = Store.Durability(rawValue: self.durability) ?? .full
        storeConfiguration.maxRowBytes = self.maxRowBytes
        storeConfiguration.readTimeout = Self.duration(self.queryTimeout)!
        let check = self.checkIntegrity ? .full : Store.IntegrityCheck(rawValue: self.integrity)
        if let check, let path = self.db {
            if self.checkIntegrity, !FileManager.default.fileExists(atPath: path) {
                Self.fail("there is no store file at \(path)")
            }
            let problems: [String]
            do {
                problems = try Store.checkIntegrity(path: path, check)
            } catch {
                Self.fail("\(error)")
            }
            guard problems.isEmpty else {
                Self.fail(
                    "the store file \(path) is corrupt (\(check.rawValue) check); restore it from a backup. SQLite "
                        + "says:\n" + problems.joined(separator: "\n"))
            }
            if self.checkIntegrity {
                print("ok: \(path) passed the full integrity check")
                return
            }
            logger.info("store file checked", metadata: ["meridian.integrity": "\(check.rawValue)"])
        }
        let store: Store
        do {
            store =
                self.inMemory
                ? try Store.inMemory(
                    schema: schema, configuration: storeConfiguration, logger: Logger(label: "meridian.store"))
                : try Store.open(
                    path: self.db!, schema: schema, configuration: storeConfiguration,
                    logger: Logger(label: "meridian.store"))
        } catch let error as StoreError where error.code == .migrationRefused {
            Self.fail(error.message)
        } catch {
            Self.fail("cannot open the store: \(error)")
        }
        let (host, port) = Self.address(self.listen)!
        var configuration = ServerConfiguration(host: host, port: port)
        configuration.maxSubscriptionsPerStream = self.maxSubscriptions
        configuration.maxRequestBytes = self.maxRequestBytes
        configuration.clientQueueLimit = self.clientQueueLimit
        configuration.clientQueueBytes = self.clientQueueBytes
        configuration.snapshotChunkBytes = self.snapshotChunkBytes
        configuration.heartbeatInterval = .milliseconds(self.heartbeatMs)
        configuration.commitPollInterval = .milliseconds(self.commitPollMs)
        configuration.flushDelay = .microseconds(self.flushDelayUs)
        configuration.helloTimeout = Self.duration(self.helloTimeout)!
        configuration.idleTimeout = Self.duration(self.idleTimeout)!
        configuration.keepaliveInterval = Self.duration(self.keepaliveInterval)!
        configuration.healthProbeInterval = Self.duration(self.healthProbeInterval)!
        configuration.maxConnections = self.maxConnections
        configuration.maxResumeChanges = self.maxResumeChanges
        configuration.maxInValues = self.maxInValues
        configuration.maxStreamsPerConnection = self.maxStreamsPerConnection
        configuration.maxOperationsPerTransaction = self.maxOperations
        configuration.maxStreamsPerPrincipal = self.maxStreamsPerPrincipal
        configuration.applyRatePerPrincipal = self.applyRatePerPrincipal
        configuration.maxSubscriptionsPerPrincipal = self.maxSubscriptionsPerPrincipal
        configuration.maxIDBytes = self.maxIdBytes
        configuration.maxPredicateBytes = self.maxPredicateBytes
        configuration.logRetention = LogRetention(parsing: self.logRetention)!

        do {
            configuration.tls = try self.tls.configuration()
        } catch {
            Self.fail("\(error)")
        }
        if let path = self.identity.auditLog {
            let exists = FileManager.default.fileExists(atPath: path)
            guard
                exists
                    || FileManager.default.createFile(
                        atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]),
                FileHandle(forWritingAtPath: path) != nil
            else {
                Self.fail("cannot write the audit log \(path)")
            }
            configuration.auditLogPath = path
        }
        let authenticator: Authenticator?
        do {
            authenticator = try await self.identity.authenticator(schema: schema, logger: logger)
        } catch {
            Self.fail("\(error)")
        }
        let server = MeridianServer(
            store: store, configuration: configuration, logger: logger, authenticator: authenticator)
        let admin = try self.adminServer(server, registry: registry, tls: configuration.tls)
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: server)]
        if let admin { services.append(.init(service: admin)) }
        var groupConfiguration = ServiceGroupConfiguration(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        // Past it, the calls still open are cancelled (a client that reads nothing cannot hold the process).
        groupConfiguration.maximumGracefulShutdownDuration = Self.duration(self.shutdownTimeout)!
        let group = ServiceGroup(configuration: groupConfiguration)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            tasks.addTask {
                let address = try await server.listeningAddress
                FileHandle.standardOutput.write(Data("listening on \(address)\n".utf8))
                if let admin {
                    let (host, port) = try await admin.listeningAddress
                    let scheme = admin.configuration.tls == nil ? "http" : "https"
                    let shown = host.contains(":") ? "[\(host)]" : host
                    FileHandle.standardOutput.write(Data("admin on \(scheme)://\(shown):\(port)/\n".utf8))
                }
            }
            try await tasks.waitForAll()
        }
    }

    /// With `MERIDIAN_EXIT_WITH_PARENT` set (to anything but empty or `0`), the server shuts down, as on SIGTERM,
    /// once the process that started it has ended. `./meridian.sh test` sets it for every process its tests start:
    /// a test process that crashes, or is killed at a deadline, never runs the cleanup that stops its servers, and
    /// they ran on after it. (Checked by the parent's pid changing: a parent that ends before this is called is not
    /// seen.)
    static func stopWhenOrphaned() {
        guard let value = ProcessInfo.processInfo.environment["MERIDIAN_EXIT_WITH_PARENT"], !value.isEmpty, value != "0"
        else { return }
        let parent = getppid()
        Thread.detachNewThread {
            while getppid() == parent { usleep(200_000) }
            FileHandle.standardError.write(
                Data("meridian-server: the process that started it ended (MERIDIAN_EXIT_WITH_PARENT); stopping\n".utf8))
            kill(getpid(), SIGTERM)
        }
    }

    /// `--admin` and `--admin-token-file`: the token protects the endpoint wherever it could be reached by others
    /// (not on loopback) or wherever the server itself checks identities (`--auth`).
    func validateAdmin() throws {
        guard let admin = self.admin else {
            if self.adminTokenFile != nil { throw ValidationError("--admin-token-file needs --admin HOST:PORT") }
            return
        }
        guard let (host, _) = Self.address(admin) else {
            throw ValidationError("--admin must be HOST:PORT with a port from 0 to 65535, not '\(admin)'")
        }
        if self.adminTokenFile == nil {
            if !["127.0.0.1", "::1", "localhost"].contains(host) {
                throw ValidationError(
                    "--admin on \(host), which is not loopback, needs --admin-token-file: the status page names every client"
                )
            }
            if self.identity.auth != "none" {
                throw ValidationError(
                    "--admin with --auth \(self.identity.auth) needs --admin-token-file: the status page names every client"
                )
            }
        }
    }

    /// The admin endpoint, when `--admin` is given (the token file is read here: exit 2 when it cannot be).
    func adminServer(
        _ server: MeridianServer, registry: PrometheusCollectorRegistry, tls: ServerTLS?
    ) throws -> AdminServer? {
        guard let admin = self.admin, let (host, port) = Self.address(admin) else { return nil }
        var configuration = AdminConfiguration(
            host: host == "localhost" ? "127.0.0.1" : host, port: port,
            tls: tls.map { ($0.certificatePath, $0.keyPath) })
        if let path = self.adminTokenFile {
            guard let data = FileManager.default.contents(atPath: path) else {
                Self.fail("cannot read the admin token file \(path)")
            }
            let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard token.count >= 16, !token.contains(where: \.isWhitespace) else {
                Self.fail("the admin token in \(path) must be one line of at least 16 characters without spaces")
            }
            configuration.bearerToken = token
        }
        return AdminServer(
            server: server, registry: registry, configuration: configuration, logger: Logger(label: "meridian.admin"))
    }

    /// Prints `message` to stderr and exits with status 2.
    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("meridian-server: \(message)\n".utf8))
        Foundation.exit(2)
    }

    /// Runs the command; usage errors exit with status 2 (not ArgumentParser's 64), as the CLI contract says.
    static func main() async {
        if CommandLine.arguments.dropFirst().first == "backup" {
            await BackupCommand.runExitingTwoOnUsageErrors(Array(CommandLine.arguments.dropFirst(2)))
        } else if CommandLine.arguments.dropFirst().first == "log" {
            await LogCommand.runExitingTwoOnUsageErrors(Array(CommandLine.arguments.dropFirst(2)))
        } else if CommandLine.arguments.dropFirst().first == "revoke" {
            await RevokeCommand.runExitingTwoOnUsageErrors(Array(CommandLine.arguments.dropFirst(2)))
        } else {
            await self.runExitingTwoOnUsageErrors()
        }
    }
}
