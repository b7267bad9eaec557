// MARK: - ChangeDecoding

internal import GRDB
internal import MeridianCore

/// Turns rows of `meridian_changes` into ``Change`` values typed by the schema, and gives inserts logged without an
/// after-image (store format 2) theirs.
enum ChangeDecoding {
    /// What reading a change of each entity needs, made once per store (a read of a 1-row commit spent more on
    /// building its SQL and its row layout than SQLite spent running it).
    struct Plans: Sendable {
        /// A class: the fan-out's read hands an entity's plan to every entry it makes a change of, and copying a
        /// struct of four references retained each of them.
        final class Entity: Sendable {
            let schema: EntitySchema
            /// The entity's attributes in order, shared by every row read.
            let layout: RowLayout
            /// The row an insert that sets no attribute leaves, as the table read gives it (each attribute's default,
            /// or null): what ``RecentCommits`` starts an insert's row from; `nil` when a default is a value it cannot
            /// be sure of (``RecentCommits/stored(_:as:)``).
            let insertDefaults: [Value]?
            /// ``currentRows(of:at:in:plans:db:misfits:)``'s query: the inserts' log entries in a seq range joined
            /// to the entity's table.
            let currentRowsSQL: String

            init(schema: EntitySchema, layout: RowLayout, insertDefaults: [Value]?, currentRowsSQL: String) {
                self.schema = schema
                self.layout = layout
                self.insertDefaults = insertDefaults
                self.currentRowsSQL = currentRowsSQL
            }
        }

        let entities: [String: Entity]

        init(schema: Schema) {
            var entities: [String: Entity] = [:]
            for entity in schema.entities {
                let columns = ["t.\"_version\""] + entity.attributes.map { "t." + StoreDDL.quoted($0.name) }
                let defaults = entity.attributes.map { RecentCommits.stored($0.defaultValue ?? .null, as: $0.type) }
                entities[entity.name] = Entity(
                    schema: entity, layout: RowLayout(names: entity.attributes.map(\.name)),
                    insertDefaults: defaults.contains { $0 == nil } ? nil : defaults.map { $0! },
                    currentRowsSQL: """
                        SELECT c.seq, \(columns.joined(separator: ", ")) FROM meridian_changes c
                        JOIN \(StoreDDL.quoted(entity.name)) t ON t."id" = c.row_id
                        WHERE c.seq >= ? AND c.seq <= ? AND c.entity = ? AND c.kind = 1 AND c.after IS NULL
                        """)
            }
            self.entities = entities
        }
    }

    /// The change a row of `SELECT seq, entity, row_id, kind, version, before, after, committed_at FROM
    /// meridian_changes` stands on (`handle`, read in place: ``RawRows``).
    static func change(_ handle: OpaquePointer, schema: Schema, misfits: inout Int) throws -> Change {
        let seq = RawRows.int64(handle, 0) ?? 0
        let entityName = RawRows.text(handle, 1) ?? ""
        let id = RawRows.text(handle, 2) ?? ""
        let rawKind = RawRows.int64(handle, 3) ?? -1
        guard let kind = Change.Kind(rawValue: Int(rawKind)) else {
            throw StoreError(.internalError, "change \(seq) has unknown kind \(rawKind)")
        }
        let (beforeText, afterText) = (RawRows.text(handle, 5), RawRows.text(handle, 6))
        // An insert's entry has no image (its row is read from the table): no entity to look up and copy.
        let entity = beforeText == nil && afterText == nil ? nil : schema.entity(named: entityName)
        return try self.change(
            seq: seq, entity: entityName, id: id, kind: kind, version: RawRows.int64(handle, 4) ?? 0,
            before: beforeText, after: afterText, typedBy: entity,
            committedAt: Timestamp(microseconds: RawRows.int64(handle, 7) ?? 0), misfits: &misfits)
    }

