// MARK: - Store

internal import CMeridianSQLite
internal import Foundation
internal import GRDB
public import Logging
public import MeridianCore

#if canImport(Glibc)
    internal import Glibc
#endif

/// SQLite's memory statistics turned off, once per process, before Meridian's first connection opens: with them on,
/// every allocation and free inside SQLite takes one process-wide mutex to count its bytes (2% of all the CPU of a
/// server taking 100-row transactions went to that mutex alone; the store's writer commits them about 8% faster
/// without: docs/store.md, "SQLite's memory statistics"). What they would give — SQLite's bytes in use, its soft and
/// hard heap limits — nothing in Meridian reads. Where SQLite was already initialized by the time the first store
/// opens (the program opened another database first), SQLite refuses the change and keeps counting; nothing else
/// differs.
private let sqliteProcessSetup: Void = {
    _ = meridian_sqlite3_disable_memory_statistics()
}()

/// The authoritative store: one SQLite file (or an in-memory database) holding the schema's entity tables, the
/// change log of every write — Meridian logs its own, SQLite triggers those of any other process — and the recorded
/// schema.
///
/// Open it at a path you choose; it creates the file, migrates additive schema changes, or refuses with a message
/// naming each difference that cannot be migrated:
///
/// ```swift
/// let store = try Store.open(path: "/var/lib/meridian/store.sqlite", schema: schema, logger: logger)
/// let result = try await store.apply([.insert("Item", id: "a", ["title": "Pen"])])
/// let snapshot = try await store.snapshot(entity: "Item", orderBy: "\"title\"")
/// if case .changes(let batch) = try await store.changes(after: snapshot.seq) { … }
/// ```
///
/// All methods may be called from any task. Writes are group-committed (see ``apply(_:policy:)``).
public final class Store: Sendable {
    /// How a store uses SQLite.
    public struct Configuration: Sendable {
        /// How long a write waits for another process's write lock before failing.
        public var busyTimeout: Duration = .seconds(5)
        /// The most transactions committed together in one SQLite commit; 1 commits each transaction alone.
        public var maxGroupCommitSize: Int = 256
        /// The most concurrent read connections (file stores only).
        public var maximumReaderCount: Int = 5
        /// How far a commit has reached the disk when `apply` returns (file stores only).
        public var durability: Durability = .full
        /// The largest row a write may leave, as ``RowSize`` counts it; a larger one is refused with
        /// ``StoreError/Code/tooLarge`` and nothing of its transaction is written. `nil`: no bound.
        public var maxRowBytes: Int?
        /// How long one snapshot read (``Store/snapshot(entity:where:orderBy:limit:)``, a subscription's rows, a
        /// query) may run; past it, it fails with ``StoreError/Code/timedOut``. `nil`: no limit. The change log's
        /// reads and writes are not limited.
        public var readTimeout: Duration?

        /// The default configuration.
        public init() {}

        func grdb(readonly: Bool = false) -> GRDB.Configuration {
            _ = sqliteProcessSetup
            var config = GRDB.Configuration()
            config.readonly = readonly
            config.label = "meridian.store"
            config.maximumReaderCount = self.maximumReaderCount
            let timeout = self.busyTimeout.components
            config.busyMode = .timeout(Double(timeout.seconds) + Double(timeout.attoseconds) * 1e-18)
            config.prepareDatabase { db in
                // Meridian SQL functions are registered here.
                db.registerMeridianFunctions()
                try Store.disableTriggers(db)
            }
            return config
        }
    }

    /// How far a commit has reached the disk when ``Store/apply(_:policy:idempotencyKey:)`` returns its `seq`.
    public enum Durability: String, Sendable, CaseIterable {
        /// The commit is flushed to the disk (`fsync`) first (SQLite's `synchronous=FULL`): it survives the process
        /// being killed, and also a power loss or an operating-system crash. The default.
        case full
        /// The commit is written to the WAL file, flushed to the disk only at checkpoints (`synchronous=NORMAL`):
        /// it survives the process being killed, but a power loss or an operating-system crash may undo the last
        /// commits — whose `seq`s clients may already have applied, and which the store then hands out again for
        /// other changes. Faster for single-row transactions where the disk's flush is slow.
        case normal

