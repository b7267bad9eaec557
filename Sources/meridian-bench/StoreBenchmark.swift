// MARK: - StoreBenchmark

import Foundation
import GRDB
import Logging
import MeridianCore
import MeridianStore

/// Rows per second committed through the Store (with change capture) against plain GRDB inserts into the same
/// table without capture triggers, side by side: 1-row and 1000-row transactions, and 8 concurrent single-row
/// writers (group-committed, and each committing alone). Each figure is the median of three runs on a fresh file
/// (after `warmUpCommits` untimed commits), the two sides of each comparison interleaved.
/// The benchmarks' logger: the store logs "created store" at info; keep the tables readable.
let benchLogger: Logger = {
    var logger = Logger(label: "meridian.bench")
    logger.logLevel = .warning
    return logger
}()

enum StoreBenchmark {
    static let singleRowCommits = Int(ProcessInfo.processInfo.environment["MERIDIAN_BENCH_COMMITS"] ?? "") ?? 4_000
    static let batches = Int(ProcessInfo.processInfo.environment["MERIDIAN_BENCH_BATCHES"] ?? "") ?? 40
    static let batchSize = 1_000
    static let writers = 8
    /// Commits written before the stopwatch starts, in the case's own pattern (`MERIDIAN_BENCH_WARMUP`): a fresh
    /// file's WAL grows for its first ~1,000 frames (4 MB), then is reused from its start after each checkpoint, and
    /// a flush that also grows the file costs more. Without a warm-up, a short case spends a larger share of its
    /// commits growing the WAL: the 8-writer group commit (500 commits of ~6 frames) a third of them, each commit
    /// alone (4,000 of ~4 frames) a sixteenth, which made group commit look 10% worse than in a long run
    /// (4.81x over 4,000 commits from a fresh file, 5.41x over 32,000).
    static let warmUpCommits = Int(ProcessInfo.processInfo.environment["MERIDIAN_BENCH_WARMUP"] ?? "") ?? 2_000
    /// Both sides commit with the same durability: the store's default (`full`, an fsync per commit), or
    /// `MERIDIAN_BENCH_DURABILITY=normal`.
    static let durability =
        Store.Durability(
            rawValue: ProcessInfo.processInfo.environment["MERIDIAN_BENCH_DURABILITY"] ?? "full") ?? .full
    static let logger = benchLogger

    static func schema() throws -> Schema {
        try Schema(
            version: 1,
            entities: [
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
        [
            "title": .string("item \(i)"), "price": .double(Double(i) * 0.37), "qty": .int(Int64(i)),
            "active": .bool(i % 2 == 0),
        ]
    }

    // MARK: - Running

    struct Figure {
        var name: String
        var rows: Int
        var seconds: Double
        /// CPU time (user + system, every thread of the process) over the same interval.
        var cpuSeconds: Double
        var rowsPerSecond: Double { Double(self.rows) / self.seconds }
        var cpuMicrosPerRow: Double { self.cpuSeconds / Double(self.rows) * 1e6 }
    }

    /// Times the writes only: a case starts it after opening its database and stops it before closing, so that
    /// creating the schema (the store also creates its log tables and triggers) is not counted on either side.
    final class Stopwatch: @unchecked Sendable {  // used by one task at a time
        var wall: ContinuousClock.Instant = .now
        var cpu: Double = 0
        var result: (wall: Double, cpu: Double) = (0, 0)

        static func processCPU() -> Double {
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) * 1e-6
                + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) * 1e-6
        }

        func start() {
            self.cpu = Self.processCPU()
            self.wall = .now
        }

        func stop() {
            let elapsed = ContinuousClock.now - self.wall
            let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            self.result = (wall, Self.processCPU() - self.cpu)
        }
    }

    /// `MERIDIAN_BENCH_ONLY=NAME` runs one case once (for profiling under callgrind): plain1, store1, plainBatch,
    /// storeBatch, plain8, alone8, group8.
    static func runOnly(_ name: String) async throws {
        let cases: [String: (String, Stopwatch) async throws -> Void] = [
            "plain1": { try await plainSingle($0, $1) }, "store1": { try await storeSingle($0, $1) },
            "plainBatch": { try await plainBatches($0, $1) }, "storeBatch": { try await storeBatches($0, $1) },
            "plain8": { try await plainConcurrent($0, $1) },
            "alone8": { try await storeConcurrent($0, $1, groupCommit: false) },
            "group8": { try await storeConcurrent($0, $1, groupCommit: true) },
        ]
        guard let body = cases[name] else { throw CocoaError(.featureUnsupported) }
        let (wall, cpu) = try await timed(body)
        print(name, "wall", wall, "cpu", cpu)
    }

    static func run(arguments: [String]) async throws {
        if let only = ProcessInfo.processInfo.environment["MERIDIAN_BENCH_ONLY"] { return try await runOnly(only) }
        guard arguments.allSatisfy({ $0 == "--json" }) else {
            FileHandle.standardError.write(Data("usage: meridian-bench store [--json]\n".utf8))
            exit(2)
        }
        let printer = FigurePrinter(json: arguments.contains("--json"))
        for figure in try await self.figures(printer: printer) { printer.print(figure) }
    }

