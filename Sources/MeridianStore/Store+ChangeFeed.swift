// MARK: - ChangeFeed: the log, read on a connection of its own

internal import GRDB
public import MeridianCore
internal import Synchronization

/// A reader of the change log with a database connection of its own, for the one caller that reads after every
/// commit: the server's fan-out.
///
/// Its reads run on the calling thread (an asynchronous read would hop to a reader's queue and back, two thread
/// wake-ups per read, which cost the server 0.6 µs of CPU per delivered row and 0.4 ms of latency with 100-row
/// commits in `meridian-bench server`), so call it from a thread that may block, not from the cooperative pool. With
/// its own connection it never waits for a reader that snapshots and queries hold, and never holds one from them.
///
/// For a file store the connection is a read-only one of its own; an in-memory store has one connection, which the
/// feed shares.
public final class ChangeFeed: Sendable {
    let store: Store
    let connection: any DatabaseReader
    private let ownsConnection: Bool
    private let closed = Mutex(false)

    init(store: Store) throws {
        self.store = store
        if let path = store.path {
            do {
                self.connection = try DatabaseQueue(
                    path: path, configuration: store.configuration.grdb(readonly: true))
            } catch {
                throw StoreError.wrap(error, "cannot open a connection for the change feed")
            }
            self.ownsConnection = true
        } else {
            self.connection = store.writer
            self.ownsConnection = false
        }
        // From now on the committer keeps its commits for this feed's reads (``RecentCommits``).
        store.recentCommits.enable()
    }

    /// Whether the feed reads on a connection of its own (a file store), not on the store's single connection (an
    /// in-memory store, whose writer it would wait for: then it must not be read from the committing thread).
    package var hasOwnConnection: Bool { self.ownsConnection }

    /// The changes after `seq`, up to the latest commit, read in one read transaction on the calling thread; as
    /// ``Store/changes(after:entities:limit:)``.
    public func changes(after seq: Int64, entities: Set<String>? = nil, limit: Int? = nil) throws -> ChangesResult {
        let read = self.store.changesRead(after: seq, entities: entities, limit: limit, recent: true)
        let (result, misfits) = try self.read("cannot read the change log", read)
        if misfits > 0 { self.store.reportMisfits(misfits, entity: nil) }
        return result
    }

    /// Runs `body` in one read transaction on the calling thread: what it reads through the ``FeedTransaction`` is
    /// all at one seq (the fan-out reads a batch of changes and, when a limited subscription's window runs short,
    /// the rows that refill it, at the batch's end).
    public func withTransaction<T>(_ body: (FeedTransaction) throws -> T) throws -> T {
        let transaction = FeedTransaction(store: self.store)
        defer {
            if transaction.misfits > 0 { self.store.reportMisfits(transaction.misfits, entity: nil) }
        }
        return try self.read("cannot read the change log") { db in
            transaction.db = db
            defer { transaction.db = nil }
            return try body(transaction)
        }
    }

    /// The latest committed seq, read on the calling thread.
    public func latestSeq() throws -> Int64 {
        try self.read("cannot read the latest seq") { db in try Store.latestSeq(db) }
    }

    /// Tells the feed that its reader will not read the changes through `seq` (a fan-out with no client skips them):
    /// what the committer kept of them for this feed is let go at once, not when a later read passes them.
    public func skip(through seq: Int64) {
        self.store.recentCommits.drop(through: seq)
    }

    /// Closes the feed's connection; reads fail afterwards.
    public func close() {
        let wasClosed = self.closed.withLock { closed in
            defer { closed = true }
            return closed
        }
        if !wasClosed { self.store.recentCommits.disable() }
        if !wasClosed, self.ownsConnection, let queue = self.connection as? DatabaseQueue { try? queue.close() }
    }

    private func read<T>(_ what: String, _ body: (Database) throws -> T) throws -> T {
        do {
            guard self.ownsConnection, let queue = self.connection as? DatabaseQueue else {
                return try self.connection.read(body)
            }
            // The feed's own read-only connection: its read transaction begun and ended with cached statements, on
            // the path of every commit to its clients (GRDB's `read` prepares them anew for every read).
            return try queue.inDatabase { db in
                var result: T?
                try db.inCachedTransaction(.deferred) {
                    result = try body(db)
                    return .commit
                }
                return result!
            }
        } catch {
            throw StoreError.wrap(error, what)
        }
    }

    deinit {
        self.close()
    }
}

extension Store {
    /// A reader of the change log with a connection of its own (see ``ChangeFeed``).
    ///
    /// - Throws: ``StoreError`` when the connection cannot be opened.
    public func changeFeed() throws -> ChangeFeed {
        try ChangeFeed(store: self)
    }
}

/// The reads of one ``ChangeFeed/withTransaction(_:)``, all at one seq; valid only inside it.
public final class FeedTransaction {
    let store: Store
    fileprivate var db: Database?
    fileprivate var misfits = 0

    fileprivate init(store: Store) {
        self.store = store
    }

    /// The changes after `seq`, up to the transaction's seq; as ``Store/changes(after:entities:limit:)``. The
    /// store's own latest commits come from memory when they cover the range (``RecentCommits``), the rest from the
    /// log.
    public func changes(after seq: Int64, entities: Set<String>? = nil, limit: Int? = nil) throws -> ChangesResult {
        try self.changes(after: seq, entities: entities, limit: limit, recent: true)
    }

    /// ``changes(after:entities:limit:)``, with `recent: false` read from the log alone (the tests compare the two).
    func changes(after seq: Int64, entities: Set<String>?, limit: Int?, recent: Bool) throws -> ChangesResult {
        guard let db else { throw StoreError(.internalError, "a feed transaction used after it ended") }
        let (result, misfits) = try self.store.changesRead(
            after: seq, entities: entities, limit: limit, recent: recent)(db)
        self.misfits += misfits
        return result
    }

    /// The first `limit` rows of a query at the transaction's seq; as
    /// ``Store/snapshot(entity:where:orderBy:limit:)`` (with no time limit: the fan-out reads a limited
    /// subscription's few rows here).
    public func snapshot(
        entity: String, where predicate: RowPredicate? = nil, orderBy order: RowOrder? = nil, limit: Int? = nil
    ) throws -> Snapshot {
        guard let db else { throw StoreError(.internalError, "a feed transaction used after it ended") }
        let (entitySchema, query, arguments) = try self.store.snapshotQuery(
            entity: entity, where: predicate, orderBy: order, limit: limit)
        let statement: Statement
        do {
            statement = try db.cachedStatement(sql: query)
        } catch {
            throw StoreError(.schemaMismatch, "the query does not fit \(entity): \(query)", cause: error)
        }
        var rows: [MeridianCore.Row] = []
        var versions: [Int64] = []
        let cursor = try GRDB.Row.fetchCursor(statement, arguments: arguments)
        var reader = ChangeDecoding.RowReader(entitySchema)
        while let row = try cursor.next() {
            rows.append(reader.row(id: row[0], of: statement, from: 2, misfits: &self.misfits))
            versions.append(row[1])
        }
        return Snapshot(rows: rows, versions: versions, seq: try Store.latestSeq(db))
    }
}
