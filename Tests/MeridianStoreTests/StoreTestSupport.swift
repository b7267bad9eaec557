// Shared fixtures for the store tests: a small schema built in code, store variants, temp directories, child
// processes.

import Foundation
import MeridianCore
import MeridianProcessIO
import MeridianStore
import Testing

/// The store variants each test body runs against.
enum StoreVariant: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// `Store.inMemory` (one connection).
    case inMemory
    /// `Store.open` on a file in a unique temporary directory.
    case file

    var testDescription: String { self.rawValue }
}

/// A unique temporary directory, removed when the value is deinitialized.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        self.path =
            FileManager.default.temporaryDirectory.appendingPathComponent("meridian-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: self.path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: self.path) }

    var storePath: String { self.path + "/store.sqlite" }
}

enum Fixtures {
    /// `Item` (auto ids, every attribute type) and `Tag` (client ids).
    static func schema(version: Int = 1) -> Schema {
        try! Schema(
            version: version,
            entities: [
                EntitySchema(
                    name: "Item",
                    attributes: itemAttributes,
                    indexes: [Index(attributes: ["title"])]
                ),
                EntitySchema(name: "Tag", attributes: [Attribute(name: "name", type: .string)], idPolicy: .client),
            ])
    }

    static let itemAttributes: [Attribute] = [
        Attribute(name: "title", type: .string),
        Attribute(name: "price", type: .double, isOptional: true),
        Attribute(name: "qty", type: .int, defaultValue: .int(0)),
        Attribute(name: "active", type: .bool, isOptional: true),
        Attribute(name: "due", type: .timestamp, isOptional: true),
        Attribute(name: "data", type: .bytes, isOptional: true),
        Attribute(name: "note", type: .string, isOptional: true),
    ]

    /// A schema with the given entities, for migration tests.
    static func schema(version: Int, _ entities: [EntitySchema]) -> Schema {
        try! Schema(version: version, entities: entities)
    }
}

/// Runs `body` against a fresh store of the variant; the file variant's directory is removed afterwards.
func withStore<T>(
    _ variant: StoreVariant,
    schema: Schema = Fixtures.schema(),
    configuration: Store.Configuration = Store.Configuration(),
    _ body: (Store) async throws -> T
) async throws -> T {
    switch variant {
    case .inMemory:
        let store = try Store.inMemory(schema: schema, configuration: configuration)
        return try await body(store)
    case .file:
        let directory = try TemporaryDirectory()
        let store = try Store.open(path: directory.storePath, schema: schema, configuration: configuration)
        let result = try await body(store)
        try store.close()
        _ = directory
        return result
    }
}

/// Every row of an entity from the store's table, by id, with versions.
func tableState(_ store: Store, _ entity: String) async throws -> [String: (Row, Int64)] {
    let snapshot = try await store.snapshot(entity: entity)
    var out: [String: (Row, Int64)] = [:]
    for (row, version) in zip(snapshot.rows, snapshot.versions) { out[row.id] = (row, version) }
    return out
}

/// All changes after `seq` (no limit); fails the test on a too-old answer.
func allChanges(_ store: Store, after seq: Int64 = 0, entities: Set<String>? = nil) async throws -> ChangeBatch {
    let result = try await store.changes(after: seq, entities: entities)
    guard case .changes(let batch) = result else {
        Issue.record("expected changes after \(seq), got \(result)")
        return ChangeBatch(changes: [], throughSeq: seq, hasMore: false)
    }
    return batch
}

// MARK: - Child processes

enum ChildProcess {
    /// The directory holding the built products (next to the test bundle, e.g. `.build/debug/`).
    static var productsDirectory: URL {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundle, bundle.deletingLastPathComponent()] {
            if FileManager.default.fileExists(
                atPath: candidate.appendingPathComponent("meridian-store-testhelper").path)
            {
                return candidate
            }
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug")
    }

    static var helper: URL { productsDirectory.appendingPathComponent("meridian-store-testhelper") }

    /// Runs a program to completion; returns its exit status and standard error.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], stdin: String? = nil) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        let input = Pipe()
        if stdin != nil { process.standardInput = input }
        try process.run()
        if let stdin {
            input.fileHandleForWriting.write(stdin.data(using: .utf8)!)
            try input.fileHandleForWriting.close()
        }
        let errorText = String(decoding: errors.fileHandleForReading.remainingData(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, errorText)
    }

    /// Runs SQL through a plain SQLite connection in another process (GRDB without Meridian).
    static func rawSQL(_ path: String, _ sql: String) throws {
        let (status, errors) = try run(helper.path, ["raw-sql", path, sql])
        #expect(status == 0, "raw-sql failed: \(errors)")
    }

    /// Runs a query through the `sqlite3` shell; returns its output without the final newline.
    static func sqlite3Output(_ path: String, _ sql: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [path, sql]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.remainingData(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "sqlite3 failed on \(sql)")
        return text.hasSuffix("\n") ? String(text.dropLast()) : text
    }

    /// Runs SQL through the `sqlite3` shell.
    static func sqlite3(_ path: String, _ sql: String) throws {
        let (status, errors) = try run("/usr/bin/sqlite3", [path], stdin: sql)
        #expect(status == 0 && errors.isEmpty, "sqlite3 failed (\(status)): \(errors)")
    }
}
