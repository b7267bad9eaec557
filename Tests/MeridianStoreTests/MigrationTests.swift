import Foundation
import Logging
import MeridianCore
import MeridianStore
import Synchronization
import Testing

/// Collects log messages, to check what the store logs.
final class LogRecorder: Sendable {
    let messages = Mutex<[String]>([])

    var logger: Logger {
        Logger(label: "meridian.store.test") { _ in Handler(recorder: self) }
    }

    struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { self.metadata[key] }
            set { self.metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            self.recorder.messages.withLock { $0.append("\(event.level): \(event.message)") }
        }
    }
}

/// Builds a v2 schema from the fixture's v1 by editing Item's attributes (and optionally the entity list).
func editedSchema(
    _ editAttributes: (inout [Attribute]) -> Void,
    indexes: [Index] = [Index(attributes: ["title"])],
    dropTag: Bool = false,
    extraEntities: [EntitySchema] = []
) -> Schema {
    var attributes = Fixtures.itemAttributes
    editAttributes(&attributes)
    var entities = [EntitySchema(name: "Item", attributes: attributes, indexes: indexes)]
    if !dropTag { entities.append(EntitySchema(name: "Tag", attributes: [Attribute(name: "name", type: .string)], idPolicy: .client)) }
    return Fixtures.schema(version: 2, entities + extraEntities)
}

@Suite struct MigrationTests {
    /// A v1 store file with one row, closed.
    func oldFile(_ directory: TemporaryDirectory) async throws {
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        try await store.apply([.insert("Item", id: "a", ["title": "Pen"])])
        try store.close()
    }