        /// The value of SQLite's `synchronous` pragma that gives this durability.
        public var synchronousPragma: String { self == .full ? "FULL" : "NORMAL" }
    }

    /// Turns off SQLite's triggers on one of the store's connections. The capture triggers log the writes of other
    /// processes (the `sqlite3` shell, another program); Meridian's own writes log themselves, in the same
    /// transaction and with the same entries (`TransactionExecutor`), at a fraction of a trigger's cost per row.
    static func disableTriggers(_ db: Database) throws {
        let code = meridian_sqlite3_disable_triggers(UnsafeMutableRawPointer(db.sqliteConnection))
        guard code == 0 else {
            throw StoreError(
                .internalError, "cannot turn off SQLite's triggers on the store's connection (code \(code))")
        }
    }

    /// Turns SQLite's memory statistics off for the process, as a store's first connection does (`sqliteProcessSetup`):
    /// for a program that opens plain SQLite connections before its first store (the benchmark's ceilings), so that
    /// they run under the same setting as the store.
    package static func prepareSQLite() { _ = sqliteProcessSetup }

    /// Whether SQLite counts the bytes it allocates in this process; for tests. Meaningful while a connection is open.
    package static var sqliteCountsMemory: Bool { meridian_sqlite3_memory_statistics_on() != 0 }

    /// The writer connection's `synchronous` pragma: 2 (`FULL`) or 1 (`NORMAL`); for tests.
    package func writerSynchronous() throws -> Int {
        try self.writer.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// Sets the writer connection's `synchronous` pragma. GRDB's `DatabasePool` sets `NORMAL` when it opens the
    /// writer (after `prepareDatabase`), so this runs once the pool is open.
    static func applyDurability(_ durability: Durability, to pool: DatabasePool) throws {
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = \(durability.synchronousPragma)")
        }
    }

    /// How long one snapshot read may run (``Configuration/readTimeout``).
    public var readTimeout: Duration? { self.configuration.readTimeout }

    /// The schema the store serves.
    public let schema: Schema
    /// The file's path, `nil` for an in-memory store.
    public let path: String?
    let writer: any DatabaseWriter
    /// The schema's entities arranged for validating operations quickly.
    let validation: OperationValidation.Plan
    /// The schema's entities arranged for reading changes (``ChangeDecoding/Plans``).
    let changeReads: ChangeDecoding.Plans
    let logger: Logger
    let notifier: CommitNotifier
    let committer: GroupCommitter
    /// The store's own latest commits, kept for the change feed while one is open (``RecentCommits``).
    let recentCommits: RecentCommits
    let configuration: Configuration
    /// At most one read per reader at a time; the others wait here, at most ``Configuration/readTimeout``.
    let readGate: ReadGate
    /// A directory this store created and removes when it is deinitialized (`temporary()` only).
    private let ownedDirectory: String?

    private init(
        writer: any DatabaseWriter, schema: Schema, path: String?, configuration: Configuration, logger: Logger,
        ownedDirectory: String?
    ) {
        self.writer = writer
        self.schema = schema
        self.validation = OperationValidation.Plan(schema: schema, maxRowBytes: configuration.maxRowBytes)
        self.changeReads = ChangeDecoding.Plans(schema: schema)
        self.path = path
        self.logger = logger
        self.configuration = configuration
        self.readGate = ReadGate(permits: writer is DatabasePool ? configuration.maximumReaderCount : 1)
        self.ownedDirectory = ownedDirectory
        let notifier = CommitNotifier()
        self.notifier = notifier
        let recent = RecentCommits()
        self.recentCommits = recent
        self.committer = GroupCommitter(
            writer: writer, own: StoreDDL.OwnEntries(schema: schema), maxBatch: configuration.maxGroupCommitSize,
            maxRowBytes: configuration.maxRowBytes, recent: recent
        ) { seq, idleRows in
            notifier.publish(seq, idleRows: idleRows)
        }
    }