    /// The change of a log entry whose images are `before` and `after` (JSON, `nil` for none), typed by `schema`:
    /// a row of the log, or an entry the committer kept (``RecentCommits``), read the same way.
    static func change(
        seq: Int64, entity: String, id: String, kind: Change.Kind, version: Int64, before: String?, after: String?,
        typedBy schema: EntitySchema?, committedAt: Timestamp, misfits: inout Int
    ) throws -> Change {
        let before = try image(before, id: id, entity: schema, seq: seq, misfits: &misfits)
        let after = try image(after, id: id, entity: schema, seq: seq, misfits: &misfits)
        var changed: [String] = []
        if kind == .update, let before, let after { changed = after.changedAttributes(from: before) }
        return Change(
            seq: seq, entity: entity, id: id, kind: kind, version: version, before: before, after: after,
            changedAttributes: changed, committedAt: committedAt)
    }

    /// A JSON row image, typed by the entity's attributes (`nil` for no image).
    static func image(
        _ text: String?,
        id: String,
        entity: EntitySchema?,
        seq: Int64,
        misfits: inout Int
    ) throws -> MeridianCore.Row? {
        guard let text else { return nil }
        var values = [String: Value](minimumCapacity: entity?.attributes.count ?? 8)
        var imageMisfits = 0
        do {
            // Typed as each attribute is parsed: no intermediate dictionary of stored values.
            try ImageJSON.parseObject(text) { name, value in
                let typed: (value: Value, fits: Bool)
                if let type = entity?.attribute(named: name)?.type {
                    typed = value.typed(as: type)
                } else {
                    typed = (value.rawValue, true)
                }
                if !typed.fits { imageMisfits += 1 }
                if typed.value.isNull {
                    values.removeValue(forKey: name)
                } else {
                    values[name] = typed.value
                }
            }
        } catch {
            throw StoreError(.internalError, "change \(seq): \(error)", cause: error)
        }
        misfits += imageMisfits
        return MeridianCore.Row(id: id, values: values)
    }

    // MARK: - After-images of inserts

    /// The key of a row across the log.
    private struct RowKey: Hashable {
        var entity: String
        var id: String
    }

    /// Gives every insert without an after-image (logged by format 2 triggers) the row as it was after the insert.
    ///
    /// That is the before-image of the row's next update or delete (a rekey logs a delete of the old id), or, when
    /// nothing changed the row since, the row itself, read in the same read transaction as `changes`. The next
    /// change is looked for in `changes` first; when the batch was `cut` by a limit, it may lie beyond it, so the
    /// log is asked (through the partial index `meridian_changes_row`). Inserts logged by format 1 carry their
    /// image and are left alone.
    static func completeInserts(
        _ changes: inout [Change],
        cut: Bool,
        schema: Schema,
        plans: Plans,
        db: Database,
        misfits: inout Int
    ) throws {
        guard changes.contains(where: { $0.kind == .insert && $0.after == nil }) else { return }
        var nextBefore: [RowKey: MeridianCore.Row] = [:]
        /// Inserts whose row has not changed since: the positions in `changes`, by entity.
        var current: [String: [Int]] = [:]
        for i in changes.indices.reversed() {
            let change = changes[i]
            let key = RowKey(entity: change.entity, id: change.id)
            if change.kind == .insert, change.after == nil {
                if let next = nextBefore[key] {
                    changes[i].after = next
                } else if cut,
                    let later = try self.laterImage(change, schema: schema, db: db, misfits: &misfits)
                {
                    changes[i].after = later
                } else {
                    current[change.entity, default: []].append(i)
                }
            }
            if let before = change.before { nextBefore[key] = before }
        }
        for (entityName, positions) in current {
            try self.currentRows(of: entityName, at: positions, in: &changes, plans: plans, db: db, misfits: &misfits)
        }
    }

