// MARK: - ServerConfiguration

/// Where a ``MeridianServer`` listens and the limits it enforces.
///
/// Every limit has a default that suits a server on one machine with a few hundred clients:
///
/// ```swift
/// var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)   // port 0: the OS picks a free one
/// configuration.clientQueueLimit = 50_000
/// let server = MeridianServer(store: store, configuration: configuration)
/// ```
public struct ServerConfiguration: Sendable, Hashable {
    /// The address to listen on (an IPv4 or IPv6 literal, or `localhost`).
    public var host: String
    /// The TCP port; 0 lets the operating system pick a free one (read it back with
    /// ``MeridianServer/listeningAddress``).
    public var port: Int
    /// TLS on the listening port (`nil`: plaintext). Files are read again every ``ServerTLS/reloadInterval``, so that
    /// a renewed certificate is used by new connections without a restart.
    public var tls: ServerTLS?
    /// Where the audit log goes (`--audit-log`): JSON lines of authentications, refusals, streams, transactions,
    /// denials, refreshes and revocations; `nil` for none.
    public var auditLogPath: String?
    /// The most `Sync` streams one authenticated subject may hold open at once (0: no limit); past it a stream is
    /// refused `RESOURCE_EXHAUSTED` (`CODE_LIMIT_EXCEEDED`).
    public var maxStreamsPerPrincipal: Int = 64
    /// The most subscriptions one authenticated subject may hold over all its streams (0: no limit); past it a
    /// subscription is refused `CODE_LIMIT_EXCEEDED`.
    public var maxSubscriptionsPerPrincipal: Int = 4_096
    /// The transactions per second one authenticated subject may commit, in bursts of as many (0: no limit); past it a
    /// transaction is answered `CODE_LIMIT_EXCEEDED` with how long to wait.
    public var applyRatePerPrincipal: Int = 1_000
    /// How many subscriptions one `Sync` stream may hold (0: no limit).
    public var maxSubscriptionsPerStream: Int = 256
    /// The largest message the server accepts from a client, in bytes. Larger messages end the call with
    /// `RESOURCE_EXHAUSTED` (`CODE_MESSAGE_TOO_LARGE`).
    public var maxRequestBytes: Int = 4 << 20
    /// How many row changes (after coalescing) may wait for one client whose stream is busy. Past this, the queue is
    /// dropped and every subscription of the client is re-snapshotted, so server memory per client stays bounded.
    public var clientQueueLimit: Int = 100_000
    /// How many bytes may wait for one client: of batches (past it, as past ``clientQueueLimit``, the client is
    /// re-snapshotted), and, apart, of snapshots (a subscription whose snapshot does not fit beside those waiting is
    /// refused with `CODE_LIMIT_EXCEEDED`). Sizes are counted as the row bound counts them (`RowSize`).
    public var clientQueueBytes: Int = 64 << 20
    /// The most changes (of every entity, counted by seq) a resuming subscription may have missed and still be sent
    /// them as deltas; past it, the subscription gets a snapshot (flagged `resnapshot`) instead, decided without
    /// reading the log, so that a cheap request never reads a long stretch of it.
    public var maxResumeChanges: Int = 100_000
    /// The size snapshot and query chunks are cut to, in bytes, unless the client asks for smaller ones (a single
    /// larger row is still sent whole).
    public var snapshotChunkBytes: Int = 1 << 20
    /// How long a `Sync` stream may stay silent before the server sends a `Heartbeat`.
    public var heartbeatInterval: Duration = .seconds(10)
    /// How much of the change log to keep for resuming clients.
    public var logRetention: LogRetention = LogRetention()
    /// How often the server checks the store file for commits by other processes.
    public var commitPollInterval: Duration = .milliseconds(5)
    /// After a lone commit of this server's (one transaction, none waiting to commit), the fan-out runs on the
    /// committing thread — one thread wake-up less before its clients have it — when its estimate is less than this:
    /// the last run that found commits, per row change (20 µs before any has), times the commit's rows; otherwise,
    /// and for every other commit, on its own thread. No commit starts while it runs there, so a costly fan-out (many
    /// clients, large commits) stays on its thread. `.zero`: always on its own thread.
    public var inlineFanoutBudget: Duration = .microseconds(250)
    /// How long the transport may hold a connection's written bytes to send them with later ones (grpc-swift's flush
    /// coalescing: sent at the latest after this, or once 64 KiB wait). `.zero`, the default: each write is sent at
    /// once. A client's queue already merges the Batches that wait for its stream, so the delay mostly added
    /// latency: with grpc-swift's default of 100 µs, a 1-row commit reached its one client 0.15–0.2 ms later at the
    /// median, for more CPU per delivered row (docs/speed-of-light.md).
    public var flushDelay: Duration = .zero
    /// How long a `Sync` stream may stay open without sending `Hello`; past it, the stream ends with
    /// `RESOURCE_EXHAUSTED` (`CODE_LIMIT_EXCEEDED`), so that idle streams cannot pile up.
    public var helloTimeout: Duration = .seconds(10)
    /// The most client connections (TCP) open at once; a connection past it is closed as soon as it is accepted, and
    /// logged. 1,000 stays under the usual soft limit of 1,024 open files, with room for the store's.
    public var maxConnections: Int = 1_000
    /// The most calls (a `Sync` stream, an `Apply`, a `Query`) open at once on one connection (HTTP/2's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`): a client opening more waits for one to end.
    public var maxStreamsPerConnection: Int = 100
    /// How long a connection with no call open stays open; then the server closes it (it has no call to lose). A
    /// client with a `Sync` stream is never idle.
    public var idleTimeout: Duration = .seconds(300)
    /// How long a connection may stay silent before the server sends it an HTTP/2 `PING`; a connection that then
    /// sends nothing (not even the `PING`'s answer) for `helloTimeout` more is closed, as is one that sends nothing
    /// within `helloTimeout` of being accepted.
    public var keepaliveInterval: Duration = .seconds(60)
    /// How often the server commits a small write probe to learn whether the store takes writes: the health service
    /// (`grpc.health.v1.Health`) says NOT_SERVING from the first probe that fails to the first that takes.
    public var healthProbeInterval: Duration = .seconds(5)
    /// The most operations one transaction (`Apply`, or one request of `ApplyStream`) may hold; a larger one is
    /// refused with `CODE_LIMIT_EXCEEDED` before any of it runs.
    public var maxOperationsPerTransaction: Int = 100_000
    /// The longest id — a row's in a write, a subscription's — in UTF-8 bytes; a longer one is refused with
    /// `CODE_LIMIT_EXCEEDED`.
    public var maxIDBytes: Int = 1_024
    /// The longest predicate text of a Subscribe, Replace or Query, in UTF-8 bytes; a longer one is refused with
    /// `CODE_LIMIT_EXCEEDED` before it is parsed.
    public var maxPredicateBytes: Int = 64 << 10
    /// The most values the `IN` lists of one predicate may hold together (literal lists and list variables alike);
    /// more is refused with `CODE_LIMIT_EXCEEDED`. Each value is one SQL parameter; SQLite allows 32,766.
    public var maxInValues: Int = 10_000

