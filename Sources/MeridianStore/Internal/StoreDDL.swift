// MARK: - StoreDDL

internal import Foundation
internal import GRDB
internal import MeridianCore

/// The SQL that lays out a store file: Meridian's own tables, and per entity its table, indexes and capture triggers.
///
/// Everything here is plain SQL using only SQLite's built-in functions (JSON1 included), so that any process that
/// writes the file — the `sqlite3` shell included — runs the same capture triggers.
enum StoreDDL {
    /// The store-format version written to `meridian_meta`: 1 logged inserts with their after-image; 2 logs them
    /// without one (the reader takes it from the row or from the next change of the row, see `ChangeDecoding`).
    /// Opening a format-1 file rebuilds its triggers and makes it format 2; its old entries still read as before.
    static let formatVersion = 2

    /// Meridian's own tables (created once, never edited once shipped).
    static let metaTables: [String] = [
        """
        CREATE TABLE meridian_meta (key TEXT PRIMARY KEY NOT NULL, value TEXT)
        """,
        """
        CREATE TABLE meridian_entities (
            name TEXT PRIMARY KEY NOT NULL, position INTEGER NOT NULL, id_policy TEXT NOT NULL)
        """,
        """
        CREATE TABLE meridian_attributes (
            entity TEXT NOT NULL, name TEXT NOT NULL, position INTEGER NOT NULL, type TEXT NOT NULL,
            optional INTEGER NOT NULL, has_default INTEGER NOT NULL, default_value,
            PRIMARY KEY (entity, name))
        """,
        """
        CREATE TABLE meridian_indexes (
            entity TEXT NOT NULL, name TEXT NOT NULL, position INTEGER NOT NULL, attributes TEXT NOT NULL,
            is_unique INTEGER NOT NULL, PRIMARY KEY (entity, name))
        """,
        """
        CREATE TABLE meridian_changes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT, entity TEXT NOT NULL, row_id TEXT NOT NULL,
            kind INTEGER NOT NULL, version INTEGER NOT NULL, before TEXT, after TEXT, committed_at INTEGER NOT NULL)
        """,
    ]

    /// Idempotency keys of committed transactions, with their results and the digest of their request
    /// (``RequestDigest``), so that a retried transaction is answered instead of applied twice, and a different one
    /// reusing the key is refused. Created by every open (files made before it existed get it then, and files made
    /// before the digest its column: their keys, recorded without one, answer any request); pruned with the change
    /// log.
    static let appliedTable = """
        CREATE TABLE IF NOT EXISTS meridian_applied (
            key TEXT PRIMARY KEY NOT NULL, seq INTEGER NOT NULL, rows TEXT NOT NULL, digest BLOB) WITHOUT ROWID
        """

    /// Revoked identities — a subject, or one token by its id — that a server refuses from the moment it reads them
    /// (``Store/revoke(path:subject:tokenID:)``). Created by every open (files made before it existed get it then).
    static let revocationsTable = """
        CREATE TABLE IF NOT EXISTS meridian_revocations (
            id INTEGER PRIMARY KEY, subject TEXT, token_id TEXT, revoked_at INTEGER NOT NULL,
            CHECK (subject IS NOT NULL OR token_id IS NOT NULL))
        """

    /// Who wrote each transaction committed with an author (``Store/apply(_:policy:idempotencyKey:authorizer:author:)``,
    /// the server's authenticated subject): the range of log entries it wrote and the subject, written in the
    /// transaction's own savepoint (a transaction that fails leaves none). Transactions of a group commit share their
    /// commit's `seq` but not their entries, so each has its own range. Created by every open (files made before it
    /// existed get it then); pruned with the change log.
    static let authorsTable = """
        CREATE TABLE IF NOT EXISTS meridian_authors (
            last_seq INTEGER PRIMARY KEY, first_seq INTEGER NOT NULL, subject TEXT NOT NULL)
        """

    /// Creates `meridian_applied`, or adds the digest column to one made before it existed.
    static func prepareAppliedTable(_ db: Database) throws {
        try db.execute(sql: Self.appliedTable)
        let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info('meridian_applied')")
        if !columns.contains("digest") {
            try db.execute(sql: "ALTER TABLE meridian_applied ADD COLUMN digest BLOB")
        }
    }

    /// Finds the next update or delete of a row after an insert (where a reader finds the after-image of an insert
    /// whose row has changed since). Partial: inserts, most of the log, are not indexed and pay nothing for it.
    /// Created by every open (files made before it existed get it then).
    static let changesRowIndex = """
        CREATE INDEX IF NOT EXISTS meridian_changes_row ON meridian_changes (entity, row_id, seq) WHERE kind <> 1
        """

    /// The longest idempotency key accepted, in UTF-8 bytes.
    static let maxIdempotencyKeyBytes = 128

    /// Microseconds since the Unix epoch, from built-in functions only.
    static let nowMicroseconds = "CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)"