    deinit {
        self.notifier.finishAll()
        if let directory = self.ownedDirectory {
            try? (self.writer as? DatabasePool)?.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    // MARK: - Opening

    /// Opens (or creates) the store file at `path`, migrating additive schema changes.
    ///
    /// - Parameters:
    ///   - path: The SQLite file; its directory must exist. Other processes may write the same file.
    ///   - schema: The schema to serve.
    ///   - configuration: SQLite settings.
    ///   - logger: Receives an `info` line when the store is created or migrated.
    /// - Returns: The open store (WAL mode, a busy timeout, `synchronous` as `configuration.durability` says).
    /// - Throws: ``StoreError`` — `migrationRefused` with one line per difference that cannot be migrated and what to
    ///   do about it, or `io` when the file cannot be opened.
    public static func open(
        path: String,
        schema: Schema,
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "meridian.store")
    ) throws -> Store {
        let existed = FileManager.default.fileExists(atPath: path)
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: path, configuration: configuration.grdb())
            try applyDurability(configuration.durability, to: pool)
        } catch {
            let directory = (path as NSString).deletingLastPathComponent
            if Store.isOnReadOnlyFileSystem(path) {
                throw StoreError(
                    .io,
                    "cannot open the store at '\(path)': its file system is read-only (the store writes its file, its "
                        + "WAL and its shared-memory index beside it); mount it read-write",
                    cause: error)
            }
            var isDirectory: ObjCBool = false
            if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
                throw StoreError(
                    .io, "cannot open the store at '\(path)': the directory '\(directory)' does not exist", cause: error
                )
            }
            if !directory.isEmpty, !isDirectory.boolValue {
                throw StoreError(
                    .io, "cannot open the store at '\(path)': '\(directory)' is not a directory", cause: error)
            }
            throw StoreError(.io, "cannot open the store at '\(path)'", cause: error)
        }
        do {
            try prepareSchema(pool, schema: schema, path: path, logger: logger)
        } catch {
            if !existed { removeUnprepared(pool, path: path) }
            throw error
        }
        return Store(
            writer: pool, schema: schema, path: path, configuration: configuration, logger: logger, ownedDirectory: nil)
    }

    /// Removes the file that a failed ``open(path:schema:configuration:logger:)`` created (its WAL and shared-memory
    /// index too), so that a refused schema leaves nothing behind — unless something wrote a table into it
    /// meanwhile (another process opening the same new path).
    private static func removeUnprepared(_ pool: DatabasePool, path: String) {
        let empty = (try? pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }) == 0
        try? pool.close()
        guard empty else { return }
        for file in [path, path + "-wal", path + "-shm"] { try? FileManager.default.removeItem(atPath: file) }
    }

    /// Creates a store in a new, unique temporary directory, removed when the store is deinitialized.
    ///
    /// It is a real file store (WAL, several readers), for tests that want one without choosing a path.
    public static func temporary(
        schema: Schema,
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "meridian.store")
    ) throws -> Store {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("meridian-store-\(UUID().uuidString)").path
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw StoreError(.io, "cannot create a temporary directory", cause: error)
        }
        let path = directory + "/store.sqlite"
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: path, configuration: configuration.grdb())
            try applyDurability(configuration.durability, to: pool)
            try prepareSchema(pool, schema: schema, path: path, logger: logger)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw StoreError.wrap(error, "cannot create a temporary store")
        }
        return Store(
            writer: pool, schema: schema, path: path, configuration: configuration, logger: logger,
            ownedDirectory: directory)
    }

    /// Creates a store in memory (one connection; nothing outlives the store, and no other process can write it).
    public static func inMemory(
        schema: Schema,
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "meridian.store")
    ) throws -> Store {
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(configuration: configuration.grdb())
        } catch {
            throw StoreError(.io, "cannot create an in-memory store", cause: error)
        }
        try prepareSchema(queue, schema: schema, path: ":memory:", logger: logger)
        return Store(
            writer: queue, schema: schema, path: nil, configuration: configuration, logger: logger, ownedDirectory: nil)
    }

    /// Closes the database connections; later calls fail. Subscribers of ``commits(pollInterval:)`` end.
    public func close() throws {
        self.notifier.finishAll()
        do {
            if let pool = self.writer as? DatabasePool { try pool.close() }
            if let queue = self.writer as? DatabaseQueue { try queue.close() }
        } catch {
            throw StoreError.wrap(error, "cannot close the store")
        }
    }

    // MARK: - Writing

    /// Applies a transaction atomically: every operation or none.
    ///
    /// Operations are validated against the schema first (unknown entity or attribute, type — an int for a double
    /// attribute is converted —, a required attribute missing or nil, NaN). An operation with an `expectedVersion`
    /// that is not the row's current version conflicts on the attributes it sets that other writes changed since
    /// that version; under `.storeWins` such a conflict (or a delete of a changed row) rejects the transaction, under
    /// `.clientWins` the operation is applied.
    ///
    /// Concurrent calls are group-committed: those arriving while a commit runs share the next SQLite commit, each in
    /// its own savepoint, so one failing does not fail the others.
    ///
    /// With an `idempotencyKey`, the transaction is applied at most once for that key: when a transaction with the
    /// same key and the same request (operations and policy) already committed — a client retrying after its answer
    /// was lost — nothing is written and that commit's result is returned; a different request reusing the key is
    /// refused with `alreadyExists`. Keys are kept as long as the change log keeps their commit (see ``prune``).
    ///
    /// - Parameters:
    ///   - operations: The transaction.
    ///   - policy: How conflicts are settled.
    ///   - idempotencyKey: A key unique to this transaction (at most 128 UTF-8 bytes), or `nil`.
    ///   - authorizer: Decides each write inside the transaction from the row before and after it (the caller's
    ///     rules, ``BoundAccess``); a row it answers `notFound` for is reported exactly as a missing row, and its
    ///     ``WriteAuthorizer/idempotencyScope`` scopes the key. `nil`: every write may go ahead.
    ///   - author: Who writes the transaction (a subject), recorded with its log entries in the same SQLite
    ///     transaction and read back by ``authoredChanges(after:author:limit:)``; `nil` records nobody. Without an
    ///     `authorizer`, it scopes the idempotency key.
    /// - Returns: The commit's `seq` and the written rows' ids and versions.
    /// - Throws: ``StoreError`` with `operationIndex` set: `validation`, `conflict` (with `attributes`), `notFound`,
    ///   `alreadyExists` (also for a key reused by another request), `permissionDenied`; `validation` for a key too
    ///   long; or `io`.
    @discardableResult
    public func apply(
        _ operations: [WriteOperation],
        policy: ConflictPolicy = .storeWins,
        idempotencyKey: String? = nil,
        authorizer: (any WriteAuthorizer)? = nil,
        author: String? = nil
    ) async throws -> CommitResult {
        try await self.submit(
            operations, policy: policy, idempotencyKey: idempotencyKey, authorizer: authorizer, author: author
        ).committed()
    }

    /// Checks a transaction and queues it for commit without waiting: transactions submitted one after another commit
    /// in that order, so a caller that pipelines them (the server's `ApplyStream`) keeps their order while they share
    /// group commits. ``apply(_:policy:idempotencyKey:authorizer:author:)`` is `submit` and then waiting.
    ///
    /// ```swift
    /// let first = try store.submit([.insert("Point", id: "a", ["title": "A"])])
    /// let second = try store.submit([.update("Point", id: "a", ["title": "B"])])  // commits after `first`
    /// _ = try await (first.committed(), second.committed())
    /// ```
    ///
    /// - Returns: The queued transaction, whose ``PendingCommit/committed()`` is its outcome.
    /// - Throws: ``StoreError`` `validation` for an invalid operation or a key too long (nothing is queued).
    public func submit(
        _ operations: [WriteOperation],
        policy: ConflictPolicy = .storeWins,
        idempotencyKey: String? = nil,
        authorizer: (any WriteAuthorizer)? = nil,
        author: String? = nil
    ) throws -> PendingCommit {
        if let idempotencyKey, idempotencyKey.utf8.count > StoreDDL.maxIdempotencyKeyBytes {
            throw StoreError(
                .validation,
                "the idempotency key is \(idempotencyKey.utf8.count) bytes long; at most \(StoreDDL.maxIdempotencyKeyBytes) are allowed"
            )
        }
        let prepared = try self.validation.prepare(operations)
        let key = idempotencyKey.flatMap { key in
            // A caller's keys live in its own space: the scope's length first, so that no two (scope, key) pairs
            // give the same stored key.
            // The scope is the rules' caller or, on a server with identities and no rules, the author.
            let scope = authorizer?.idempotencyScope ?? author
            let scoped = scope.map { "\($0.utf8.count):\($0)/\(key)" } ?? key
            return key.isEmpty ? nil : (scoped, RequestDigest.of(operations, policy: policy))
        }
        return PendingCommit(
            answer: self.committer.submit(
                prepared, policy: policy, idempotencyKey: key, authorizer: authorizer, author: author))
    }

    // MARK: - Helpers

    /// Whether the directory that holds `path` is on a file system mounted read-only.
    static func isOnReadOnlyFileSystem(_ path: String) -> Bool {
        let directory = (path as NSString).deletingLastPathComponent
        var info = statvfs()
        guard statvfs(directory.isEmpty ? "." : directory, &info) == 0 else { return false }
        return info.f_flag & UInt(ST_RDONLY) != 0
    }

    static func latestSeq(_ db: Database) throws -> Int64 {
        try RawRows.first(
            db.cachedStatement(sql: "SELECT seq FROM sqlite_sequence WHERE name = 'meridian_changes'"), RawRows.int64)
            ?? 0
    }

    func read<T: Sendable>(_ what: String, _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await self.gated(what) {
            do {
                return try await self.writer.read(body)
            } catch {
                throw StoreError.wrap(error, what)
            }
        }
    }

    /// Runs `read` once the ``ReadGate`` admits it.
    ///
    /// - Throws: ``StoreError`` `timedOut` when every reader stayed busy for the read timeout, or what `read` throws.
    func gated<T: Sendable>(_ what: String, _ read: () async throws -> T) async throws -> T {
        if let timeout = self.configuration.readTimeout {
            guard await self.readGate.acquire(timeout: timeout) else {
                throw StoreError(
                    .timedOut,
                    "\(what): every one of the store's \(self.readGate.permits) readers stayed busy for "
                        + "\(timeout.spoken) (long snapshots or queries), so the read was not started")
            }
        } else {
            // Without a timeout the gate waits as long as it takes.
            _ = await self.readGate.acquire(timeout: nil)
        }
        defer { self.readGate.release() }
        return try await read()
    }

    /// Microseconds since the Unix epoch: the time of Meridian's own log entries, and what retention by age
    /// compares them with.
    static func nowMicroseconds() -> Int64 {
        Int64(Date().timeIntervalSince1970 * 1_000_000)
    }

    func requireEntity(_ name: String) throws -> EntitySchema {
        guard let entity = self.schema.entity(named: name) else {
            let known = self.schema.entities.map(\.name).joined(separator: ", ")
            throw StoreError(.schemaMismatch, "unknown entity '\(name)' (the schema has: \(known))")
        }
        return entity
    }
}