    /// A configuration listening on `host:port` with default limits.
    public init(host: String = "127.0.0.1", port: Int = 7400) {
        self.host = host
        self.port = port
    }
}

extension ServerConfiguration {
    /// A duration as the server's flags write it: a whole number with `ms`, `s`, `m`, `h` or `d` (`500ms`, `45s`,
    /// `7d`); `nil` for anything else, or for an amount too large to hold.
    public static func duration(parsing text: some StringProtocol) -> Duration? {
        let units: [(suffix: String, seconds: Int?)] = [
            ("ms", nil), ("s", 1), ("m", 60), ("h", 3_600), ("d", 86_400),
        ]
        for (suffix, seconds) in units where text.hasSuffix(suffix) {
            guard let amount = Int(text.dropLast(suffix.count)), amount >= 0 else { continue }
            guard let seconds else { return .milliseconds(amount) }
            let (total, overflow) = amount.multipliedReportingOverflow(by: seconds)
            return overflow ? nil : .seconds(total)
        }
        return nil
    }
}

// MARK: - LogRetention

/// How long the store's change log keeps changes: the last `changes` changes, and nothing older than `age`.
///
/// Either rule prunes (a change goes when it is not among the last `changes`, or when it is older than `age`); `nil`
/// disables a rule. A client that reconnects after its resume point was pruned gets a fresh snapshot flagged
/// `resnapshot` instead of its missed deltas.
public struct LogRetention: Sendable, Hashable, CustomStringConvertible {
    /// Keep at most this many of the latest changes; `nil` for no count limit.
    public var changes: Int?
    /// Drop changes older than this; `nil` for no age limit.
    public var age: Duration?
    /// How often the server prunes.
    public var interval: Duration = .seconds(60)