    /// The store's table, printed as it runs (as notes, with `--json`), and its figures: the store's commits against
    /// plain GRDB's (the capture cost), and group commit against plain GRDB's 8 writers.
    static func figures(printer: FigurePrinter) async throws -> [BenchFigure] {
        printer.note(
            "store benchmark: \(ProcessInfo.processInfo.activeProcessorCount) cores, median of 3 interleaved runs, fresh file per run, \(warmUpCommits) untimed commits first, durability \(durability.rawValue) (both sides)"
        )
        // Each pair runs interleaved (plain, store, plain, store, …) so that a change in machine load hits both.
        let (plain1, store1) = try await pair(
            ("plain GRDB, 1 row/tx", singleRowCommits, { try await plainSingle($0, $1) }),
            ("store, 1 row/tx", singleRowCommits, { try await storeSingle($0, $1) }))
        let (plainBatch, storeBatch) = try await pair(
            ("plain GRDB, 1000 rows/tx", batches * batchSize, { try await plainBatches($0, $1) }),
            ("store, 1000 rows/tx", batches * batchSize, { try await storeBatches($0, $1) }))
        let (plain8, alone8) = try await pair(
            ("plain GRDB, 8 writers x 1 row/tx", singleRowCommits, { try await plainConcurrent($0, $1) }),
            (
                "store, 8 writers, each commit alone", singleRowCommits,
                { try await storeConcurrent($0, $1, groupCommit: false) }
            ))
        let (_, group8) = try await pair(
            (
                "store, 8 writers, each commit alone", singleRowCommits,
                { try await storeConcurrent($0, $1, groupCommit: false) }
            ),
            (
                "store, 8 writers, group commit", singleRowCommits,
                { try await storeConcurrent($0, $1, groupCommit: true) }
            ))

        func line(_ f: Figure, _ comparison: String) {
            let name = f.name.padding(toLength: 38, withPad: " ", startingAt: 0)
            let rate = String(format: "%10.0f", f.rowsPerSecond)
            let micros = String(format: "%8.2f", f.seconds / Double(f.rows) * 1e6)
            let cpu = String(format: "%8.2f", f.cpuMicrosPerRow)
            printer.note("\(name) \(rate) \(micros) \(cpu)   \(comparison)")
        }
        /// "wall-clock ratio / CPU ratio": the first is what the goal states, the second what a loaded machine does
        /// not distort (CPU time of the whole process, every thread).
        func ratio(_ a: Figure, over b: Figure) -> String {
            String(
                format: "%.2fx / cpu %.2fx", a.seconds / Double(a.rows) / (b.seconds / Double(b.rows)),
                a.cpuSeconds / Double(a.rows) / (b.cpuSeconds / Double(b.rows)))
        }
        func gain(_ a: Figure, over b: Figure) -> String {
            String(
                format: "%.2fx / cpu %.2fx", a.rowsPerSecond / b.rowsPerSecond, b.cpuMicrosPerRow / a.cpuMicrosPerRow)
        }
        printer.note("")
        printer.note(
            "measurement".padding(toLength: 38, withPad: " ", startingAt: 0)
                + "     rows/s   µs/row cpu µs/row   ratio (wall / cpu)")
        line(plain1, "")
        line(store1, "capture cost " + ratio(store1, over: plain1) + " plain")
        line(plainBatch, "")
        line(storeBatch, "capture cost " + ratio(storeBatch, over: plainBatch) + " plain (goal < 1.5x)")
        line(plain8, "")
        line(alone8, "cost " + ratio(alone8, over: plain8) + " plain 8 writers")
        line(group8, "throughput " + gain(group8, over: alone8) + " each-alone (goal >= 5x)")
        line(group8, "throughput " + gain(group8, over: store1) + " store 1 row/tx")
        func micros(_ f: Figure) -> Double { f.seconds / Double(f.rows) * 1e6 }
        return [
            BenchFigure(
                bench: "store", name: "commit time per row, 1-row transactions (ceiling: plain GRDB)",
                value: micros(store1), unit: "µs/row", ceiling: micros(plain1)),
            BenchFigure(
                bench: "store", name: "commit time per row, 1,000-row transactions (ceiling: plain GRDB)",
                value: micros(storeBatch), unit: "µs/row", ceiling: micros(plainBatch)),
            BenchFigure(
                bench: "store", name: "rows/s, 8 writers with group commit (ceiling: plain GRDB, 8 writers)",
                value: group8.rowsPerSecond, unit: "rows/s", ceiling: plain8.rowsPerSecond),
        ]
    }

    typealias Case = (name: String, rows: Int, body: (String, Stopwatch) async throws -> Void)

