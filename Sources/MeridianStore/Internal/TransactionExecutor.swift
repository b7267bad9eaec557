// MARK: - TransactionExecutor

internal import CMeridianSQLite
internal import Foundation
internal import GRDB
internal import MeridianCore

/// Runs prepared operations inside an open SQLite transaction, and writes their change-log entries.
///
/// The store's connections run with SQLite's triggers off (`Store.disableTriggers`): the capture triggers are for
/// the writes of other processes. Each operation here writes the very entry its trigger would have — same kind,
/// version and images (built by the same SQL expressions, `StoreDDL.image`) — in the same transaction. Inserts,
/// whose entries carry no image, are logged in runs of up to 64 per statement; an insert's trigger cost more than
/// the insert itself (measured with Python's sqlite3, 1000-row transactions: 2.3 µs of CPU per plain insert, 5.1
/// with the trigger, 2.9 with entries written 50 per statement).
enum TransactionExecutor {
    typealias WrittenRow = CommitResult.WrittenRow

    /// What one transaction did: the rows it wrote, or — for a repeated idempotency key — the rows and seq of the
    /// commit that already applied it (`nil` when that is this group's own commit).
    struct Outcome {
        var rows: [WrittenRow]
        var replayedSeq: Int64?
    }

    /// Runs a queued transaction: answers a repeated idempotency key from `meridian_applied` or from the keys of the
    /// group's earlier transactions, else applies the operations and keeps the key with its rows in `shapes`, for
    /// ``recordKeys(_:seq:db:)`` to record with the group's seq: the seq every transaction of the group is answered
    /// with, so that a retry gets exactly the first answer. A key recorded with another request's digest is refused
    /// (`alreadyExists`): answering would acknowledge a write that was never applied.
    static func run(_ pending: GroupCommitter.Pending, db: Database, shapes: inout Shapes) throws -> Outcome {
        guard let author = pending.author else { return try runOperations(pending, db: db, shapes: &shapes) }
        // The transaction's entries must be written before its range is read: flush the inserts of the earlier
        // transactions of the group first, then its own.
        try logPendingInserts(db, &shapes)
        let first = try Store.latestSeq(db) + 1
        let outcome = try runOperations(pending, db: db, shapes: &shapes)
        try logPendingInserts(db, &shapes)
        let last = try Store.latestSeq(db)
        if last >= first {
            try db.cachedStatement(sql: "INSERT INTO meridian_authors (last_seq, first_seq, subject) VALUES (?, ?, ?)")
                .execute(arguments: [last, first, author])
        }
        return outcome
    }

    private static func runOperations(
        _ pending: GroupCommitter.Pending, db: Database, shapes: inout Shapes
    ) throws -> Outcome {
        guard let (key, digest) = pending.idempotencyKey else {
            return Outcome(
                rows: try run(
                    pending.operations, policy: pending.policy, authorizer: pending.authorizer, db: db, shapes: &shapes),
                replayedSeq: nil)
        }
        if let kept = shapes.keys[Shapes.KeyBytes(key)] {
            guard kept.digest == digest else { throw Self.reusedKey(key, seq: nil) }
            return Outcome(rows: kept.rows, replayedSeq: nil)
        }
        if let recorded = try GRDB.Row.fetchOne(
            db.cachedStatement(sql: "SELECT seq, rows, digest FROM meridian_applied WHERE key = ?"), arguments: [key])
        {
            // A key recorded before digests were kept (no digest) answers any request, as it did then.
            if let recordedDigest = recorded[2] as Data?, [UInt8](recordedDigest) != digest {
                throw Self.reusedKey(key, seq: recorded[0])
            }
            let rows = try JSONDecoder().decode([RecordedRow].self, from: Data((recorded[1] as String).utf8))
            return Outcome(rows: rows.map(\.written), replayedSeq: recorded[0])
        }
        let rows = try run(
            pending.operations, policy: pending.policy, authorizer: pending.authorizer, db: db, shapes: &shapes)
        shapes.keys[Shapes.KeyBytes(key)] = (rows, digest)
        return Outcome(rows: rows, replayedSeq: nil)
    }

