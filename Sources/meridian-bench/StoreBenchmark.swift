// MARK: - StoreBenchmark

import Foundation
import GRDB
import Logging
import MeridianCore
import MeridianStore

/// Rows per second committed through the Store (with change capture) against plain GRDB inserts into the same
/// table without capture triggers, side by side: 1-row and 1000-row transactions, and 8 concurrent single-row
/// writers (group-committed, and each committing alone). Each figure is the median of three runs on a fresh file,
/// the two sides of each comparison interleaved.
enum StoreBenchmark {
    static let singleRowCommits = 4_000
    static let batches = 40
    static let batchSize = 1_000
    static let writers = 8
    /// The store logs "created store" at info; keep the table readable.
    static let logger: Logger = {
        var logger = Logger(label: "meridian.bench")
        logger.logLevel = .warning
        return logger
    }()

    static func schema() throws -> Schema {
        try Schema(version: 1, entities: [
            EntitySchema(
                name: "Bench",
                attributes: [
                    Attribute(name: "title", type: .string),
                    Attribute(name: "price", type: .double),
                    Attribute(name: "qty", type: .int),
                    Attribute(name: "active", type: .bool),
                ])
        ])
    }

    static func values(_ i: Int) -> [String: Value] {
        ["title": .string("item \(i)"), "price": .double(Double(i) * 0.37), "qty": .int(Int64(i)), "active": .bool(i % 2 == 0)]
    }

    // MARK: - Running

    struct Figure {
        var name: String
        var rows: Int
        var seconds: Double
        var rowsPerSecond: Double { Double(self.rows) / self.seconds }
    }

    static func run() async throws {
        print("store benchmark: \(ProcessInfo.processInfo.activeProcessorCount) cores, median of 3 interleaved runs, fresh file per run")
        // Each pair runs interleaved (plain, store, plain, store, …) so that a change in machine load hits both.
        let (plain1, store1) = try await pair(
            ("plain GRDB, 1 row/tx", singleRowCommits, { try await plainSingle($0) }),
            ("store, 1 row/tx", singleRowCommits, { try await storeSingle($0) }))
        let (plainBatch, storeBatch) = try await pair(
            ("plain GRDB, 1000 rows/tx", batches * batchSize, { try await plainBatches($0) }),
            ("store, 1000 rows/tx", batches * batchSize, { try await storeBatches($0) }))
        let (plain8, alone8) = try await pair(
            ("plain GRDB, 8 writers x 1 row/tx", singleRowCommits, { try await plainConcurrent($0) }),
            ("store, 8 writers, each commit alone", singleRowCommits, { try await storeConcurrent($0, groupCommit: false) }))
        let (_, group8) = try await pair(
            ("store, 8 writers, each commit alone", singleRowCommits, { try await storeConcurrent($0, groupCommit: false) }),
            ("store, 8 writers, group commit", singleRowCommits, { try await storeConcurrent($0, groupCommit: true) }))

        func line(_ f: Figure, _ comparison: String) {
            let name = f.name.padding(toLength: 40, withPad: " ", startingAt: 0)
            let rate = String(format: "%12.0f", f.rowsPerSecond)
            let micros = String(format: "%9.2f", f.seconds / Double(f.rows) * 1e6)
            print("\(name) \(rate) rows/s \(micros) µs/row   \(comparison)")
        }
        print("")
        print("measurement".padding(toLength: 40, withPad: " ", startingAt: 0) + "         rows/s       µs/row   ratio")
        line(plain1, "")
        line(store1, String(format: "capture cost %.2fx plain", plain1.rowsPerSecond / store1.rowsPerSecond))
        line(plainBatch, "")
        line(storeBatch, String(format: "capture cost %.2fx plain (goal < 1.5x)", plainBatch.rowsPerSecond / storeBatch.rowsPerSecond))
        line(plain8, "")
        line(alone8, String(format: "%.2fx plain 8 writers", alone8.rowsPerSecond / plain8.rowsPerSecond))
        line(group8, String(format: "%.2fx each-alone, %.2fx store 1 row/tx (goal >= 5x)",
                            group8.rowsPerSecond / alone8.rowsPerSecond, group8.rowsPerSecond / store1.rowsPerSecond))
    }

