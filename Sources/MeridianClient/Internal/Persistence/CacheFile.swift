// MARK: - CacheFile
//
// The only place MeridianClient touches GRDB: the local SQLite file that persists a cache context (its schema, its
// subscriptions and their rows, the last applied seq and the pending write queue). Everything here is internal; the
// rest of the module sees `CacheFile`, `PersistedCache` and `CacheDelta` only, all plain values.
//
// Writes are queued in order with `asyncWrite` (GRDB's writer is serial), so the actor never blocks on the disk and
// every delta lands in commit order; each delta is one SQLite transaction, so the file always holds the state at one
// applied seq, never half of a batch.

internal import Foundation
internal import GRDB
internal import Logging

/// What a persisted cache file holds, read back at start-up.
struct PersistedCache: Sendable {
    /// The last applied seq (0 when nothing was applied).
    var seq: Int64 = 0
    /// The serialized schema the cache was built with (a `Meridian_V1_Schema`), if known.
    var schema: [UInt8]?
    /// The subscriptions, in creation order.
    var subscriptions: [PersistedSubscription] = []
    /// Every cached row, by entity, as serialized `Meridian_V1_Row`s.
    var rows: [(entity: String, id: String, bytes: [UInt8])] = []
    /// Subscription memberships: which subscription holds which row.
    var memberships: [(subscription: String, id: String)] = []
    /// The pending write queue, oldest first.
    var transactions: [PersistedTransaction] = []
}

/// One persisted subscription.
struct PersistedSubscription: Sendable {
    var id: String
    /// The serialized `Meridian_V1_FetchRequest`.
    var request: [UInt8]
    /// Whether its rows are complete as of the persisted seq (it may resume).
    var hasData: Bool
    /// Whether other controllers may share it (region-mode subscriptions are private).
    var shareable: Bool
}

/// One persisted pending transaction.
struct PersistedTransaction: Sendable {
    var localID: Int64
    /// The serialized `Meridian_V1_ApplyRequest`.
    var request: [UInt8]
    /// The commit seq the server answered with, if it did.
    var commitSeq: Int64?
}

/// The changes of one commit, to persist in one transaction.
struct CacheDelta: Sendable {
    var seq: Int64?
    var schema: [UInt8]?
    /// Rows written (bytes) or removed (nil), by entity and id.
    var rows: [RowKey: [UInt8]?] = [:]
    /// Memberships added (true) or removed (false), net over the commit.
    var memberships: [MembershipKey: Bool] = [:]
    var subscriptions: [String: PersistedSubscription?] = [:]
    var transactions: [Int64: PersistedTransaction?] = [:]

    var isEmpty: Bool {
        self.seq == nil && self.schema == nil && self.rows.isEmpty && self.memberships.isEmpty
            && self.subscriptions.isEmpty && self.transactions.isEmpty
    }
}

/// The identity of a cached row: its entity and id.
struct RowKey: Hashable, Sendable {
    var entity: String
    var id: String
}

/// The identity of a membership: a subscription and a row id.
struct MembershipKey: Hashable, Sendable {
    var subscription: String
    var id: String
}

/// The SQLite file behind a persisted cache.
final class CacheFile: Sendable {
    private let queue: DatabaseQueue
    private let logger: Logger

    /// Opens (creating if needed) the cache file at `path` and migrates it.
    ///
    /// - Throws: ``ClientError`` with code `cacheFailure`.
    init(path: String, logger: Logger) throws(ClientError) {
        self.logger = logger
        do {
            var configuration = Configuration()
            configuration.journalMode = .wal
            self.queue = try DatabaseQueue(path: path, configuration: configuration)
            var migrator = DatabaseMigrator()
            migrator.registerMigration("v1") { db in
                try db.execute(
                    sql: """
                        CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value BLOB);
                        CREATE TABLE subscription (
                            id TEXT PRIMARY KEY NOT NULL, request BLOB NOT NULL,
                            has_data INTEGER NOT NULL, shareable INTEGER NOT NULL, position INTEGER NOT NULL);
                        CREATE TABLE row (
                            entity TEXT NOT NULL, id TEXT NOT NULL, bytes BLOB NOT NULL, PRIMARY KEY (entity, id))
                            WITHOUT ROWID;
                        CREATE TABLE membership (
                            subscription TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (subscription, id))
                            WITHOUT ROWID;
                        CREATE TABLE pending_transaction (
                            local_id INTEGER PRIMARY KEY NOT NULL, request BLOB NOT NULL, commit_seq INTEGER);
                        """)
            }
            try migrator.migrate(self.queue)
        } catch {
            throw ClientError(.cacheFailure, "cannot open the cache file \(path): \(error)", cause: error)
        }
    }

