// MARK: - Reads: latest seq, snapshots, changes, retention

internal import CMeridianSQLite
internal import Foundation
internal import GRDB
internal import Logging
public import MeridianCore

extension Store {
    /// The sequence number of the latest committed change (0 for a store that never changed).
    public func latestSeq() async throws -> Int64 {
        try await self.read("cannot read the latest seq") { db in try Store.latestSeq(db) }
    }

    /// The rows of a query, together with the `seq` they are consistent with, read in one read transaction.
    ///
    /// - Parameters:
    ///   - entity: The entity to read.
    ///   - predicate: The rows to read (bound to the entity); `nil` for every row.
    ///   - orderBy: Their order; `nil` for the id's. The id is always the final tie-break.
    ///   - limit: The most rows to return.
    /// - Returns: The rows with their versions, and the latest `seq` in the same transaction.
    /// - Throws: ``StoreError`` `schemaMismatch` for an unknown entity or a predicate or order that names an attribute
    ///   it does not have.
    public func snapshot(
        entity: String,
        where predicate: RowPredicate? = nil,
        orderBy: RowOrder? = nil,
        limit: Int? = nil
    ) async throws -> Snapshot {
        let collected = SnapshotCollector()
        let seq = try await self.streamSnapshot(
            entity: entity, where: predicate, orderBy: orderBy, limit: limit, readerWaits: false
        ) { _, event in
            if case .row(let row, let version) = event {
                collected.rows.append(row)
                collected.versions.append(version)
            }
            return true
        }
        return Snapshot(rows: collected.rows, versions: collected.versions, seq: seq)
    }

    /// What ``streamSnapshot(entity:where:orderBy:limit:_:)`` hands its reader: the next row, or the end.
    public enum SnapshotEvent: Sendable {
        /// The next row of the result, in order, with its version.
        case row(MeridianCore.Row, version: Int64)
        /// Every row was handed over.
        case end
    }

    /// Reads the rows of a query in one read transaction, handing them one by one to `reader` as the cursor meets
    /// them, so that a large result never has to be held whole.
    ///
    /// `reader` runs on the store's reader thread, inside the transaction: it may block there (to wait until its
    /// consumer took what it was given), and returns `false` to stop reading. The read's time limit
    /// (``Configuration/readTimeout``) counts SQLite's work, not the time `reader` takes.
    ///
    /// - Parameters:
    ///   - entity: The entity to read.
    ///   - predicate: The rows to read (bound to the entity); `nil` for every row.
    ///   - orderBy: Their order; `nil` for the id's. The id is always the final tie-break.
    ///   - limit: The most rows to read.
    ///   - readerWaits: Whether `reader` may block (then the time it takes is measured, to leave it out of the time
    ///     limit: two clock reads a row); `false` for a reader that only collects.
    ///   - reader: Called with the transaction's seq and each row, then with `.end` (unless it stopped the read).
    /// - Returns: The latest `seq` in the transaction: the rows are the query's result at it.
    /// - Throws: ``StoreError`` `schemaMismatch` for an unknown entity or a predicate or order that names an attribute
    ///   it does not have, `timedOut` past the time limit, or what `reader` throws.
    public func streamSnapshot(
        entity: String,
        where predicate: RowPredicate? = nil,
        orderBy order: RowOrder? = nil,
        limit: Int? = nil,
        readerWaits: Bool = true,
        _ reader: @escaping @Sendable (_ seq: Int64, _ event: SnapshotEvent) throws -> Bool
    ) async throws -> Int64 {
        let rowReader = RowReaderBox(try self.requireEntity(entity))
        return try await self.streamSnapshotColumns(
            entity: entity, where: predicate, orderBy: order, limit: limit
        ) { seq, row in
            guard let row else { return try reader(seq, .end) }
            let found = rowReader.reader.row(
                id: row.id, of: row.statement, from: Int(CursorRow.firstValueColumn),
                misfits: &row.state.pointee.misfits)
            let version = row.version
            guard readerWaits else { return try reader(seq, .row(found, version: version)) }
            return try row.pausingTimeLimit { try reader(seq, .row(found, version: version)) }
        }
    }

    /// ``streamSnapshot(entity:where:orderBy:limit:readerWaits:_:)``'s row reader, reused for every
    /// row of one read (touched only by the reader thread that runs it).
    private final class RowReaderBox: @unchecked Sendable {
        var reader: ChangeDecoding.RowReader
        init(_ entity: EntitySchema) { self.reader = ChangeDecoding.RowReader(entity) }
    }