    /// An identifier, double-quoted. (Names almost never hold a quote: skip Foundation's `replacingOccurrences`,
    /// which on Linux costs microseconds, when they do not — this runs for every transaction.)
    static func quoted(_ name: String) -> String {
        guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
        return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func sqlString(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "'")) else { return "'" + text + "'" }
        return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    // MARK: - Tables and indexes

    static func sqlType(_ type: AttributeType) -> String {
        switch type {
        case .string: "TEXT"
        case .int, .bool, .timestamp: "INTEGER"
        case .double: "REAL"
        case .bytes: "BLOB"
        }
    }

    static func columnDefinition(_ attribute: Attribute) -> String {
        var sql = "\(quoted(attribute.name)) \(sqlType(attribute.type))"
        if !attribute.isOptional { sql += " NOT NULL" }
        if let value = attribute.defaultValue { sql += " DEFAULT \(value.sqlLiteral)" }
        return sql
    }

    static func createTable(_ entity: EntitySchema) -> String {
        var columns = ["\"id\" TEXT PRIMARY KEY NOT NULL"]
        columns += entity.attributes.map(columnDefinition)
        columns.append("\"_version\" INTEGER NOT NULL DEFAULT 1")
        return "CREATE TABLE \(quoted(entity.name)) (\(columns.joined(separator: ", ")))"
    }

    /// Refuses a schema two of whose tables and indexes would have one SQLite name (which ignores letter case): the
    /// schema checks names within their kind, but an index is named `Entity__index`, so entity `A__b` and an index `b`
    /// of entity `A` would be one name.
    static func checkObjectNames(_ schema: Schema) throws(StoreError) {
        var named: [String: String] = [:]
        func claim(_ name: String, _ what: String) throws(StoreError) {
            if let other = named.updateValue(what, forKey: name.lowercased()) {
                throw StoreError(
                    .validation,
                    "the schema's \(other) and its \(what) would both be the SQLite table or index '\(name)' (SQLite's "
                        + "names ignore letter case): rename one")
            }
        }
        for entity in schema.entities { try claim(entity.name, "entity '\(entity.name)'") }
        for entity in schema.entities {
            for index in entity.indexes {
                try claim(sqliteIndexName(entity, index), "index '\(entity.name).\(index.name)'")
            }
        }
    }

    static func indexName(_ entity: EntitySchema, _ index: Index) -> String {
        quoted(sqliteIndexName(entity, index))
    }

    /// The SQLite name of an entity's index, unquoted: `Entity__index`.
    static func sqliteIndexName(_ entity: EntitySchema, _ index: Index) -> String {
        "\(entity.name)__\(index.name)"
    }

    static func createIndex(_ entity: EntitySchema, _ index: Index) -> String {
        let columns = index.attributes.map(quoted).joined(separator: ", ")
        return
            "CREATE \(index.isUnique ? "UNIQUE " : "")INDEX \(indexName(entity, index)) ON \(quoted(entity.name)) (\(columns))"
    }

    // MARK: - Capture triggers

    static func triggerName(_ entity: String, _ suffix: String) -> String {
        quoted("meridian_\(entity)_\(suffix)")
    }

    static func dropTriggers(_ entity: String) -> [String] {
        ["insert", "update", "rekey", "delete"].map { "DROP TRIGGER IF EXISTS \(triggerName(entity, $0))" }
    }

    /// One attribute of `record` (`NEW` or `OLD` in a trigger, the quoted table name in Meridian's own statements)
    /// as an exact JSON value, whatever its storage class.
    static func imageValue(_ record: String, _ column: String) -> String {
        let c = "\(record).\(quoted(column))"
        return """
            CASE typeof(\(c)) WHEN 'real' THEN json(CASE WHEN \(c) > 1.7976931348623157e308 THEN '1e999' \
            WHEN \(c) < -1.7976931348623157e308 THEN '-1e999' ELSE printf('%!.19g', \(c)) END) \
            WHEN 'blob' THEN json_object('$blob', hex(\(c))) ELSE \(c) END
            """
    }

