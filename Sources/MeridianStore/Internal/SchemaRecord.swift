// MARK: - SchemaRecord

internal import GRDB
internal import MeridianCore

/// Reads and writes the schema recorded in a store file (`meridian_meta`, `meridian_entities`,
/// `meridian_attributes`, `meridian_indexes`), so that an opening store can diff the file's schema against its own.
enum SchemaRecord {
    /// What the file says about its schema.
    struct Stored {
        var schema: Schema
        var version: Int
        var fingerprint: String
    }

    static func exists(_ db: Database) throws -> Bool {
        try db.tableExists("meridian_meta")
    }

    static func createMetaTables(_ db: Database) throws {
        for sql in StoreDDL.metaTables { try db.execute(sql: sql) }
        try setMeta(db, "format", String(StoreDDL.formatVersion))
        try setMeta(db, "pruned_through", "0")
    }

    static func meta(_ db: Database, _ key: String) throws -> String? {
        let statement = try db.cachedStatement(sql: "SELECT value FROM meridian_meta WHERE key = ?")
        try TransactionExecutor.checkBound(RawRows.bind(key, statement, 1), statement)
        return try RawRows.first(statement, RawRows.text)
    }

    static func setMeta(_ db: Database, _ key: String, _ value: String) throws {
        try db.execute(
            sql:
                "INSERT INTO meridian_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            arguments: [key, value]
        )
    }

    static func write(_ schema: Schema, _ db: Database) throws {
        try db.execute(
            sql: "DELETE FROM meridian_entities; DELETE FROM meridian_attributes; DELETE FROM meridian_indexes")
        for (e, entity) in schema.entities.enumerated() {
            try db.execute(
                sql: "INSERT INTO meridian_entities (name, position, id_policy) VALUES (?, ?, ?)",
                arguments: [entity.name, e, entity.idPolicy.rawValue]
            )
            for (a, attribute) in entity.attributes.enumerated() {
                // Not `defaultValue != nil`: Value is ExpressibleByNilLiteral, so that can compare with `.some(.null)`.
                var hasDefault = false
                if case .some = attribute.defaultValue { hasDefault = true }
                try db.execute(
                    sql: """
                        INSERT INTO meridian_attributes (entity, name, position, type, optional, has_default, default_value)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        entity.name, attribute.name, a, attribute.type.rawValue, attribute.isOptional,
                        hasDefault, (attribute.defaultValue ?? .null).databaseValue,
                    ]
                )
            }
            for (i, index) in entity.indexes.enumerated() {
                try db.execute(
                    sql:
                        "INSERT INTO meridian_indexes (entity, name, position, attributes, is_unique) VALUES (?, ?, ?, ?, ?)",
                    arguments: [entity.name, index.name, i, index.attributes.joined(separator: ","), index.isUnique]
                )
            }
        }
        try setMeta(db, "schema_version", String(schema.version))
        try setMeta(db, "fingerprint", schema.fingerprint)
    }

    static func read(_ db: Database) throws -> Stored {
        var entities: [EntitySchema] = []
        let entityRows = try GRDB.Row.fetchAll(
            db, sql: "SELECT name, id_policy FROM meridian_entities ORDER BY position")
        for row in entityRows {
            let name: String = row[0]
            let policy = IDPolicy(rawValue: row[1]) ?? .auto
            var attributes: [Attribute] = []
            for a in try GRDB.Row.fetchAll(
                db,
                sql: """
                    SELECT name, type, optional, has_default, default_value FROM meridian_attributes
                    WHERE entity = ? ORDER BY position
                    """,
                arguments: [name]
            ) {
                guard let type = AttributeType(rawValue: a[1]) else {
                    throw StoreError(
                        .internalError,
                        "the store records an unknown type '\(a[1] as String)' for \(name).\(a[0] as String)")
                }
                let hasDefault: Bool = a[3]
                // Spelled out: with `: nil`, the ternary would infer `Value` and make `nil` a `Value.null` default.
                let defaultValue: Value? =
                    hasDefault ? StoredValue(a[4] as DatabaseValue).typed(as: type).value : Optional<Value>.none
                attributes.append(Attribute(name: a[0], type: type, isOptional: a[2], defaultValue: defaultValue))
            }
            let indexes = try GRDB.Row.fetchAll(
                db,
                sql: "SELECT name, attributes, is_unique FROM meridian_indexes WHERE entity = ? ORDER BY position",
                arguments: [name]
            ).map { row -> Index in
                let names = (row[1] as String).split(separator: ",").map(String.init)
                return Index(name: row[0], attributes: names, isUnique: row[2])
            }
            entities.append(EntitySchema(name: name, attributes: attributes, indexes: indexes, idPolicy: policy))
        }
        let version = Int(try meta(db, "schema_version") ?? "0") ?? 0
        let fingerprint = try meta(db, "fingerprint") ?? ""
        do {
            return Stored(
                schema: try Schema(version: version, entities: entities), version: version, fingerprint: fingerprint)
        } catch {
            throw StoreError(.internalError, "the schema recorded in the store is not valid", cause: error)
        }
    }
}
