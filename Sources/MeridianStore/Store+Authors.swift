// MARK: - Who wrote what

internal import Foundation
internal import GRDB
public import MeridianCore

/// One entry of the change log with the subject that wrote it: what `meridian-server log` prints.
public struct AuthoredChange: Sendable, Hashable {
    /// The change's `seq`.
    public var seq: Int64
    /// When it was committed.
    public var committedAt: Timestamp
    /// The entity.
    public var entity: String
    /// The row's id.
    public var id: String
    /// Insert, update or delete.
    public var kind: Change.Kind
    /// The row's version after the change.
    public var version: Int64
    /// The subject that wrote it; `nil` for a write without an author (no identity, or another process's write).
    public var author: String?

    public init(
        seq: Int64, committedAt: Timestamp, entity: String, id: String, kind: Change.Kind, version: Int64,
        author: String?
    ) {
        self.seq = seq
        self.committedAt = committedAt
        self.entity = entity
        self.id = id
        self.kind = kind
        self.version = version
        self.author = author
    }
}

extension Store {
    /// The change log after `seq`, oldest first, each change with the subject whose transaction wrote it
    /// (``apply(_:policy:idempotencyKey:authorizer:author:)``'s `author`).
    ///
    /// - Parameters:
    ///   - seq: Entries after this `seq`.
    ///   - author: Only the changes this subject wrote.
    ///   - limit: At most this many entries.
    public func authoredChanges(after seq: Int64 = 0, author: String? = nil, limit: Int? = nil) async throws
        -> [AuthoredChange]
    {
        try await self.read("cannot read the change log") { db in
            try Self.authoredChanges(db, after: seq, author: author, limit: limit)
        }
    }

    /// ``authoredChanges(after:author:limit:)`` of the store file at `path`, opened read-only (the server may be
    /// serving it).
    ///
    /// - Throws: ``StoreError``: `validation` when there is no store at `path`, `io` when it cannot be read.
    public static func authoredChanges(path: String, after seq: Int64 = 0, author: String? = nil, limit: Int? = nil)
        throws -> [AuthoredChange]
    {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.validation, "there is no store file at \(path)")
        }
        do {
            var configuration = GRDB.Configuration()
            configuration.readonly = true
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read { db in
                guard try db.tableExists("meridian_changes") else {
                    throw StoreError(.validation, "\(path) is not a Meridian store file")
                }
                return try Self.authoredChanges(db, after: seq, author: author, limit: limit)
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.wrap(error, "cannot read the change log of \(path)")
        }
    }

    private static func authoredChanges(_ db: Database, after seq: Int64, author: String?, limit: Int?) throws
        -> [AuthoredChange]
    {
        // Files last opened before authors were recorded have no table: nobody is recorded.
        let recorded = try db.tableExists("meridian_authors")
        var sql: String
        var arguments: StatementArguments = [seq]
        if recorded {
            // The author's range is the one with the least last_seq at or after the change's seq (one step of the
            // primary key); ranges never overlap, so it holds the change when its first_seq is not after it.
            sql = """
                SELECT c.seq, c.committed_at, c.entity, c.row_id, c.kind, c.version,
                    (SELECT CASE WHEN a.first_seq <= c.seq THEN a.subject END FROM meridian_authors a
                     WHERE a.last_seq >= c.seq ORDER BY a.last_seq LIMIT 1) AS author
                FROM meridian_changes c WHERE c.seq > ?
                """
        } else {
            sql = """
                SELECT seq, committed_at, entity, row_id, kind, version, NULL AS author FROM meridian_changes
                WHERE seq > ?
                """
        }
        if let author {
            sql = "SELECT * FROM (\(sql)) WHERE author = ?"
            arguments += [author]
        }
        sql += " ORDER BY 1"
        if let limit {
            sql += " LIMIT ?"
            arguments += [max(0, limit)]
        }
        return try GRDB.Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
            guard let kind = Change.Kind(rawValue: row[4]) else {
                throw StoreError(
                    .io, "the change log holds an entry of unknown kind \(row[4] as Int) at seq \(row[0] as Int64)")
            }
            return AuthoredChange(
                seq: row[0], committedAt: Timestamp(microseconds: row[1]), entity: row[2], id: row[3], kind: kind,
                version: row[5], author: row[6])
        }
    }
}