    /// ``streamSnapshot(entity:where:orderBy:limit:readerWaits:_:)`` handing each row as the cursor stands on it
    /// (a ``CursorRow``: its columns read in place when asked, valid only during the call), then `nil` at the end:
    /// for a reader that writes rows out (the server's snapshot chunks) without building a ``MeridianCore/Row`` of
    /// each first. A reader that waits for its consumer waits inside ``CursorRow/pausingTimeLimit(_:)``, so that the
    /// time limit counts SQLite's work only; the clock is not read for the rows it does not wait at.
    public func streamSnapshotColumns(
        entity: String,
        where predicate: RowPredicate? = nil,
        orderBy order: RowOrder? = nil,
        limit: Int? = nil,
        _ reader: @escaping @Sendable (_ seq: Int64, _ row: CursorRow?) throws -> Bool
    ) async throws -> Int64 {
        let (entitySchema, query, arguments) = try self.snapshotQuery(
            entity: entity, where: predicate, orderBy: order, limit: limit)
        let timeout = self.configuration.readTimeout
        let attributes = entitySchema.attributes
        let read: @Sendable (Database) throws -> (Int64, Int) = { db in
            let connection = UnsafeMutableRawPointer(db.sqliteConnection)
            if let timeout { meridian_sqlite3_limit_time(connection, timeout.nanoseconds) }
            defer { if timeout != nil { meridian_sqlite3_limit_time(connection, 0) } }
            let seq = try Store.latestSeq(db)
            let statement: Statement
            do {
                statement = try db.cachedStatement(sql: query)
            } catch {
                throw StoreError(.schemaMismatch, "the query does not fit \(entity): \(query)", cause: error)
            }
            // The limit is on SQLite's work: the deadline moves by the time the reader waits for its consumer
            // (`CursorRow.pausingTimeLimit`).
            let state = UnsafeMutablePointer<CursorRow.ReadState>.allocate(capacity: 1)
            state.initialize(
                to: CursorRow.ReadState(deadline: timeout.map { ContinuousClock.now + $0 }, connection: connection))
            defer { state.deallocate() }
            do {
                let cursor = try GRDB.Row.fetchCursor(statement, arguments: arguments)
                let handle = statement.sqliteStatement
                while try cursor.next() != nil {
                    let row = CursorRow(statement: handle, attributes: attributes, state: state)
                    guard try ReaderFailure.passing({ try reader(seq, row) }) else {
                        return (seq, state.pointee.misfits)
                    }
                }
            } catch let error as DatabaseError where error.resultCode == .SQLITE_INTERRUPT && timeout != nil {
                throw StoreError(
                    .timedOut, "the read of \(entity) ran longer than \(timeout!.spoken), and was stopped", cause: error
                )
            }
            _ = try ReaderFailure.passing { try reader(seq, nil) }
            return (seq, state.pointee.misfits)
        }
        let (seq, misfits): (Int64, Int)
        do {
            (seq, misfits) = try await self.gated("cannot read a snapshot of \(entity)") {
                try await self.writer.read(read)
            }
        } catch let failure as ReaderFailure {
            throw failure.error
        } catch {
            throw StoreError.wrap(error, "cannot read a snapshot of \(entity)")
        }
        if misfits > 0 { self.reportMisfits(misfits, entity: entity) }
        return seq
    }

    /// The statement of a snapshot read: the entity, the SQL and its arguments. The predicate and the order are
    /// compiled here (`RowPredicate.sql()`, `RowOrder.sqlOrderBy()`, PredicateSQL.swift): SQL text never
    /// crosses the store's API.
    func snapshotQuery(
        entity: String, where predicate: RowPredicate?, orderBy order: RowOrder?, limit: Int?
    ) throws -> (EntitySchema, String, StatementArguments) {
        let entitySchema = try self.requireEntity(entity)
        let columns = entitySchema.attributes.map { StoreDDL.quoted($0.name) }
        var sql =
            "SELECT \(([#""id""#, #""_version""#] + columns).joined(separator: ", ")) FROM \(StoreDDL.quoted(entity))"
        let condition = predicate.flatMap { $0.matchesEveryRow ? nil : $0.sql() }
        if let condition { sql += " WHERE (\(condition.sql))" }
        sql += " ORDER BY " + (order ?? RowOrder()).sqlOrderBy()
        if let limit { sql += " LIMIT \(max(0, limit))" }
        return (entitySchema, sql, StatementArguments(condition?.arguments.map { $0.databaseValue } ?? []))
    }