    private static func reusedKey(_ key: String, seq: Int64?) -> StoreError {
        let when = seq.map { " (committed at seq \($0))" } ?? " in the same group commit"
        return StoreError(
            .alreadyExists,
            "the idempotency key \(Value.quote(key)) belongs to another transaction\(when); a retry must repeat its "
                + "request exactly, and a new transaction needs a new key")
    }

    /// Records the keys of the group's applied transactions with the group's final `seq` and their requests'
    /// digests, before it commits.
    static func recordKeys(_ shapes: Shapes, seq: Int64, db: Database) throws {
        for (key, kept) in shapes.keys {
            let key = key.text
            let json = String(decoding: try JSONEncoder().encode(kept.rows.map(RecordedRow.init)), as: UTF8.self)
            try db.cachedStatement(sql: "INSERT INTO meridian_applied (key, seq, rows, digest) VALUES (?, ?, ?, ?)")
                .execute(arguments: [key, seq, json, Data(kept.digest)])
        }
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
    /// group commit, and the entries of its last inserts, which ``logPendingInserts(_:_:)`` writes.
    static func run(
        _ operations: [PreparedOperation],
        policy: ConflictPolicy,
        authorizer: (any WriteAuthorizer)? = nil,
        db: Database,
        shapes: inout Shapes
    ) throws -> [WrittenRow] {
        var rows: [WrittenRow] = []
        rows.reserveCapacity(operations.count)
        for op in operations {
            if op.kind != .insert { try logPendingInserts(db, &shapes) }
            switch op.kind {
            case .insert:
                if let authorizer { try authorize(op, .insert, before: nil, after: insertedRow(op), authorizer) }
                try insert(op, db, &shapes)
                rows.append(WrittenRow(entity: op.entity.name, id: op.id, kind: .insert, version: 1))
            case .update, .upsert:
                guard let current = try currentRow(op, db, shapes) else {
                    guard op.kind == .upsert else { throw notFound(op) }
                    if let authorizer { try authorize(op, .insert, before: nil, after: insertedRow(op), authorizer) }
                    if op.expectedVersion != nil, policy == .storeWins {
                        throw StoreError(
                            .conflict,
                            "\(op.label): expected version \(op.expectedVersion!), but the row no longer exists",
                            operationIndex: op.index, attributes: op.columns)
                    }
                    try OperationValidation.checkRequired(op)
                    if let limit = shapes.maxRowBytes {
                        try OperationValidation.checkRowSize(OperationValidation.insertedSize(op), of: op, limit: limit)
                    }
                    try insert(op, db, &shapes)
                    rows.append(WrittenRow(entity: op.entity.name, id: op.id, kind: .insert, version: 1))
                    continue
                }
                // A row the caller cannot read is answered as missing before anything else (a conflict would
                // name its attributes).
                let before = try authorizer.map { _ in try imageRow(op, current.image) }
                if let authorizer, let before, !authorizer.canRead(before, in: op.entity.name) { throw notFound(op) }
                try checkVersion(op, current: current.version, touched: op.columns, policy: policy, db: db)
                try update(op, db, &shapes)
                guard let after = try currentRow(op, db, shapes) else { throw notFound(op) }
                if let authorizer, let before {
                    try authorize(op, .update, before: before, after: try imageRow(op, after.image), authorizer)
                }
                if let limit = shapes.maxRowBytes { try checkSize(op, image: after.image, limit: limit) }
                try logEntry(
                    op, .update, version: after.version, before: current.image, after: after.image, db, &shapes)
                rows.append(WrittenRow(entity: op.entity.name, id: op.id, kind: .update, version: current.version + 1))
            case .delete:
                guard let current = try currentRow(op, db, shapes) else { throw notFound(op) }
                if let authorizer {
                    try authorize(op, .delete, before: try imageRow(op, current.image), after: nil, authorizer)
                }
                try checkVersion(
                    op, current: current.version, touched: op.entity.attributes.map(\.name), policy: policy, db: db)
                try db.cachedStatement(sql: "DELETE FROM \(StoreDDL.quoted(op.entity.name)) WHERE \"id\" = ?")
                    .execute(arguments: [op.id])
                try logEntry(op, .delete, version: current.version + 1, before: current.image, after: nil, db, &shapes)
                rows.append(WrittenRow(entity: op.entity.name, id: op.id, kind: .delete, version: current.version + 1))
            }
        }
        return rows
    }

    // MARK: - Rules

    /// Asks the authorizer about one write; `notFound` is the very error a missing row gives.
    static func authorize(
        _ op: PreparedOperation, _ kind: WriteOperation.Kind, before: MeridianCore.Row?, after: MeridianCore.Row?,
        _ authorizer: any WriteAuthorizer
    ) throws {
        switch authorizer.authorize(kind, entity: op.entity.name, before: before, after: after) {
        case .allowed: return
        case .notFound: throw notFound(op)
        case .denied(let reason):
            throw StoreError(.permissionDenied, "\(op.label): \(reason)", operationIndex: op.index)
        }
    }

    /// The row an insert writes: its values, and the defaults SQLite fills in for the attributes it leaves out (a rule
    /// must see the row as it will be stored, or a default could slip past it).
    static func insertedRow(_ op: PreparedOperation) -> MeridianCore.Row {
        var values: [String: Value] = [:]
        for (name, value) in zip(op.columns, op.values) where !value.isNull { values[name] = value }
        for attribute in op.entity.attributes where !op.columns.contains(attribute.name) {
            if let value = attribute.defaultValue, !value.isNull { values[attribute.name] = value.stored }
        }
        return MeridianCore.Row(id: op.id, values: values)
    }

    /// A stored image as a typed row.
    static func imageRow(_ op: PreparedOperation, _ image: String) throws -> MeridianCore.Row {
        var misfits = 0
        return try ChangeDecoding.image(image, id: op.id, entity: op.entity, seq: 0, misfits: &misfits)
            ?? MeridianCore.Row(id: op.id)
    }

    /// Refuses an update that leaves a row larger than `limit` (``RowSize``), measured on its after-image. The
    /// image is parsed only near the limit: it is never shorter than the row's size less 8 bytes per attribute
    /// (a number counts 8 and may print as one digit; a name and a string count at most their JSON text).
    static func checkSize(_ op: PreparedOperation, image: String, limit: Int) throws {
        let bound = image.utf8.count + 8 * op.entity.attributes.count + op.id.utf8.count
        guard bound > limit else { return }
        var size = op.id.utf8.count
        do {
            try ImageJSON.parseObject(image) { name, value in
                // A null is an absent attribute: neither its name nor its value counts.
                if value != .null { size += name.utf8.count }
                switch value {
                case .null: break
                case .integer: size += op.entity.attribute(named: name)?.type == .bool ? 1 : 8
                case .real: size += 8
                case .text(let text): size += text.utf8.count
                case .blob(let bytes): size += bytes.count
                }
            }
        } catch {
            return  // not an image this store wrote; the row was written by its own SQL, so nothing to refuse
        }
        try OperationValidation.checkRowSize(size, of: op, limit: limit)
    }

    // MARK: - Log entries

    /// Writes the entries of the inserts run since the last call. Called before any other entry is written, so
    /// that the log keeps the operations' order, and before the transaction — or, in a group commit without
    /// savepoints, the whole group — ends.
    static func logPendingInserts(_ db: Database, _ shapes: inout Shapes) throws {
        var start = 0
        while start < shapes.pendingInserts.count {
            let remaining = shapes.pendingInserts.count - start
            let count = StoreDDL.OwnEntries.insertRunSizes.first { $0 <= remaining } ?? 1
            let statement = try db.cachedStatement(sql: StoreDDL.OwnEntries.inserts[count]!)
            // Every parameter is bound below, over those of the last run (``bindAndStep(_:_:first:then:)`` says why
            // there is no reset or clearing first).
            let handle = statement.sqliteStatement
            var code = shapes.committedAt.bind(to: handle, at: 1)
            var index: CInt = 2
            for entry in shapes.pendingInserts[start..<(start + count)] {
                code |= bindText(entry.entity, handle, index)
                code |= bindText(entry.id, handle, index + 1)
                index += 2
            }
            try checkBound(code, statement)
            try stepToEnd(statement)
            start += count
        }
        shapes.pendingInserts.removeAll(keepingCapacity: true)
    }

    /// Writes the entry of an update or a delete (and keeps it in `recorded`, when the commit is kept).
    static func logEntry(
        _ op: PreparedOperation,
        _ kind: Change.Kind,
        version: Int64,
        before: String,
        after: String?,
        _ db: Database,
        _ shapes: inout Shapes
    ) throws {
        let statement = try db.cachedStatement(sql: StoreDDL.OwnEntries.entry)
        statement.setUncheckedArguments(StatementArguments())
        let handle = statement.sqliteStatement
        var code = bindText(op.entity.name, handle, 1)
        code |= bindText(op.id, handle, 2)
        code |= Int64(kind.rawValue).bind(to: handle, at: 3)
        code |= version.bind(to: handle, at: 4)
        code |= bindText(before, handle, 5)
        code |= (after.map(DatabaseValue.init(value:)) ?? .null).bind(to: handle, at: 6)
        code |= shapes.committedAt.bind(to: handle, at: 7)
        try checkBound(code, statement)
        try statement.execute()
        shapes.recorded?.append(
            RecentCommits.Entry(op: op, kind: kind, version: version, before: before, after: after))
    }

    static func notFound(_ op: PreparedOperation) -> StoreError {
        StoreError(.notFound, "\(op.label): no such row", operationIndex: op.index)
    }

    /// Binds the id and `values` to `statement` in order (the id first for an insert, last for an update) and runs
    /// it with ``stepToEnd(_:)``.
    ///
    /// Binds each value itself rather than through `StatementArguments`, whose initializers map their values
    /// through GRDB's unspecialized generic code on every call: that was 8% of the CPU of a 1000-row insert
    /// (measured with perf), more than the statement's own binding and stepping in GRDB. Texts are bound in place
    /// (`SQLITE_STATIC`), where SQLite copied each into memory of its own and freed it at the next binding (an
    /// allocation and a free per text): each is bound inside its `withUTF8` and the statement steps inside all of
    /// them, so every text's bytes are valid for the whole step. The statement keeps those pointers once it is
    /// reset; that is safe because these statements run only here, and every parameter is bound again before each
    /// step.
    ///
    /// No reset and no clearing of the last row's bindings first (GRDB's `setUncheckedArguments` did both, 3% of a
    /// pipelined writer's CPU with perf): ``stepToEnd(_:)`` resets the statement whether its step succeeded or
    /// failed, and every parameter is bound here, over the last row's. (A statement just prepared is reset; one never
    /// stepped after a failed binding binds again.)
    static func bindAndStep(
        _ statement: Statement, _ values: [Value], first: String? = nil, then last: String? = nil
    ) throws {
        let handle = statement.sqliteStatement
        guard var first else { return try self.bindAndStep(statement, handle, values, from: 0, at: 1, then: last) }
        try first.withUTF8 {
            try self.bindAndStep(
                statement, handle, values, from: 0, at: 2, then: last, code: self.bindTextInPlace($0, handle, 1))
        }
    }

    /// Binds `values[start...]` from parameter `first` on, then `last`, then steps: the other values in a loop, each
    /// text inside its own `withUTF8` (one call deeper per text).
    private static func bindAndStep(
        _ statement: Statement, _ handle: SQLiteStatement, _ values: [Value], from start: Int, at first: CInt,
        then last: String?, code: CInt = 0
    ) throws {
        var code = code
        var index = first
        for i in start..<values.count {
            switch values[i] {
            case .string(var text):
                let bound = code
                let at = index
                return try text.withUTF8 {
                    try self.bindAndStep(
                        statement, handle, values, from: i + 1, at: at + 1, then: last,
                        code: bound | self.bindTextInPlace($0, handle, at))
                }
            case .null: code |= DatabaseValue.null.bind(to: handle, at: index)
            case .int(let integer): code |= integer.bind(to: handle, at: index)
            case .double(let d): code |= d.bind(to: handle, at: index)
            case .bool(let b): code |= Int64(b ? 1 : 0).bind(to: handle, at: index)
            case .bytes, .timestamp: code |= values[i].databaseValue.bind(to: handle, at: index)
            }
            index += 1
        }
        if var last {
            let bound = code
            return try last.withUTF8 {
                try self.step(statement, bound: bound | self.bindTextInPlace($0, handle, index))
            }
        }
        try self.step(statement, bound: code)
    }

    private static func step(_ statement: Statement, bound code: CInt) throws {
        try checkBound(code, statement)
        try stepToEnd(statement)
    }

    /// Binds UTF-8 bytes that stay valid until the statement has stepped (``bindAndStep(_:_:first:then:)``).
    private static func bindTextInPlace(_ bytes: UnsafeBufferPointer<UInt8>, _ handle: SQLiteStatement, _ index: CInt)
        -> CInt
    {
        meridian_sqlite3_bind_text_in_place(
            UnsafeMutableRawPointer(handle), index, bytes.baseAddress, CInt(bytes.count))
    }

    /// Binds `text` from its UTF-8 bytes in place: GRDB's binding of a `String` first makes a NUL-terminated copy of
    /// it (1.3% of a batched writer's CPU, measured with perf). (Validation rejects text holding a NUL character,
    /// which GRDB's C string would have cut.)
    static func bindText(_ text: String, _ handle: SQLiteStatement, _ index: CInt) -> CInt {
        var text = text
        return text.withUTF8 {
            meridian_sqlite3_bind_text(UnsafeMutableRawPointer(handle), index, $0.baseAddress, CInt($0.count))
        }
    }

    /// Runs a statement whose arguments are bound (``bindAndStep(_:_:first:then:)``) to its end, straight through
    /// SQLite: GRDB's `execute()` adds its per-execution bookkeeping (observation broker, authorizer, scheduling
    /// checks), which a store without observers does not need, for every row of a batch (~4% of a batched writer's
    /// CPU). Only for the store's own statements inside its write transaction; a failure throws the `DatabaseError`
    /// GRDB would have thrown (its extended result code and SQLite's message).
    static func stepToEnd(_ statement: Statement) throws {
        let failure: (code: CInt, message: String)? = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 512) {
            let code = meridian_sqlite3_step_to_end(
                UnsafeMutableRawPointer(statement.sqliteStatement), $0.baseAddress, CInt($0.count))
            return code == 101 ? nil : (code, String(cString: $0.baseAddress!))  // 101: SQLITE_DONE
        }
        if let failure {
            throw DatabaseError(
                resultCode: ResultCode(rawValue: failure.code), message: failure.message, sql: statement.sql)
        }
    }

