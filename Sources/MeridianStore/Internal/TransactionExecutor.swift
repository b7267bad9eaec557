// MARK: - TransactionExecutor

internal import Foundation
internal import GRDB
internal import MeridianCore

/// Runs prepared operations inside an open SQLite transaction (the capture triggers log them).
enum TransactionExecutor {
    typealias WrittenRow = CommitResult.WrittenRow

    /// What one transaction did: the rows it wrote, or — for a repeated idempotency key — the rows and seq of the
    /// commit that already applied it.
    struct Outcome {
        var rows: [WrittenRow]
        var replayedSeq: Int64?
    }

    /// Runs a queued transaction: answers a repeated idempotency key from `meridian_applied`, else applies the
    /// operations and records the key with the transaction's last seq and its rows.
    static func run(_ pending: GroupCommitter.Pending, db: Database, shapes: inout Shapes) throws -> Outcome {
        guard let key = pending.idempotencyKey else {
            return Outcome(
                rows: try run(pending.operations, policy: pending.policy, db: db, shapes: &shapes), replayedSeq: nil)
        }
        if let recorded = try GRDB.Row.fetchOne(
            db.cachedStatement(sql: "SELECT seq, rows FROM meridian_applied WHERE key = ?"), arguments: [key])
        {
            let rows = try JSONDecoder().decode([RecordedRow].self, from: Data((recorded[1] as String).utf8))
            return Outcome(rows: rows.map(\.written), replayedSeq: recorded[0])
        }
        let rows = try run(pending.operations, policy: pending.policy, db: db, shapes: &shapes)
        let json = String(decoding: try JSONEncoder().encode(rows.map(RecordedRow.init)), as: UTF8.self)
        try db.cachedStatement(sql: "INSERT INTO meridian_applied (key, seq, rows) VALUES (?, ?, ?)")
            .execute(arguments: [key, try Store.latestSeq(db), json])
        return Outcome(rows: rows, replayedSeq: nil)
    }

    /// A written row as recorded with its idempotency key: `[entity, id, kind, version]`.
    private struct RecordedRow: Codable {
        var written: WrittenRow