    /// The changes after `seq`, up to the latest commit, read in one read transaction.
    ///
    /// - Parameters:
    ///   - seq: The last `seq` the reader has applied (0 for everything).
    ///   - entities: Only changes of these entities, or all when `nil`; `throughSeq` still advances past the others.
    ///   - limit: The most changes to return; a cut batch has `hasMore` set.
    /// - Returns: `.changes` with the decoded changes, or `.tooOld` when the log was pruned past `seq` (or `seq` is
    ///   beyond this store's latest, as when a reader comes from another store file).
    public func changes(after seq: Int64, entities: Set<String>? = nil, limit: Int? = nil) async throws -> ChangesResult
    {
        let read = self.changesRead(after: seq, entities: entities, limit: limit)
        let (result, misfits) = try await self.read("cannot read the change log", read)
        if misfits > 0 { self.reportMisfits(misfits, entity: nil) }
        return result
    }

    /// The read transaction of ``changes(after:entities:limit:)``: the result and how many values did not fit their
    /// attributes.
    func changesRead(
        after seq: Int64,
        entities: Set<String>?,
        limit: Int?,
        recent: Bool = false
    ) -> @Sendable (Database) throws -> (ChangesResult, Int) {
        let names = entities?.sorted() ?? []
        let query = Self.changesQuery(entities: entities == nil ? nil : names.count, limited: limit != nil)
        let schema = self.schema
        let plans = self.changeReads
        let recent = entities == nil && limit == nil && recent ? self.recentCommits : nil
        return { db -> (ChangesResult, Int) in
            let prunedThrough = Int64(try SchemaRecord.meta(db, "pruned_through") ?? "0") ?? 0
            let latest = try Store.latestSeq(db)
            if seq < prunedThrough || seq > latest { return (.tooOld(prunedThrough: prunedThrough), 0) }
            // The store's own commits, as the committer wrote them, when they cover the range (``RecentCommits``).
            if let changes = recent?.changes(after: seq, through: latest, plans: plans) {
                return (.changes(ChangeBatch(changes: changes, throughSeq: latest, hasMore: false)), 0)
            }
            var changes: [Change] = []
            var misfits = 0
            // Bound, not written in: the statement comes from the connection's cache (one per number of entities;
            // preparing it anew for every commit cost ~1 µs of CPU per row in the server benchmark), which any limit
            // would otherwise grow.
            let statement = try db.cachedStatement(sql: query)
            var code = RawRows.bind(seq, statement, 1)
            for (i, name) in names.enumerated() { code |= RawRows.bind(name, statement, CInt(i + 2)) }
            if let limit { code |= RawRows.bind(Int64(max(1, limit)), statement, CInt(names.count + 2)) }
            try TransactionExecutor.checkBound(code, statement)
            try RawRows.forEach(statement) { handle in
                changes.append(try ChangeDecoding.change(handle, schema: schema, misfits: &misfits))
            }
            let hasMore = limit.map { changes.count >= max(1, $0) } == true && changes.last!.seq < latest
            try ChangeDecoding.completeInserts(
                &changes, cut: hasMore, schema: schema, plans: plans, db: db, misfits: &misfits)
            let batch = ChangeBatch(
                changes: changes, throughSeq: hasMore ? changes.last!.seq : latest, hasMore: hasMore)
            return (.changes(batch), misfits)
        }
    }

    /// The log's changes after a seq (`?1`), of `entities` entities when given (`?2`…) and at most a limit (the last
    /// parameter) when `limited`: the common read — every entity, no limit — made once.
    static func changesQuery(entities: Int?, limited: Bool) -> String {
        if entities == nil, !limited { return Self.everyChangeQuery }
        var sql = Self.changesSelect
        if let entities { sql += " AND entity IN (\(Array(repeating: "?", count: entities).joined(separator: ", ")))" }
        sql += " ORDER BY seq"
        if limited { sql += " LIMIT ?" }
        return sql
    }