    /// `code` is the bitwise or of the binding calls' results. SQLITE_OK is 0; binding fails only on a misuse (a
    /// wrong index), a bug here.
    static func checkBound(_ code: CInt, _ statement: Statement) throws {
        guard code == 0 else {
            throw StoreError(.internalError, "cannot bind the arguments of \(statement.sql) (SQLite code \(code))")
        }
    }

    /// What the transactions of one group commit share: the store's SQL for log entries, the commit time, the
    /// inserts whose entries are still to write, and the statements of the previous insert and update, reused while
    /// operations keep the same shape (entity and columns), which spares building and hashing their SQL for every
    /// row of a large transaction.
    struct Shapes {
        let own: StoreDDL.OwnEntries
        /// The largest row an update may leave.
        let maxRowBytes: Int?
        /// The `committed_at` of every entry: microseconds since the Unix epoch, when the group commit began.
        let committedAt: Int64
        /// Inserts run whose entries are not written yet, in order (see ``logPendingInserts(_:_:)``). A group
        /// commit without savepoints writes those of all its transactions together: eight single-row transactions
        /// then write one statement of eight entries.
        var pendingInserts: [(entity: String, id: String)] = []
        /// The idempotency keys of the group's applied transactions, with their rows (see ``recordKeys(_:seq:db:)``).
        var keys: [KeyBytes: (rows: [WrittenRow], digest: [UInt8])] = [:]