        init(_ written: WrittenRow) { self.written = written }

        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            let entity = try container.decode(String.self)
            let id = try container.decode(String.self)
            let kind = try container.decode(String.self)
            let version = try container.decode(Int64.self)
            guard let kind = WriteOperation.Kind(rawValue: kind) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "unknown write kind '\(kind)'")
            }
            self.written = WrittenRow(entity: entity, id: id, kind: kind, version: version)
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(self.written.entity)
            try container.encode(self.written.id)
            try container.encode(self.written.kind.rawValue)
            try container.encode(self.written.version)
        }
    }

    /// Runs one transaction's operations; `shapes` carries the last statements over to the next transaction of a
    /// group commit.
    static func run(
        _ operations: [PreparedOperation],
        policy: ConflictPolicy,
        db: Database,
        shapes: inout Shapes
    ) throws -> [WrittenRow] {
        var rows: [WrittenRow] = []
        rows.reserveCapacity(operations.count)
        for op in operations {
            switch op.kind {
            case .insert:
                try insert(op, db, &shapes)
                rows.append(WrittenRow(entity: op.entity.name, id: op.id, kind: .insert, version: 1))
            case .update, .upsert:
                guard let current = try currentVersion(op, db) else {
                    guard op.kind == .upsert else { throw notFound(op) }
                    if op.expectedVersion != nil, policy == .storeWins {
                        throw StoreError(
                            .conflict,
                            "\(op.label): expected version \(op.expectedVersion!), but the row no longer exists",
                            operationIndex: op.index, attributes: op.columns)
                    }
                    try OperationValidation.checkRequired(op)
                    try insert(op, db, &shapes)
                    rows.append(WrittenRow(entity: op.entity.name, id: op.id, kind: .insert, version: 1))
                    continue
                }
                try checkVersion(op, current: current, touched: op.columns, policy: policy, db: db)
                try update(op, db, &shapes)
                rows.append(WrittenRow(entity: op.entity.name, id: op.id, kind: .update, version: current + 1))
            case .delete:
                guard let current = try currentVersion(op, db) else { throw notFound(op) }
                try checkVersion(
                    op, current: current, touched: op.entity.attributes.map(\.name), policy: policy, db: db)
                try db.cachedStatement(sql: "DELETE FROM \(StoreDDL.quoted(op.entity.name)) WHERE \"id\" = ?")
                    .execute(arguments: [op.id])
                rows.append(WrittenRow(entity: op.entity.name, id: op.id, kind: .delete, version: current + 1))
            }
        }
        return rows
    }

    static func notFound(_ op: PreparedOperation) -> StoreError {
        StoreError(.notFound, "\(op.label): no such row", operationIndex: op.index)
    }

    /// Runs `statement` with the id and `values` bound in order (the id first for an insert, last for an update).
    ///
    /// Binds each value itself rather than through `StatementArguments`, whose initializers map their values
    /// through GRDB's unspecialized generic code on every call: that was 8% of the CPU of a 1000-row insert
    /// (measured with perf), more than the statement's own binding and stepping in GRDB.
    static func execute(_ statement: Statement, _ values: [Value], first: String? = nil, then last: String? = nil) throws {
        // Resets the statement and marks its arguments as set (none), so that `execute()` runs with the bindings
        // made below. (A statement whose last step failed is never reused here: GRDB drops it from its cache, and
        // `Shapes` is discarded after a failure.)
        statement.setUncheckedArguments(StatementArguments())
        let handle = statement.sqliteStatement
        var index: CInt = 1
        var code: CInt = 0
        if let first {
            code |= first.bind(to: handle, at: index)
            index += 1
        }
        for value in values {
            switch value {
            case .null: code |= DatabaseValue.null.bind(to: handle, at: index)
            case .int(let i): code |= i.bind(to: handle, at: index)
            case .double(let d): code |= d.bind(to: handle, at: index)
            case .string(let text): code |= text.bind(to: handle, at: index)
            case .bool(let b): code |= Int64(b ? 1 : 0).bind(to: handle, at: index)
            case .bytes, .timestamp: code |= value.databaseValue.bind(to: handle, at: index)
            }
            index += 1
        }
        if let last { code |= last.bind(to: handle, at: index) }
        // SQLITE_OK is 0; binding fails only on a misuse (a wrong index), a bug here.
        guard code == 0 else {
            throw StoreError(.internalError, "cannot bind the arguments of \(statement.sql) (SQLite code \(code))")
        }
        try statement.execute()
    }

    /// The statements of the previous insert and update, reused while operations keep the same shape (entity and
    /// columns), which spares building and hashing their SQL for every row of a large transaction.
    struct Shapes {
        var insert: (entity: String, columns: [String], statement: Statement)?
        var update: (entity: String, columns: [String], statement: Statement)?
    }

    static func insert(_ op: PreparedOperation, _ db: Database, _ shapes: inout Shapes) throws {
        let statement: Statement
        if let last = shapes.insert, last.entity == op.entity.name, last.columns == op.columns {
            statement = last.statement
        } else {
            let table = StoreDDL.quoted(op.entity.name)
            let columns = (["id"] + op.columns).map(StoreDDL.quoted).joined(separator: ", ")
            let marks = Array(repeating: "?", count: op.columns.count + 1).joined(separator: ", ")
            statement = try db.cachedStatement(sql: "INSERT INTO \(table) (\(columns)) VALUES (\(marks))")
            shapes.insert = (op.entity.name, op.columns, statement)
        }
        do {
            try execute(statement, op.values, first: op.id)
        } catch let error as DatabaseError {
            switch error.extendedResultCode {
            case .SQLITE_CONSTRAINT_PRIMARYKEY:
                throw StoreError(
                    .alreadyExists, "\(op.label): a row with this id already exists", operationIndex: op.index,
                    cause: error)
            case .SQLITE_CONSTRAINT_UNIQUE, .SQLITE_CONSTRAINT_NOTNULL, .SQLITE_CONSTRAINT_CHECK:
                throw StoreError(
                    .validation, "\(op.label): \(error.message ?? "constraint failed")", operationIndex: op.index,
                    cause: error)
            default:
                throw error
            }
        }
    }

    static func update(_ op: PreparedOperation, _ db: Database, _ shapes: inout Shapes) throws {
        let statement: Statement
        if let last = shapes.update, last.entity == op.entity.name, last.columns == op.columns {
            statement = last.statement
        } else {
            let table = StoreDDL.quoted(op.entity.name)
            let assignments =
                op.columns.isEmpty
                ? "\"id\" = \"id\"" : op.columns.map { "\(StoreDDL.quoted($0)) = ?" }.joined(separator: ", ")
            statement = try db.cachedStatement(sql: "UPDATE \(table) SET \(assignments) WHERE \"id\" = ?")
            shapes.update = (op.entity.name, op.columns, statement)
        }
        do {
            try execute(statement, op.values, then: op.id)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw StoreError(
                .validation, "\(op.label): \(error.message ?? "constraint failed")", operationIndex: op.index,
                cause: error)
        }
    }

    static func currentVersion(_ op: PreparedOperation, _ db: Database) throws -> Int64? {
        try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT \"_version\" FROM \(StoreDDL.quoted(op.entity.name)) WHERE \"id\" = ?"),
            arguments: [op.id])
    }

    // MARK: - Optimistic locking

    static func checkVersion(
        _ op: PreparedOperation,
        current: Int64,
        touched: [String],
        policy: ConflictPolicy,
        db: Database
    ) throws {
        guard let expected = op.expectedVersion, expected != current, policy == .storeWins else { return }
        let changed = try changedAttributes(
            entity: op.entity.name, id: op.id, after: expected, current: current, db: db)
        let conflicting = changed.map { set in touched.filter { set.contains($0) } } ?? touched
        guard !conflicting.isEmpty || op.kind == .delete else { return }
        let list = conflicting.isEmpty ? "" : "; changed since: \(conflicting.joined(separator: ", "))"
        throw StoreError(
            .conflict, "\(op.label): expected version \(expected), the row is at version \(current)\(list)",
            operationIndex: op.index, attributes: conflicting)
    }

    /// The attributes changed by the writes after version `expected` of a row, from the change log's images, or
    /// `nil` when the log does not cover them all (pruned, or the row was deleted and re-created since).
    static func changedAttributes(
        entity: String,
        id: String,
        after expected: Int64,
        current: Int64,
        db: Database
    ) throws -> Set<String>? {
        guard expected >= 1, expected < current else { return nil }
        let cursor = try GRDB.Row.fetchCursor(
            db,
            sql: """
                SELECT kind, version, before, after FROM meridian_changes
                WHERE entity = ? AND row_id = ? ORDER BY seq DESC
                """,
            arguments: [entity, id])
        var changed = Set<String>()
        while let row = try cursor.next() {
            let kind: Int = row[0]
            let version: Int64 = row[1]
            if version <= expected { return changed }
            guard kind == Change.Kind.update.rawValue, let beforeText: String = row[2], let afterText: String = row[3],
                let before = try? ImageJSON.parseObject(beforeText), let after = try? ImageJSON.parseObject(afterText)
            else { return nil }
            for key in Set(before.keys).union(after.keys) where before[key] != after[key] {
                changed.insert(key)
            }
            if version == expected + 1 { return changed }
        }
        return nil
    }
}