    private static let changesSelect =
        "SELECT seq, entity, row_id, kind, version, before, after, committed_at FROM meridian_changes WHERE seq > ?"
    private static let everyChangeQuery = changesSelect + " ORDER BY seq"

    /// What the change log holds now, for the server's metrics and status page.
    public struct LogStatistics: Sendable, Hashable {
        /// The latest committed seq (0 for a store that never changed).
        public var latestSeq: Int64
        /// The oldest seq the log still holds; `latestSeq + 1` when it holds none (pruned through the end, or empty).
        public var oldestSeq: Int64
        /// The changes the log holds.
        public var rows: Int
        /// The store file and its write-ahead log, in bytes (0 in memory).
        public var fileBytes: Int64
    }

    /// Reads the log's extent and size in one read transaction (a count of the log: a few ms a million changes).
    public func logStatistics() async throws -> LogStatistics {
        var statistics = try await self.read("cannot read the change log's statistics") { db in
            let latest = try Store.latestSeq(db)
            let oldest = try Int64.fetchOne(db, sql: "SELECT MIN(seq) FROM meridian_changes") ?? (latest + 1)
            let rows = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM meridian_changes") ?? 0
            return LogStatistics(latestSeq: latest, oldestSeq: oldest, rows: rows, fileBytes: 0)
        }
        if let path = self.path {
            for file in [path, path + "-wal"] {
                let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)??.int64Value
                statistics.fileBytes += size ?? 0
            }
        }
        return statistics
    }

    /// Removes old changes from the log and records how far it was pruned.
    ///
    /// A change is removed when it is not among the last `keepingLast` changes, or when it was committed more than
    /// `olderThan` ago (either rule prunes). Readers behind the pruned point get ``ChangesResult/tooOld(prunedThrough:)``.
    ///
    /// - Returns: The `seq` the log is now pruned through and how many changes were removed.
    @discardableResult
    public func prune(keepingLast count: Int? = nil, olderThan age: Duration? = nil) async throws -> PruneResult {
        do {
            return try await self.writer.write { db in
                let previous = Int64(try SchemaRecord.meta(db, "pruned_through") ?? "0") ?? 0
                let latest = try Store.latestSeq(db)
                var through = previous
                if let count { through = max(through, latest - Int64(max(0, count))) }
                if let age {
                    let parts = age.components
                    let ageMicros = parts.seconds * 1_000_000 + parts.attoseconds / 1_000_000_000_000
                    let cutoff = Store.nowMicroseconds() - ageMicros
                    let cursor = try GRDB.Row.fetchCursor(
                        db, sql: "SELECT seq, committed_at FROM meridian_changes WHERE seq > ? ORDER BY seq",
                        arguments: [through])
                    while let row = try cursor.next(), (row[1] as Int64) < cutoff {
                        through = max(through, row[0])
                    }
                }
                guard through > previous else { return PruneResult(prunedThrough: previous, removed: 0) }
                try db.execute(sql: "DELETE FROM meridian_changes WHERE seq <= ?", arguments: [through])
                let removed = db.changesCount
                try db.execute(sql: "DELETE FROM meridian_applied WHERE seq <= ?", arguments: [through])
                try db.execute(sql: "DELETE FROM meridian_authors WHERE last_seq <= ?", arguments: [through])
                try SchemaRecord.setMeta(db, "pruned_through", String(through))
                return PruneResult(prunedThrough: through, removed: removed)
            }
        } catch {
            throw StoreError.wrap(error, "cannot prune the change log")
        }
    }

    func reportMisfits(_ count: Int, entity: String?) {
        self.logger.info(
            "\(count) stored value(s) do not fit their attribute's type (written by another process?); passed on as stored",
            metadata: entity.map { ["meridian.entity": "\($0)"] } ?? [:])
    }
}

/// The rows ``Store/snapshot(entity:where:orderBy:limit:)`` collects: written only by the one reader thread of its
/// read, and read after the read returned.
private final class SnapshotCollector: @unchecked Sendable {
    var rows: [MeridianCore.Row] = []
    var versions: [Int64] = []
}

/// What a snapshot's reader threw, carried through the read unchanged (not taken for SQLite's error).
private struct ReaderFailure: Error {
    let error: any Error

    static func passing(_ body: () throws -> Bool) throws -> Bool {
        do { return try body() } catch { throw ReaderFailure(error: error) }
    }
}