        /// An idempotency key compared and hashed by its UTF-8 bytes, as `meridian_applied`'s `key = ?` compares it:
        /// Swift's `==` on `String` takes a precomposed and a decomposed "é" for one string, where SQLite sees two
        /// keys, and a group commit must not answer the second as a repeat of the first (nor refuse it) when a
        /// group of its own would commit it.
        struct KeyBytes: Hashable {
            let text: String

            init(_ text: String) { self.text = text }

            static func == (a: Self, b: Self) -> Bool { a.text.utf8.elementsEqual(b.text.utf8) }

            func hash(into hasher: inout Hasher) {
                hasher.combine(self.text.utf8.count)
                for byte in self.text.utf8 { hasher.combine(byte) }
            }
        }
        var insert: (entity: String, columns: [String], statement: Statement)?
        var update: (entity: String, columns: [String], statement: Statement)?
        /// The entries written so far, in the log's order, when the group's commit is to be kept in memory for the
        /// change feed (``RecentCommits``); `nil` when not.
        var recorded: [RecentCommits.Entry]?

        /// - Parameter recording: Room for the entries of this many operations, kept in `recorded`; `nil`: none kept.
        init(own: StoreDDL.OwnEntries, maxRowBytes: Int?, recording operations: Int? = nil) {
            self.own = own
            self.maxRowBytes = maxRowBytes
            self.committedAt = Store.nowMicroseconds()
            if let operations {
                // At its size at once: grown by doubling, a 20,000-row commit's entries were copied 15 times.
                self.recorded = []
                self.recorded!.reserveCapacity(operations)
            }
        }