    /// Runs two cases alternately, three times each, on fresh files; returns each one's median.
    static func pair(_ a: Case, _ b: Case) async throws -> (Figure, Figure) {
        var times: ([(wall: Double, cpu: Double)], [(wall: Double, cpu: Double)]) = ([], [])
        for _ in 0..<3 {
            times.0.append(try await timed(a.body))
            times.1.append(try await timed(b.body))
        }
        func median(_ runs: [(wall: Double, cpu: Double)]) -> (Double, Double) {
            (runs.map(\.wall).sorted()[1], runs.map(\.cpu).sorted()[1])
        }
        let (aWall, aCPU) = median(times.0)
        let (bWall, bCPU) = median(times.1)
        return (
            Figure(name: a.name, rows: a.rows, seconds: aWall, cpuSeconds: aCPU),
            Figure(name: b.name, rows: b.rows, seconds: bWall, cpuSeconds: bCPU)
        )
    }

    static func timed(_ body: (String, Stopwatch) async throws -> Void) async throws -> (wall: Double, cpu: Double) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "meridian-bench-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stopwatch = Stopwatch()
        try await body(directory + "/bench.sqlite", stopwatch)
        return stopwatch.result
    }

    // MARK: - Plain GRDB (no capture)

    static func plainPool(_ path: String) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        let pool = try DatabasePool(path: path, configuration: configuration)
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = \(durability.synchronousPragma)")
        }
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

    /// The same ids the store generates for inserts without one (and at the same cost).
    static func plainRow(_ db: Database, _ i: Int) throws {
        try db.cachedStatement(sql: plainInsert).execute(arguments: [
            RandomID.uuidString(), i % 2 == 0, Double(i) * 0.37, Int64(i), "item \(i)",
        ])
    }

    static func plainSingle(_ path: String, _ stopwatch: Stopwatch) async throws {
        let pool = try plainPool(path)
        for i in 0..<warmUpCommits { try await pool.write { db in try plainRow(db, i) } }
        stopwatch.start()
        for i in 0..<singleRowCommits { try await pool.write { db in try plainRow(db, i) } }
        stopwatch.stop()
        try pool.close()
    }

    static func plainBatches(_ path: String, _ stopwatch: Stopwatch) async throws {
        let pool = try plainPool(path)
        for i in 0..<warmUpCommits { try await pool.write { db in try plainRow(db, i) } }
        stopwatch.start()
        for b in 0..<batches {
            try await pool.write { db in
                for i in 0..<batchSize { try plainRow(db, b * batchSize + i) }
            }
        }
        stopwatch.stop()
        try pool.close()
    }

    static func plainConcurrent(_ path: String, _ stopwatch: Stopwatch) async throws {
        let pool = try plainPool(path)
        try await concurrently(warmUpCommits) { i in try await pool.write { db in try plainRow(db, i) } }
        stopwatch.start()
        try await concurrently(singleRowCommits) { i in try await pool.write { db in try plainRow(db, i) } }
        stopwatch.stop()
        try pool.close()
    }

    // MARK: - Store (capture)

    static func configuration() -> Store.Configuration {
        var configuration = Store.Configuration()
        configuration.durability = durability
        return configuration
    }

    static func storeSingle(_ path: String, _ stopwatch: Stopwatch) async throws {
        let store = try Store.open(path: path, schema: try schema(), configuration: configuration(), logger: logger)
        for i in 0..<warmUpCommits { try await store.apply([.insert("Bench", values(i))]) }
        stopwatch.start()
        for i in 0..<singleRowCommits { try await store.apply([.insert("Bench", values(i))]) }
        stopwatch.stop()
        try store.close()
    }

    static func storeBatches(_ path: String, _ stopwatch: Stopwatch) async throws {
        let store = try Store.open(path: path, schema: try schema(), configuration: configuration(), logger: logger)
        for i in 0..<warmUpCommits { try await store.apply([.insert("Bench", values(i))]) }
        stopwatch.start()
        for b in 0..<batches {
            try await store.apply((0..<batchSize).map { .insert("Bench", values(b * batchSize + $0)) })
        }
        stopwatch.stop()
        try store.close()
    }

    static func storeConcurrent(_ path: String, _ stopwatch: Stopwatch, groupCommit: Bool) async throws {
        var configuration = configuration()
        configuration.maxGroupCommitSize = groupCommit ? 256 : 1
        let store = try Store.open(path: path, schema: try schema(), configuration: configuration, logger: logger)
        try await concurrently(warmUpCommits) { i in try await store.apply([.insert("Bench", values(i))]) }
        stopwatch.start()
        try await concurrently(singleRowCommits) { i in try await store.apply([.insert("Bench", values(i))]) }
        stopwatch.stop()
        try store.close()
    }

    /// `commits` calls of `body` (with 0..<commits) from `writers` tasks at once, each task's calls one after the
    /// other (task `w` makes calls `w`, `w + writers`, …).
    static func concurrently(
        _ commits: Int,
        writers: Int = writers,
        _ body: @escaping @Sendable (Int) async throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<writers {
                group.addTask { for i in stride(from: w, to: commits, by: writers) { try await body(i) } }
            }
            try await group.waitForAll()
        }
    }
}
