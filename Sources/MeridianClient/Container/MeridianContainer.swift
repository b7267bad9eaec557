// MARK: - MeridianContainer

public import Logging
public import MeridianCore
internal import Synchronization

/// The client stack in one object — like a persistent container: a server address, a cache (in memory or in a
/// local SQLite file), a cache context, and the connection that keeps it current.
///
/// ```swift
/// let container = try await MeridianContainer(.init(server: "127.0.0.1:7400", cache: .file("/var/lib/app/cache.sqlite")))
/// try await withThrowingDiscardingTaskGroup { group in
///     group.addTask { await container.run() }          // connect, resume, reconnect until cancelled
///     let points = try await container.controller(for: FetchRequest(Point.self), as: Point.self)
///     try await points.waitUntilLoaded()
///     …
/// }
/// ```
///
/// A persisted container shows the cached state at once (controllers created before any network answer with the
/// cached rows at the cached seq), then resumes from the saved seq once connected.
public final class MeridianContainer: Sendable {
    /// Where the cache lives.
    public struct CacheLocation: Sendable, Hashable {
        let path: String?

        /// In memory: nothing survives the process (tests, tools).
        public static let inMemory = CacheLocation(path: nil)

        /// A local SQLite file (created if absent): subscriptions, their rows, the applied seq and the write queue.
        public static func file(_ path: String) -> CacheLocation { CacheLocation(path: path) }
    }

    /// How a container connects and caches.
    public struct Configuration: Sendable {
        /// The server's address.
        public var address: ServerAddress
        /// The server's host (an IPv4 or IPv6 address, or a DNS name).
        public var host: String { self.address.host }
        /// The server's port.
        public var port: Int { self.address.port }
        /// Where the cache lives.
        public var cache: CacheLocation
        /// The schema, when the app ships it; otherwise the cache's, or the server's (`GetSchema`) once connected.
        public var schema: Schema?
        /// A name for the server's logs.
        public var clientName: String
        /// Check every change set against its controller's section counts before delivery, logging failures (off by
        /// default: it costs O(sections) per controller and commit; tests turn it on).
        public var validatesChangeSets: Bool
        /// Where the library logs (label `meridian.client` by default). The library never bootstraps logging.
        public var logger: Logger
        /// The largest message the client takes from the server, in bytes (default 4 MiB, gRPC's usual limit). It is
        /// announced in `Hello.max_batch_bytes`: the server cuts snapshots into chunks and large Batches into parts
        /// that fit (the parts are applied together). Only a single row larger than this comes in a larger message;
        /// the connection accepts up to 4 MiB or this, whichever is more.
        public var maxMessageBytes = 4 << 20
        /// The identity sent with every call (`authorization: Bearer …`); `nil` for a server without authentication.
        public var credentials: Credentials?

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - server: `HOST:PORT`, for example `127.0.0.1:7400`, `[::1]:7400` or `db.example.com:7400`.
        ///   - cache: In memory (default) or a file.
        ///   - schema: The schema, if known.
        ///   - clientName: A name for the server's logs.
        ///   - logger: Where to log.
        /// - Throws: ``ClientError`` with code `malformedRequest` for an address that does not parse
        ///   (``ServerAddress/init(parsing:)``).
        public init(
            server: String,
            cache: CacheLocation = .inMemory,
            schema: Schema? = nil,
            clientName: String = "MeridianClient",
            logger: Logger = Logger(label: "meridian.client")
        ) throws(ClientError) {
            self.address = try ServerAddress(parsing: server)
            self.cache = cache
            self.schema = schema
            self.clientName = clientName
            self.validatesChangeSets = false
            self.logger = logger
        }
    }

    /// The configuration the container was created with.
    public let configuration: Configuration
    /// The cache context: the replicated rows, and the transaction for writes.
    public let context: CacheContext
    let status = ConnectionStatusBox()
    private let running = Mutex(false)

    /// Creates the stack; with a cache file, restores it (schema, subscriptions, rows, seq, write queue).
    ///
    /// - Throws: ``ClientError`` with code `cacheFailure` when the cache file cannot be opened or read.
    public init(_ configuration: Configuration) async throws(ClientError) {
        self.configuration = configuration
        let file = try configuration.cache.path.map { path throws(ClientError) in
            try CacheFile(path: path, logger: configuration.logger)
        }
        self.context = try await CacheContext(
            schema: configuration.schema,
            file: file,
            validatesChangeSets: configuration.validatesChangeSets,
            logger: configuration.logger
        )
    }