        /// Drops the reused statements (after a failed statement, which must not run again before GRDB's statement
        /// cache resets it) and the pending entries (of a transaction its savepoint rolled back).
        mutating func forget() {
            self.insert = nil
            self.update = nil
            self.pendingInserts.removeAll()
        }
    }

    /// Inserts the operation's row, and queues its log entry (``logPendingInserts(_:_:)`` writes it; `recorded`
    /// keeps it, when the commit is kept).
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
            try bindAndStep(statement, op.values, first: op.id)
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
        shapes.pendingInserts.append((op.entity.name, op.id))
        shapes.recorded?.append(RecentCommits.Entry(op: op, kind: .insert, version: 1))
    }

    /// Updates the row, bumping its version (as the update trigger does for other writers).
    static func update(_ op: PreparedOperation, _ db: Database, _ shapes: inout Shapes) throws {
        let statement: Statement
        if let last = shapes.update, last.entity == op.entity.name, last.columns == op.columns {
            statement = last.statement
        } else {
            let table = StoreDDL.quoted(op.entity.name)
            let assignments = (op.columns.map { "\(StoreDDL.quoted($0)) = ?" } + ["\"_version\" = \"_version\" + 1"])
                .joined(separator: ", ")
            statement = try db.cachedStatement(sql: "UPDATE \(table) SET \(assignments) WHERE \"id\" = ?")
            shapes.update = (op.entity.name, op.columns, statement)
        }
        do {
            try bindAndStep(statement, op.values, then: op.id)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw StoreError(
                .validation, "\(op.label): \(error.message ?? "constraint failed")", operationIndex: op.index,
                cause: error)
        }
    }

    /// The row's version and image (what the capture triggers call `OLD`), or `nil` if there is no such row.
    static func currentRow(
        _ op: PreparedOperation,
        _ db: Database,
        _ shapes: Shapes
    ) throws -> (version: Int64, image: String)? {
        guard let sql = shapes.own.selectCurrent[op.entity.name] else { throw unknownEntity(op) }
        guard let row = try GRDB.Row.fetchOne(db.cachedStatement(sql: sql), arguments: [op.id]) else { return nil }
        return (row[0], row[1])
    }

    /// An entity missing from the store's SQL: validation admits only the schema's entities, so a bug here.
    static func unknownEntity(_ op: PreparedOperation) -> StoreError {
        StoreError(.internalError, "\(op.label): the store has no SQL for entity \(op.entity.name)")
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