    typealias Case = (name: String, rows: Int, body: (String) async throws -> Void)

    /// Runs two cases alternately, three times each, on fresh files; returns each one's median.
    static func pair(_ a: Case, _ b: Case) async throws -> (Figure, Figure) {
        var times: ([Double], [Double]) = ([], [])
        for _ in 0..<3 {
            times.0.append(try await timed(a.body))
            times.1.append(try await timed(b.body))
        }
        return (
            Figure(name: a.name, rows: a.rows, seconds: times.0.sorted()[1]),
            Figure(name: b.name, rows: b.rows, seconds: times.1.sorted()[1])
        )
    }

    static func timed(_ body: (String) async throws -> Void) async throws -> Double {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let start = ContinuousClock.now
        try await body(directory + "/bench.sqlite")
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    }

    // MARK: - Plain GRDB (no capture)

    static func plainPool(_ path: String) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        let pool = try DatabasePool(path: path, configuration: configuration)
        try pool.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE "Bench" ("id" TEXT PRIMARY KEY NOT NULL, "title" TEXT NOT NULL, "price" REAL NOT NULL,
                    "qty" INTEGER NOT NULL, "active" INTEGER NOT NULL, "_version" INTEGER NOT NULL DEFAULT 1)
                    """)
        }
        return pool
    }

    static let plainInsert = #"INSERT INTO "Bench" ("id", "active", "price", "qty", "title") VALUES (?, ?, ?, ?, ?)"#

    static func plainRow(_ db: Database, _ i: Int) throws {
        try db.cachedStatement(sql: plainInsert).execute(arguments: [
            UUID().uuidString.lowercased(), i % 2 == 0, Double(i) * 0.37, Int64(i), "item \(i)",
        ])
    }

    static func plainSingle(_ path: String) async throws {
        let pool = try plainPool(path)
        for i in 0..<singleRowCommits { try await pool.write { db in try plainRow(db, i) } }
        try pool.close()
    }

    static func plainBatches(_ path: String) async throws {
        let pool = try plainPool(path)
        for b in 0..<batches {
            try await pool.write { db in
                for i in 0..<batchSize { try plainRow(db, b * batchSize + i) }
            }
        }
        try pool.close()
    }

    static func plainConcurrent(_ path: String) async throws {
        let pool = try plainPool(path)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<writers {
                group.addTask {
                    for i in stride(from: w, to: singleRowCommits, by: writers) {
                        try await pool.write { db in try plainRow(db, i) }
                    }
                }
            }
            try await group.waitForAll()
        }
        try pool.close()
    }

    // MARK: - Store (capture)

    static func storeSingle(_ path: String) async throws {
        let store = try Store.open(path: path, schema: try schema(), logger: logger)
        for i in 0..<singleRowCommits { try await store.apply([.insert("Bench", values(i))]) }
        try store.close()
    }

    static func storeBatches(_ path: String) async throws {
        let store = try Store.open(path: path, schema: try schema(), logger: logger)
        for b in 0..<batches {
            try await store.apply((0..<batchSize).map { .insert("Bench", values(b * batchSize + $0)) })
        }
        try store.close()
    }

    static func storeConcurrent(_ path: String, groupCommit: Bool) async throws {
        var configuration = Store.Configuration()
        configuration.maxGroupCommitSize = groupCommit ? 256 : 1
        let store = try Store.open(path: path, schema: try schema(), configuration: configuration, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<writers {
                group.addTask {
                    for i in stride(from: w, to: singleRowCommits, by: writers) {
                        try await store.apply([.insert("Bench", values(i))])
                    }
                }
            }
            try await group.waitForAll()
        }
        try store.close()
    }
}