    // MARK: - Connection

    /// Connects to the server and keeps the cache current until the calling task is cancelled: resumes from the
    /// applied seq, re-adds every subscription, sends queued writes, and reconnects with exponential backoff and
    /// jitter whenever the connection is lost.
    ///
    /// - Precondition: Not already running.
    public func run() async {
        let alreadyRunning = self.running.withLock { running in
            defer { running = true }
            return running
        }
        precondition(!alreadyRunning, "MeridianContainer.run() is already running")
        defer { self.running.withLock { $0 = false } }
        let connection = SyncConnection(
            address: self.configuration.address,
            clientName: self.configuration.clientName,
            maxMessageBytes: self.configuration.maxMessageBytes,
            credentials: self.configuration.credentials,
            context: self.context,
            logger: self.configuration.logger,
            status: self.status
        )
        await connection.run()
        await self.context.flushToDisk()
    }

    /// Where the connection stands.
    public var connectionStatus: ConnectionStatus {
        self.status.current
    }

    /// The connection's status changes, starting with the current one.
    public func connectionStatusUpdates() -> AsyncStream<ConnectionStatus> {
        self.status.updates()
    }

    // MARK: - Controllers

    /// A results controller of rows for a fetch request. Equal requests share one subscription; the controller shows
    /// the cached rows at once.
    ///
    /// - Throws: ``ClientError`` when the request does not bind to the schema (with the predicate's position).
    public func controller(for request: FetchRequest) async throws(ClientError) -> ResultsController<Row> {
        try await self.makeController(for: request, narrowing: nil, private: false)
    }

    /// A results controller of an app's model type.
    ///
    /// ```swift
    /// let points = try await container.controller(
    ///     for: FetchRequest(Point.self, sortedBy: [.ascending(Point.Attr.title)]), as: Point.self)
    /// ```
    ///
    /// - Throws: ``ClientError``: `modelMismatch` when the request's entity is not the model's.
    public func controller<Model: MeridianModel>(
        for request: FetchRequest,
        as model: Model.Type
    ) async throws(ClientError) -> ResultsController<Model> {
        guard request.entity == Model.entityName else {
            throw ClientError(
                .modelMismatch, "\(Model.self) represents \(Model.entityName), not \(request.entity)",
                entity: request.entity)
        }
        return try await self.makeController(for: request, narrowing: nil, private: false)
    }

    /// A controller that narrows another one locally — its own predicate, order, sections and limit over the
    /// cached rows of `parent`'s subscription — without a second network subscription.
    ///
    /// - Throws: ``ClientError`` when the request does not bind, names another entity, or `parent` is closed.
    public func controller<Element: RowConvertible, Parent: RowConvertible>(
        for request: FetchRequest,
        as element: Element.Type,
        narrowing parent: ResultsController<Parent>
    ) async throws(ClientError) -> ResultsController<Element> {
        try await self.makeController(for: request, narrowing: parent.id, private: false)
    }

    func makeController<Element: RowConvertible>(
        for request: FetchRequest,
        narrowing parent: UInt64?,
        private isPrivate: Bool
    ) async throws(ClientError) -> ResultsController<Element> {
        if Element.self != Row.self {
            let schema: Schema
            do {
                schema = try await self.context.requireSchema()
            } catch {
                throw ClientError(calling: error)
            }
            if let entity = schema.entity(named: request.entity) { try Element.checkFits(entity) }
        }
        let observation = ResultsObservation()
        let id = try await self.context.registerController(
            request: request, narrowing: parent, privateSubscription: isPrivate, observation: observation)
        return ResultsController(context: self.context, id: id, request: request, observation: observation)
    }
}

/// Runs a container's connection around `body`, and stops it (cancelling the connection) when `body` returns or
/// throws.
///
/// ```swift
/// try await withMeridianContainer(.init(server: "127.0.0.1:7400")) { container in
///     let points = try await container.controller(for: FetchRequest(entity: "Point"))
///     try await points.waitUntilLoaded()
/// }
/// ```
public func withMeridianContainer<Result: Sendable>(
    _ configuration: MeridianContainer.Configuration,
    _ body: @Sendable (MeridianContainer) async throws -> Result
) async throws -> Result {
    let container = try await MeridianContainer(configuration)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await container.run() }
        defer { group.cancelAll() }
        return try await body(container)
    }
}
