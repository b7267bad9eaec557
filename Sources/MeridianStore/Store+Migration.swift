// MARK: - Schema setup and migration

internal import Foundation
internal import GRDB
internal import Logging
public import MeridianCore

extension Store {
    /// Tells what opening the store file at `path` with `schema` would do, through a read-only connection.
    ///
    /// - Returns: Whether a store exists there, the version and fingerprint it records, and each difference with
    ///   whether it is additive.
    /// - Throws: ``StoreError`` `schemaMismatch` when the file is not a Meridian store, `io` when it cannot be read.
    public static func needsMigration(at path: String, schema: Schema) throws -> MigrationCheck {
        guard FileManager.default.fileExists(atPath: path) else {
            let added = SchemaDiff.differences(from: try! Schema(version: 0, entities: []), to: schema)
            return MigrationCheck(storeExists: false, storedVersion: nil, storedFingerprint: nil, differences: added)
        }
        do {
            let queue = try DatabaseQueue(path: path, configuration: Configuration().grdb(readonly: true))
            defer { try? queue.close() }
            return try queue.read { db in
                guard try SchemaRecord.exists(db) else {
                    throw StoreError(
                        .schemaMismatch, "'\(path)' is not a Meridian store (it has no meridian_meta table)")
                }
                let stored = try SchemaRecord.read(db)
                return MigrationCheck(
                    storeExists: true, storedVersion: stored.version, storedFingerprint: stored.fingerprint,
                    differences: SchemaDiff.differences(from: stored.schema, to: schema))
            }
        } catch {
            throw StoreError.wrap(error, "cannot read the store at '\(path)'")
        }
    }

    /// Creates the store's tables in an empty file, or checks and migrates the recorded schema, in one transaction.
    static func prepareSchema(_ writer: any DatabaseWriter, schema: Schema, path: String, logger: Logger) throws {
        try StoreDDL.checkObjectNames(schema)
        do {
            try writer.write { db in
                guard try SchemaRecord.exists(db) else {
                    try SchemaRecord.createMetaTables(db)
                    try StoreDDL.prepareAppliedTable(db)
                    try db.execute(sql: StoreDDL.revocationsTable)
                    try db.execute(sql: StoreDDL.authorsTable)
                    try db.execute(sql: StoreDDL.changesRowIndex)
                    for entity in schema.entities {
                        for sql in StoreDDL.createEntity(entity) { try db.execute(sql: sql) }
                    }
                    try SchemaRecord.write(schema, db)
                    logger.info(
                        "created store",
                        metadata: ["meridian.store.path": "\(path)", "meridian.schema.version": "\(schema.version)"])
                    return
                }
                let stored = try SchemaRecord.read(db)
                let differences = SchemaDiff.differences(from: stored.schema, to: schema)
                if differences.contains(where: { !$0.isAdditive }) {
                    throw StoreError(
                        .migrationRefused,
                        SchemaDiff.refusal(path: path, stored: stored, new: schema, differences: differences))
                }
                if !differences.isEmpty {
                    try migrate(db, to: schema, differences: differences)
                    logger.info(
                        "migrated store schema from version \(stored.version) to \(schema.version): \(differences.map(\.summary).joined(separator: "; "))",
                        metadata: ["meridian.store.path": "\(path)", "meridian.schema.version": "\(schema.version)"])
                }
                if !differences.isEmpty || stored.version != schema.version || stored.fingerprint != schema.fingerprint
                {
                    try SchemaRecord.write(schema, db)
                }
                try StoreDDL.prepareAppliedTable(db)
                try db.execute(sql: StoreDDL.revocationsTable)
                try db.execute(sql: StoreDDL.authorsTable)
                try db.execute(sql: StoreDDL.changesRowIndex)
                try refreshTriggers(db, schema: schema)
                if try SchemaRecord.meta(db, "format") != String(StoreDDL.formatVersion) {
                    try SchemaRecord.setMeta(db, "format", String(StoreDDL.formatVersion))
                }
            }
        } catch {
            throw StoreError.wrap(error, "cannot prepare the store at '\(path)'")
        }
    }

    /// Replaces an entity's capture triggers when they are not the ones this version writes (a file written by an
    /// earlier version, whose insert trigger built an after-image), so that every writer of the file — other
    /// processes included — logs the current format from now on.
    static func refreshTriggers(_ db: Database, schema: Schema) throws {
        for entity in schema.entities {
            let expected = StoreDDL.createTriggers(entity)
            let names = ["insert", "update", "rekey", "delete"].map { "meridian_\(entity.name)_\($0)" }
            let existing = try String.fetchAll(
                db, sql: "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name IN (?, ?, ?, ?)",
                arguments: StatementArguments(names))
            guard Set(existing) != Set(expected) else { continue }
            for sql in StoreDDL.dropTriggers(entity.name) + expected { try db.execute(sql: sql) }
        }
    }

    /// Applies additive differences: new tables, columns and indexes; capture triggers rebuilt for changed tables.
    static func migrate(_ db: Database, to schema: Schema, differences: [SchemaDifference]) throws {
        var retrigger: Set<String> = []
        for difference in differences {
            guard let entity = schema.entity(named: difference.entity) else { continue }
            if difference.kind == .entityAdded {
                for sql in StoreDDL.createEntity(entity) { try db.execute(sql: sql) }
            } else if difference.kind == .attributeAdded, let name = difference.member,
                let attribute = entity.attribute(named: name)
            {
                try db.execute(
                    sql:
                        "ALTER TABLE \(StoreDDL.quoted(entity.name)) ADD COLUMN \(StoreDDL.columnDefinition(attribute))"
                )
                retrigger.insert(entity.name)
            } else if difference.kind == .indexAdded, let name = difference.member,
                let index = entity.indexes.first(where: { $0.name == name })
            {
                try db.execute(sql: StoreDDL.createIndex(entity, index))
            }
        }
        for name in retrigger.sorted() {
            guard let entity = schema.entity(named: name) else { continue }
            for sql in StoreDDL.dropTriggers(name) + StoreDDL.createTriggers(entity) { try db.execute(sql: sql) }
        }
    }
}