    @Test("reopening with the same schema migrates nothing and keeps the data")
    func sameSchema() async throws {
        let directory = try TemporaryDirectory()
        try await oldFile(directory)
        let recorder = LogRecorder()
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema(), logger: recorder.logger)
        #expect(try await tableState(store, "Item").keys.sorted() == ["a"])
        #expect(recorder.messages.withLock { $0 }.isEmpty)
        let check = try Store.needsMigration(at: directory.storePath, schema: Fixtures.schema())
        #expect(check.storeExists && !check.needsMigration && check.storedVersion == 1)
        try store.close()
    }

    @Test("additive changes are migrated in one transaction, logged, and captured from then on")
    func additive() async throws {
        let directory = try TemporaryDirectory()
        try await oldFile(directory)
        let shelf = EntitySchema(name: "Shelf", attributes: [Attribute(name: "label", type: .string)])
        let v2 = editedSchema(
            {
                $0.append(Attribute(name: "color", type: .string, isOptional: true))
                $0.append(Attribute(name: "stock", type: .int, defaultValue: .int(5)))
            },
            indexes: [Index(attributes: ["title"]), Index(name: "by_price", attributes: ["price"])],
            extraEntities: [shelf])
        let check = try Store.needsMigration(at: directory.storePath, schema: v2)
        #expect(check.needsMigration && check.isAdditive)
        #expect(check.differences.map(\.summary) == [
            "Item.color: attribute added (string, optional)",
            "Item.stock: attribute added (int, default 5)",
            "Item: index 'by_price' added",
            "Shelf: entity added",
        ])
        let recorder = LogRecorder()
        let store = try Store.open(path: directory.storePath, schema: v2, logger: recorder.logger)
        #expect(recorder.messages.withLock { $0 } == [
            "info: migrated store schema from version 1 to 2: Item.color: attribute added (string, optional); Item.stock: attribute added (int, default 5); Item: index 'by_price' added; Shelf: entity added"
        ])
        #expect(try await tableState(store, "Item")["a"]?.0 == Row(id: "a", values: ["title": "Pen", "qty": 0, "stock": 5]))
        try await store.apply([
            .update("Item", id: "a", ["color": "red"]),
            .insert("Shelf", id: "s", ["label": "top"]),
        ])
        let changes = try await allChanges(store, after: 1).changes
        #expect(changes.first?.changedAttributes == ["color"])
        #expect(changes.first?.after?["stock"] == 5)
        #expect(changes.last?.entity == "Shelf")
        try store.close()
        #expect(!(try Store.needsMigration(at: directory.storePath, schema: v2).needsMigration))
    }

    static let refused: [(String, Schema, [String])] = [
        ("type change", editedSchema { $0[2] = Attribute(name: "qty", type: .double, defaultValue: .double(0)) }, [
            "  - Item.qty: type changed from int to double; add a new attribute of type double and copy the values into it, or migrate the file by hand"
        ]),
        ("removal", editedSchema { $0.removeLast() }, [
            "  - Item.note: attribute removed (string); keep it in the schema (make it optional if it is no longer written), or migrate the file by hand"
        ]),
        ("rename", editedSchema { $0[6] = Attribute(name: "memo", type: .string, isOptional: true) }, [
            "  - Item.note: attribute removed (string); keep it in the schema (make it optional if it is no longer written), or migrate the file by hand; if it was renamed to 'memo': renames are not migrated, keep 'note' or copy the values by hand",
            "additive changes, not applied either: Item.memo: attribute added (string, optional)",
        ]),
        ("optional to required", editedSchema { $0[1] = Attribute(name: "price", type: .double) }, [
            "  - Item.price: changed from optional to required; existing rows may hold nil: keep it optional and enforce the rule in writers, or fill the values and migrate by hand"
        ]),
        ("new required attribute without a default", editedSchema { $0.append(Attribute(name: "sku", type: .string)) }, [
            "  - Item.sku: attribute added (string, required, no default); the rows that exist need a value: give it a default, or make it optional"
        ]),
        ("entity removed", editedSchema({ _ in }, dropTag: true), [
            "  - Tag: entity removed (the file has it, the schema does not); keep the entity in the schema, or export its rows and start a new store file"
        ]),
        ("index removed", editedSchema({ _ in }, indexes: []), [
            "  - Item: index 'title' removed; keep the index in the schema, or drop it by hand"
        ]),
    ]

    @Test("non-additive changes are refused with a message naming each difference and what to do", arguments: refused)
    func refusedMigration(name: String, schema: Schema, lines: [String]) async throws {
        let directory = try TemporaryDirectory()
        try await oldFile(directory)
        let check = try Store.needsMigration(at: directory.storePath, schema: schema)
        #expect(check.needsMigration && !check.isAdditive)
        let error = #expect(throws: StoreError.self) { try Store.open(path: directory.storePath, schema: schema) }
        #expect(error?.code == .migrationRefused)
        let header = "the store at '\(directory.storePath)' (schema version 1) cannot be migrated automatically to schema version 2:"
        #expect(error?.message == ([header] + lines).joined(separator: "\n"))
        // Nothing changed: the old schema still opens, with its data.
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        #expect(try await tableState(store, "Item").count == 1)
        try store.close()
    }

    @Test("several refused differences are each named")
    func severalDifferences() async throws {
        let directory = try TemporaryDirectory()
        try await oldFile(directory)
        let schema = editedSchema {
            $0[2] = Attribute(name: "qty", type: .string, defaultValue: "0")
            $0.removeLast()
        }
        let error = #expect(throws: StoreError.self) { try Store.open(path: directory.storePath, schema: schema) }
        let lines = error?.message.split(separator: "\n").map(String.init) ?? []
        #expect(lines.count == 3)
        #expect(lines.dropFirst().map { $0.prefix(14) } == ["  - Item.qty: ", "  - Item.note:"])
    }

    @Test("needsMigration reads an old file without writing it, and answers for a missing file")
    func needsMigrationIsReadOnly() async throws {
        let directory = try TemporaryDirectory()
        try await oldFile(directory)
        let before = try Data(contentsOf: URL(fileURLWithPath: directory.storePath))
        let v2 = editedSchema { $0.append(Attribute(name: "color", type: .string, isOptional: true)) }
        let check = try Store.needsMigration(at: directory.storePath, schema: v2)
        #expect(check.storeExists && check.storedVersion == 1 && check.storedFingerprint?.isEmpty == false)
        #expect(check.differences.map(\.kind) == [.attributeAdded] && check.isAdditive)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.storePath)) == before)
        let missing = try Store.needsMigration(at: directory.path + "/none.sqlite", schema: v2)
        #expect(!missing.storeExists && missing.differences.map(\.kind) == [.entityAdded, .entityAdded])
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/none.sqlite"))
    }
}