    /// Reads everything the file holds.
    ///
    /// - Throws: ``ClientError`` with code `cacheFailure`.
    func load() throws(ClientError) -> PersistedCache {
        do {
            return try self.queue.read { db in
                var cache = PersistedCache()
                for row in try GRDB.Row.fetchAll(db, sql: "SELECT key, value FROM meta") {
                    let key: String = row["key"]
                    switch key {
                    case "seq":
                        let bytes: Data = row["value"] ?? Data()
                        cache.seq = Int64(String(decoding: bytes, as: UTF8.self)) ?? 0
                    case "schema":
                        let bytes: Data? = row["value"]
                        cache.schema = bytes.map { [UInt8]($0) }
                    default: break
                    }
                }
                cache.subscriptions = try GRDB.Row.fetchAll(
                    db, sql: "SELECT id, request, has_data, shareable FROM subscription ORDER BY position"
                ).map { row in
                    PersistedSubscription(
                        id: row["id"], request: [UInt8](row["request"] as Data), hasData: row["has_data"],
                        shareable: row["shareable"])
                }
                cache.rows = try GRDB.Row.fetchAll(db, sql: "SELECT entity, id, bytes FROM row").map { row in
                    (row["entity"], row["id"], [UInt8](row["bytes"] as Data))
                }
                cache.memberships = try GRDB.Row.fetchAll(db, sql: "SELECT subscription, id FROM membership").map {
                    ($0["subscription"], $0["id"])
                }
                cache.transactions = try GRDB.Row.fetchAll(
                    db, sql: "SELECT local_id, request, commit_seq FROM pending_transaction ORDER BY local_id"
                ).map { row in
                    PersistedTransaction(
                        localID: row["local_id"], request: [UInt8](row["request"] as Data), commitSeq: row["commit_seq"]
                    )
                }
                return cache
            }
        } catch {
            throw ClientError(.cacheFailure, "cannot read the cache file: \(error)", cause: error)
        }
    }

    /// Queues one commit's changes; they are written in call order, each in one transaction.
    func write(_ delta: CacheDelta) {
        guard !delta.isEmpty else { return }
        let logger = self.logger
        self.queue.asyncWrite(
            { db in
                try Self.apply(delta, to: db)
            },
            completion: { _, result in
                if case .failure(let error) = result {
                    logger.error("cannot write the cache file", metadata: ["meridian.error": "\(error)"])
                }
            })
    }

    /// Waits until every queued write is on disk (for tests and orderly shutdown).
    func flush() async {
        _ = try? await self.queue.write { _ in }
    }

    /// Runs one statement through the connection's statement cache: a commit's delta runs the same few statements
    /// once per row, and compiling each (what `Database.execute(sql:)` does) cost more than running it.
    private static func execute(_ db: Database, sql: String, arguments: StatementArguments) throws {
        try db.cachedStatement(sql: sql).execute(arguments: arguments)
    }

    private static func apply(_ delta: CacheDelta, to db: Database) throws {
        if let seq = delta.seq {
            try Self.execute(
                db, sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('seq', ?)",
                arguments: [Data(String(seq).utf8)])
        }
        if let schema = delta.schema {
            try Self.execute(
                db, sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)", arguments: [Data(schema)])
        }
        var position = try Int.fetchOne(db, sql: "SELECT COALESCE(MAX(position), 0) FROM subscription") ?? 0
        for (id, subscription) in delta.subscriptions {
            if let subscription {
                position += 1
                try Self.execute(
                    db,
                    sql: """
                        INSERT INTO subscription (id, request, has_data, shareable, position) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (id) DO UPDATE SET request = excluded.request, has_data = excluded.has_data,
                            shareable = excluded.shareable
                        """,
                    arguments: [id, Data(subscription.request), subscription.hasData, subscription.shareable, position])
            } else {
                try Self.execute(db, sql: "DELETE FROM subscription WHERE id = ?", arguments: [id])
                try Self.execute(db, sql: "DELETE FROM membership WHERE subscription = ?", arguments: [id])
            }
        }
        for (key, bytes) in delta.rows {
            if let bytes {
                try Self.execute(
                    db, sql: "INSERT OR REPLACE INTO row (entity, id, bytes) VALUES (?, ?, ?)",
                    arguments: [key.entity, key.id, Data(bytes)])
            } else {
                try Self.execute(
                    db, sql: "DELETE FROM row WHERE entity = ? AND id = ?", arguments: [key.entity, key.id])
            }
        }
        for (key, added) in delta.memberships {
            if added {
                try Self.execute(
                    db, sql: "INSERT OR IGNORE INTO membership (subscription, id) VALUES (?, ?)",
                    arguments: [key.subscription, key.id])
            } else {
                try Self.execute(
                    db, sql: "DELETE FROM membership WHERE subscription = ? AND id = ?",
                    arguments: [key.subscription, key.id])
            }
        }
        for (localID, transaction) in delta.transactions {
            if let transaction {
                try Self.execute(
                    db,
                    sql: "INSERT OR REPLACE INTO pending_transaction (local_id, request, commit_seq) VALUES (?, ?, ?)",
                    arguments: [localID, Data(transaction.request), transaction.commitSeq])
            } else {
                try Self.execute(db, sql: "DELETE FROM pending_transaction WHERE local_id = ?", arguments: [localID])
            }
        }
    }
}
