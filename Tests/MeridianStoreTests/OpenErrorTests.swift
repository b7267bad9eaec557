import Foundation
import MeridianCore
import MeridianStore
import Testing

@Suite struct OpenErrorTests {
    @Test("opening a store in a directory that does not exist says so")
    func missingDirectory() throws {
        let path = NSTemporaryDirectory() + "meridian-missing-\(UUID().uuidString)/data/store.sqlite"
        let error = #expect(throws: StoreError.self) { try Store.open(path: path, schema: Fixtures.schema()) }
        #expect(error?.code == .io)
        #expect(error?.message.hasSuffix("/data' does not exist") == true, "\(error?.message ?? "")")
    }

    @Test("a schema whose index and another entity would share one SQLite name is refused before the file is prepared")
    func objectNamesCollide() throws {
        // Entity A's index on b is the SQLite index "A__b", the table of entity A__B (names ignore letter case).
        let schema = try Schema(
            version: 1,
            entities: [
                EntitySchema(
                    name: "A", attributes: [Attribute(name: "b", type: .string)], indexes: [Index(attributes: ["b"])]),
                EntitySchema(name: "A__B", attributes: [Attribute(name: "c", type: .string)]),
            ])
        let directory = NSTemporaryDirectory() + "meridian-names-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let error = #expect(throws: StoreError.self) {
            try Store.open(path: directory + "/store.sqlite", schema: schema)
        }
        #expect(error?.code == .validation)
        #expect(
            error?.message
                == "the schema's entity 'A__B' and its index 'A.b' would both be the SQLite table or index 'A__b' "
                + "(SQLite's names ignore letter case): rename one", "\(error?.message ?? "")")
        // The file it created for the refused schema is gone, with its WAL and shared-memory index.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == [])
        // A store that existed keeps its file when a later open refuses the schema.
        try Store.open(path: directory + "/store.sqlite", schema: Fixtures.schema()).close()
        #expect(throws: StoreError.self) { try Store.open(path: directory + "/store.sqlite", schema: schema) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).contains("store.sqlite"))
        try Store.open(path: directory + "/store.sqlite", schema: Fixtures.schema()).close()
    }

    @Test("opening a store under a file that is not a directory says so")
    func notADirectory() throws {
        let file = NSTemporaryDirectory() + "meridian-file-\(UUID().uuidString)"
        try Data().write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let error = #expect(throws: StoreError.self) {
            try Store.open(path: file + "/store.sqlite", schema: Fixtures.schema())
        }
        #expect(error?.message.hasSuffix("'\(file)' is not a directory") == true, "\(error?.message ?? "")")
    }
}