    /// The JSON object of all attributes of `record`; built in chunks to stay under SQLite's argument limit.
    static func image(_ entity: EntitySchema, _ record: String) -> String {
        let names = entity.attributes.map(\.name)
        guard !names.isEmpty else { return "json_object()" }
        let chunkSize = 50
        var expression = ""
        var start = 0
        while start < names.count {
            let chunk = names[start..<min(start + chunkSize, names.count)]
            if start == 0 {
                let args = chunk.map { "\(sqlString($0)), \(imageValue(record, $0))" }
                expression = "json_object(\(args.joined(separator: ", ")))"
            } else {
                let args = chunk.map { "\(sqlString("$.\"\($0)\"")), \(imageValue(record, $0))" }
                expression = "json_insert(\(expression), \(args.joined(separator: ", ")))"
            }
            start += chunkSize
        }
        return expression
    }

    /// The start of every statement that writes log entries, the triggers' and Meridian's own.
    static let insertIntoLog =
        "INSERT INTO meridian_changes (entity, row_id, kind, version, before, after, committed_at)"

    static func logInsert(
        _ entity: EntitySchema,
        rowID: String,
        kind: Int,
        version: String,
        before: String,
        after: String
    ) -> String {
        """
        \(insertIntoLog) \
        VALUES (\(sqlString(entity.name)), \(rowID), \(kind), \(version), \(before), \(after), \(nowMicroseconds));
        """
    }

    /// The capture triggers of an entity.
    ///
    /// Inserts are logged without an after-image (building the JSON was most of the cost of capture): until the row
    /// changes again, the row itself is the after-image, and the next change of the row (an update, a delete, or
    /// the delete half of a rekey) carries it as its before-image. `ChangeDecoding` puts it back when reading.
    ///
    /// Meridian never sets `_version`: an update that leaves it unchanged (every update, by Meridian or by a raw
    /// writer) is logged with version `OLD._version + 1`, and the trigger bumps the column; the bump's own update
    /// changes `_version`, so it is not logged again. An update that changes the id is logged as a delete of the old
    /// id and an insert of the new one.
    static func createTriggers(_ entity: EntitySchema) -> [String] {
        let table = quoted(entity.name)
        let newImage = image(entity, "NEW")
        let oldImage = image(entity, "OLD")
        let bump = "UPDATE \(table) SET \"_version\" = OLD.\"_version\" + 1 WHERE rowid = NEW.rowid;"
        return [
            """
            CREATE TRIGGER \(triggerName(entity.name, "insert")) AFTER INSERT ON \(table) BEGIN
            \(logInsert(entity, rowID: "NEW.\"id\"", kind: 1, version: "NEW.\"_version\"", before: "NULL", after: "NULL"))
            END
            """,
            """
            CREATE TRIGGER \(triggerName(entity.name, "update")) AFTER UPDATE ON \(table)
            WHEN NEW."_version" IS OLD."_version" AND NEW."id" IS OLD."id" BEGIN
            \(bump)
            \(logInsert(entity, rowID: "NEW.\"id\"", kind: 2, version: "OLD.\"_version\" + 1", before: oldImage, after: newImage))
            END
            """,
            """
            CREATE TRIGGER \(triggerName(entity.name, "rekey")) AFTER UPDATE ON \(table)
            WHEN NEW."_version" IS OLD."_version" AND NEW."id" IS NOT OLD."id" BEGIN
            \(bump)
            \(logInsert(entity, rowID: "OLD.\"id\"", kind: 3, version: "OLD.\"_version\" + 1", before: oldImage, after: "NULL"))
            \(logInsert(entity, rowID: "NEW.\"id\"", kind: 1, version: "OLD.\"_version\" + 1", before: "NULL", after: "NULL"))
            END
            """,
            """
            CREATE TRIGGER \(triggerName(entity.name, "delete")) AFTER DELETE ON \(table) BEGIN
            \(logInsert(entity, rowID: "OLD.\"id\"", kind: 3, version: "OLD.\"_version\" + 1", before: oldImage, after: "NULL"))
            END
            """,
        ]
    }

    // MARK: - Meridian's own log entries

    /// The log entries of Meridian's own writes, which it writes itself: its connections run with triggers off
    /// (`Store.disableTriggers`), and each statement here writes exactly the entry the capture trigger would have.
    struct OwnEntries: Sendable {
        /// Per entity: the version and the image of a row, read before an update or a delete (the trigger's
        /// `OLD`) and after an update (`NEW`). (Not with `UPDATE … RETURNING`: SQLite 3.40 evaluates the image's
        /// `CASE` wrongly there, logging 2.5 as `1e999`.)
        var selectCurrent: [String: String] = [:]

        init(schema: Schema) {
            for entity in schema.entities {
                let table = StoreDDL.quoted(entity.name)
                let image = StoreDDL.image(entity, table)
                self.selectCurrent[entity.name] = "SELECT \"_version\", \(image) FROM \(table) WHERE \"id\" = ?"
            }
        }

        /// One entry, every value bound: entity, id, kind, version, before, after, committed_at.
        static let entry = "\(StoreDDL.insertIntoLog) VALUES (?, ?, ?, ?, ?, ?, ?)"

        /// How many inserts' entries one statement writes; a run of them is written in as few statements of these
        /// sizes as it takes (100 = 64 + 32 + 4).
        static let insertRunSizes = [64, 32, 16, 8, 4, 2, 1]

        /// The statement writing the entries of `count` inserts (version 1, no images, like the insert trigger's):
        /// `?1` is the commit time, then come the entity and the id of each insert, in order.
        static let inserts: [Int: String] = Dictionary(
            uniqueKeysWithValues: insertRunSizes.map { count in
                let rows = (0..<count).map { i in
                    "(?\(2 + 2 * i), ?\(3 + 2 * i), \(Change.Kind.insert.rawValue), 1, NULL, NULL, ?1)"
                }
                return (
                    count,
                    "\(StoreDDL.insertIntoLog) VALUES " + rows.joined(separator: ", ")
                )
            })
    }

    /// Everything a new entity needs: table, indexes, triggers.
    static func createEntity(_ entity: EntitySchema) -> [String] {
        [createTable(entity)] + entity.indexes.map { createIndex(entity, $0) } + createTriggers(entity)
    }
}