    /// Gives the inserts of one entity at `positions` (in descending order) the rows as they are now, read with one
    /// query for all of them: the inserts' log entries joined to the entity's table. (A look-up per row cost 11% of
    /// the server's CPU when it streamed 100-row transactions, nearly all of it in GRDB's per-query setup.)
    ///
    /// A row that is missing (which the log never allows: its delete would be logged) is given as an empty row
    /// and reported as a misfit rather than failing every reader of the log.
    private static func currentRows(
        of entityName: String,
        at positions: [Int],
        in changes: inout [Change],
        plans: Plans,
        db: Database,
        misfits: inout Int
    ) throws {
        guard let plan = plans.entities[entityName] else {
            misfits += positions.count
            for i in positions { changes[i].after = MeridianCore.Row(id: changes[i].id, values: [:]) }
            return
        }
        let statement = try db.cachedStatement(sql: plan.currentRowsSQL)
        // `positions` descend, and `changes` are in seq order: the first position holds the highest seq.
        // `init(minimumCapacity:)`: `reserveCapacity` is not inlinable, and runs unspecialized.
        var wanted = [Int64: Int](minimumCapacity: positions.count)
        for i in positions { wanted[changes[i].seq] = i }
        try TransactionExecutor.checkBound(
            RawRows.bind(changes[positions.last!].seq, statement, 1)
                | RawRows.bind(changes[positions[0]].seq, statement, 2)
                | RawRows.bind(entityName, statement, 3), statement)
        var reader = RowReader(plan)
        var found = misfits
        try RawRows.forEach(statement) { handle in
            guard let seq = RawRows.int64(handle, 0), let i = wanted.removeValue(forKey: seq) else { return }
            changes[i].after = reader.row(id: changes[i].id, of: handle, from: 2, misfits: &found)
        }
        misfits = found + wanted.count
        for i in wanted.values { changes[i].after = MeridianCore.Row(id: changes[i].id, values: [:]) }
    }

    /// The before-image of the first update or delete of the change's row after it, if the log has one.
    private static func laterImage(
        _ change: Change,
        schema: Schema,
        db: Database,
        misfits: inout Int
    ) throws -> MeridianCore.Row? {
        // `kind <> 1` as in the partial index's condition, so that SQLite uses it.
        let statement = try db.cachedStatement(
            sql: """
                SELECT before FROM meridian_changes
                WHERE entity = ? AND row_id = ? AND kind <> 1 AND seq > ? ORDER BY seq LIMIT 1
                """)
        guard let row = try GRDB.Row.fetchOne(statement, arguments: [change.entity, change.id, change.seq]),
            let text = row[0] as String?
        else { return nil }
        return try self.image(
            text, id: change.id, entity: schema.entity(named: change.entity), seq: change.seq, misfits: &misfits)
    }

    /// Reads the rows a statement stands on into compact rows that share one layout, the entity's attributes in
    /// order (see ``MeridianCore/Row``): no dictionary per row.
    struct RowReader {
        let entity: EntitySchema
        let layout: RowLayout
        /// The row being read, reused for every row.
        private var values: [Value]
        /// The layout shaped by the rows read (``MeridianCore/RowShaper``).
        private var shaper: RowShaper

        init(_ entity: EntitySchema) {
            self.entity = entity
            self.layout = RowLayout(names: entity.attributes.map(\.name))
            self.values = Array(repeating: .null, count: entity.attributes.count)
            self.shaper = RowShaper(self.layout)
        }

        /// A reader of a planned entity: its layout made once per store.
        init(_ plan: Plans.Entity) {
            self.entity = plan.schema
            self.layout = plan.layout
            self.values = Array(repeating: .null, count: plan.schema.attributes.count)
            self.shaper = RowShaper(self.layout)
        }

        /// The row `statement` stands on (a cursor of it is being iterated), its values read with the entity's
        /// attributes in order from column `offset` on, typed by the schema; each stored value that does not fit its
        /// attribute counts in `misfits`.
        ///
        /// Reads the columns from the statement itself: `row[i] as DatabaseValue` goes through GRDB's generic
        /// decoding, which looks up type metadata at run time for every value; and each column in one call
        /// (``StoredValue/init(column:of:)``), not through GRDB's `DatabaseValue`.
        mutating func row(
            id: String, of statement: Statement, from offset: Int, misfits: inout Int
        ) -> MeridianCore.Row {
            self.row(id: id, of: statement.sqliteStatement, from: offset, misfits: &misfits)
        }

        /// ``row(id:of:from:misfits:)`` of a statement's handle (a `sqlite3_stmt *`).
        mutating func row(
            id: String, of handle: OpaquePointer, from offset: Int, misfits: inout Int
        ) -> MeridianCore.Row {
            for (i, attribute) in self.entity.attributes.enumerated() {
                let typed = StoredValue(column: CInt(i + offset), of: handle).typed(as: attribute.type)
                if !typed.fits { misfits += 1 }
                self.values[i] = typed.value
            }
            return self.values.withUnsafeBufferPointer { values in
                MeridianCore.Row(id: id, layout: self.shaper.layout(for: values), values: values)
            }
        }
    }
}