    /// A retention policy (defaults: the last 1,000,000 changes, at most 7 days).
    public init(changes: Int? = 1_000_000, age: Duration? = .seconds(7 * 86_400)) {
        self.changes = changes
        self.age = age
    }

    /// Keeps the whole log.
    public static let unlimited = LogRetention(changes: nil, age: nil)

    /// Parses `1000000`, `7d`, `12h`, `30m`, `45s`, `1000000,7d` or `none`.
    ///
    /// - Returns: `nil` when the text is not of that form.
    public init?(parsing text: String) {
        self.init(changes: nil, age: nil)
        if text == "none" || text == "unlimited" { return }
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard !parts.isEmpty, parts.count <= 2 else { return nil }
        for part in parts {
            if let count = Int(part), count >= 0 {
                guard self.changes == nil else { return nil }
                self.changes = count
                continue
            }
            // Whole seconds or more: the description writes ages in d, h or s.
            guard self.age == nil, let age = ServerConfiguration.duration(parsing: part),
                age.components.attoseconds == 0
            else { return nil }
            self.age = age
        }
    }

    public var description: String {
        var parts: [String] = []
        if let changes { parts.append("\(changes)") }
        if let age {
            let seconds = age.components.seconds
            if seconds % 86_400 == 0 {
                parts.append("\(seconds / 86_400)d")
            } else if seconds % 3_600 == 0 {
                parts.append("\(seconds / 3_600)h")
            } else {
                parts.append("\(seconds)s")
            }
        }
        return parts.isEmpty ? "none" : parts.joined(separator: ",")
    }
}

// MARK: - ServerAddress

/// The address a server is listening on.
public struct ServerAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host (an IP address literal).
    public var host: String
    /// The port.
    public var port: Int

    /// Creates an address.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `HOST:PORT` (`[HOST]:PORT` for IPv6).
    public var description: String {
        self.host.contains(":") ? "[\(self.host)]:\(self.port)" : "\(self.host):\(self.port)"
    }
}

// MARK: - ServerTLS

/// The server's certificate and key (PEM files), and whether clients must present a certificate of their own.
public struct ServerTLS: Sendable, Hashable {
    /// Whether a client must present a certificate signed by ``clientCAPath``.
    public enum ClientAuthentication: String, Sendable, Hashable, CaseIterable {
        /// No client certificate is asked for.
        case none
        /// Every client must present one; a connection without is refused during the handshake.
        case require
    }

    /// The certificate chain the server presents (PEM, leaf first).
    public var certificatePath: String
    /// The certificate's private key (PEM).
    public var keyPath: String
    /// The CA certificates (PEM) that sign client certificates.
    public var clientCAPath: String?
    /// Whether clients must present a certificate.
    public var clientAuthentication: ClientAuthentication
    /// How often the certificate and key files are read again.
    public var reloadInterval: Duration

    /// Creates a TLS configuration.
    public init(
        certificatePath: String, keyPath: String, clientCAPath: String? = nil,
        clientAuthentication: ClientAuthentication = .none, reloadInterval: Duration = .seconds(10)
    ) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.clientCAPath = clientCAPath
        self.clientAuthentication = clientAuthentication
        self.reloadInterval = reloadInterval
    }
}
