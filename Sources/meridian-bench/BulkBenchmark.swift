// MARK: - Bulk benchmark
//
// `meridian-bench bulk [--rows 20000] [--runs 3] [--json]`
//
// The bulk path as a user runs it: `meridian apply FILE` of N JSON insert lines (one transaction) through a
// `meridian-server`, until a `meridian watch Bench --format jsonl` started beforehand has printed every one of them —
// three processes, the wire and the store, from the moment `meridian apply` is started. The ceiling: Python's
// sqlite3 inserting the same rows into a WAL-mode file with `synchronous=FULL`, one transaction (the store's default
// durability), timed inside Python from the first insert to the commit. Runs alternate (Meridian, Python, Meridian,
// …); the figures are medians, and the ratio is Meridian's median over the ceiling's. A second case applies the same
// lines into results that already show as many other rows (interleaved with them in the watcher's order), against
// Python inserting them into a table that holds those rows: what a bulk write costs a client that shows data.

import Foundation
import MeridianCore
import MeridianProcessIO

/// One benchmark figure: what every case prints, and with `--json` one JSON object on standard output.
struct BenchFigure {
    var bench: String
    var name: String
    var value: Double
    var unit: String
    var ceiling: Double?

    /// Meridian over its ceiling (for times: how many times slower; 1.0 is the ceiling).
    var ratio: Double? { self.ceiling.map { $0 > 0 ? self.value / $0 : .infinity } }

    var json: String {
        func number(_ value: Double?) -> String {
            guard let value, value.isFinite else { return "null" }
            return String(format: "%.6g", value)
        }
        let string = JSONText.quoted
        return "{\"bench\":\(string(self.bench)),\"case\":\(string(self.name)),\"value\":\(number(self.value)),"
            + "\"unit\":\(string(self.unit)),\"ceiling\":\(number(self.ceiling)),\"ratio\":\(number(self.ratio))}"
    }

    var text: String {
        var line = "\(self.name): \(String(format: "%.3f", self.value)) \(self.unit)"
        if let ceiling, let ratio {
            line +=
                " (ceiling \(String(format: "%.3f", ceiling)) \(self.unit), ratio \(String(format: "%.2f", ratio))x)"
        }
        return line
    }
}

/// Prints figures as the benchmark contract says: text, or JSON lines on standard output (text then on stderr).
struct FigurePrinter {
    var json: Bool

    func print(_ figure: BenchFigure) {
        if self.json {
            Swift.print(figure.json)
            FileHandle.standardError.write(Data((figure.text + "\n").utf8))
        } else {
            Swift.print(figure.text)
        }
        fflush(nil)
    }

    func note(_ text: String) {
        if self.json {
            FileHandle.standardError.write(Data((text + "\n").utf8))
        } else {
            Swift.print(text)
            fflush(nil)
        }
    }
}

enum BulkBenchmark {
    struct BenchError: Error, CustomStringConvertible {
        var description: String
    }

    static let schemaYAML = """
        version: 1
        entities:
          Bench:
            id: client
            attributes:
              title: string
              stamp: int
              qty: int
        """

    static func run(arguments: [String]) async throws {
        var rows = 20_000
        var runs = 3
        var importRows = 1_000_000
        var json = false
        var i = 0
        while i < arguments.count {
            switch arguments[i] {
            case "--rows" where i + 1 < arguments.count:
                rows = Int(arguments[i + 1]) ?? rows
                i += 1
            case "--runs" where i + 1 < arguments.count:
                runs = max(1, Int(arguments[i + 1]) ?? runs)
                i += 1
            case "--import-rows" where i + 1 < arguments.count:
                importRows = max(0, Int(arguments[i + 1]) ?? importRows)
                i += 1
            case "--json": json = true
            default:
                FileHandle.standardError.write(
                    Data("usage: meridian-bench bulk [--rows 20000] [--runs 3] [--import-rows 1000000] [--json]\n".utf8)
                )
                exit(2)
            }
            i += 1
        }
        let printer = FigurePrinter(json: json)
        for figure in try await self.figures(rows: rows, runs: runs, importRows: importRows, printer: printer) {
            printer.print(figure)
        }
    }

    /// The runs, alternated with the ceiling's, each noted as it ends; the medians as figures.
    static func figures(
        rows: Int = 20_000, runs: Int = 3, importRows: Int = 1_000_000, printer: FigurePrinter
    ) async throws -> [BenchFigure] {
        let bin = try Self.binDirectory(needing: ["meridian-server", "meridian"])
        let directory = NSTemporaryDirectory() + "meridian-bench-bulk-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.schemaYAML.write(toFile: directory + "/bench.yaml", atomically: true, encoding: .utf8)
        try Self.insertLines(rows, idSuffix: "").write(
            toFile: directory + "/rows.jsonl", atomically: true, encoding: .utf8)
        // Rows already shown, for the case that applies the same lines into them: other ids, interleaved with the
        // new ones in the watcher's order (by id: `r7s` comes right after `r7`), so that the new rows land all over
        // the results, not after them.
        try Self.insertLines(rows, idSuffix: "s").write(
            toFile: directory + "/shown.jsonl", atomically: true, encoding: .utf8)
        try Self.pythonScript.write(toFile: directory + "/ceiling.py", atomically: true, encoding: .utf8)

        printer.note(
            "bulk: meridian apply of \(rows) JSON insert lines until meridian watch printed them, \(runs) runs")
        var meridian: [Double] = []
        var applied: [Double] = []
        var python: [Double] = []
        var intoShown: [Double] = []
        var pythonIntoShown: [Double] = []
        for run in 0..<runs {
            let (total, apply) = try Self.meridianRun(bin: bin, directory: directory + "/run\(run)", rows: rows)
            meridian.append(total)
            applied.append(apply)
            python.append(try Self.pythonRun(directory: directory, database: "python\(run).sqlite", rows: rows))
            printer.note(
                String(
                    format: "  run %d: meridian %.3f s (apply returned at %.3f s), python sqlite3 %.3f s", run + 1,
                    total, apply, python.last!))
        }
        for run in 0..<runs {
            let (total, _) = try Self.meridianRun(
                bin: bin, directory: directory + "/shown\(run)", rows: rows, shownRows: rows)
            intoShown.append(total)
            pythonIntoShown.append(
                try Self.pythonRun(
                    directory: directory, database: "python-shown\(run).sqlite", rows: rows, preloadedRows: rows))
            printer.note(
                String(
                    format: "  run %d into %d shown rows: meridian %.3f s, python sqlite3 %.3f s", run + 1, rows,
                    total, pythonIntoShown.last!))
        }
        let ceiling = Self.median(python)
        let imported = importRows > 0 ? try Self.importFigure(bin: bin, directory: directory, rows: importRows) : nil
        if let imported { printer.note(imported.text) }
        return [
            BenchFigure(
                bench: "bulk", name: "apply \(rows) JSON lines until watch printed them", value: Self.median(meridian),
                unit: "s", ceiling: ceiling),
            BenchFigure(
                bench: "bulk", name: "apply \(rows) JSON lines until meridian apply returned",
                value: Self.median(applied), unit: "s", ceiling: ceiling),
            BenchFigure(
                bench: "bulk", name: "apply \(rows) JSON lines into \(rows) shown rows until watch printed them",
                value: Self.median(intoShown), unit: "s", ceiling: Self.median(pythonIntoShown)),
        ] + (imported.map { [$0] } ?? [])
    }

    /// `meridian import` of a CSV of `rows` rows (500-row transactions, its default) into a fresh `meridian-server`
    /// store, from its start to its exit, against Python's sqlite3 inserting the same rows in the same transactions
    /// (WAL, synchronous=FULL, timed inside Python), in rows/s: the goal is at least half the ceiling. (Its progress
    /// bar is drawn on a terminal only: not here.)
    static func importFigure(bin: String, directory: String, rows: Int) throws -> BenchFigure {
        var csv = "id,title,stamp,qty\n"
        csv.reserveCapacity(rows * 32)
        for r in 0..<rows { csv += "r\(r),row \(r),\(r),\(r % 100)\n" }
        try csv.write(toFile: directory + "/rows.csv", atomically: true, encoding: .utf8)
        let run = directory + "/import"
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        let (server, address) = try Self.startServer(
            bin: bin, db: run + "/store.sqlite", schema: directory + "/bench.yaml")
        defer { Self.stop(server) }
        let start = DispatchTime.now().uptimeNanoseconds
        let importer = Process()
        importer.executableURL = URL(fileURLWithPath: bin + "/meridian")
        importer.arguments = [
            "import", "Bench", directory + "/rows.csv", "--server", address,
        ]
        importer.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        let errors = Pipe()
        importer.standardError = errors
        try importer.run()
        let message = String(decoding: errors.fileHandleForReading.remainingData(), as: UTF8.self)
        importer.waitUntilExit()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard importer.terminationStatus == 0 else {
            throw BenchError(description: "meridian import failed: \(message)")
        }
        let ceiling = try Self.pythonRun(
            directory: directory, database: "python-import.sqlite", rows: rows, transactionRows: 500)
        return BenchFigure(
            bench: "bulk", name: "meridian import of a \(rows)-row CSV, 500-row transactions, rows/s",
            value: Double(rows) / seconds, unit: "rows/s", ceiling: Double(rows) / ceiling)
    }

    /// The directory of this executable, where the benchmarks that run Meridian's programs as a user does find them.
    static func binDirectory(needing names: [String]) throws -> String {
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().path
        for name in names where !FileManager.default.isExecutableFile(atPath: bin + "/" + name) {
            throw BenchError(
                description:
                    "\(bin)/\(name) is missing: build it beside meridian-bench (./meridian.sh bench builds them all)")
        }
        return bin
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    /// `rows` JSON insert lines for `meridian apply`, row r with the id `r<r><idSuffix>`.
    static func insertLines(_ rows: Int, idSuffix: String) -> String {
        var lines = ""
        lines.reserveCapacity(rows * 80)
        for r in 0..<rows {
            lines +=
                "{\"op\":\"insert\",\"entity\":\"Bench\",\"id\":\"r\(r)\(idSuffix)\","
                + "\"values\":{\"title\":\"row \(r)\",\"stamp\":\(r),\"qty\":\(r % 100)}}\n"
        }
        return lines
    }

    /// One Meridian run on a fresh store: the seconds until the watcher printed every row, and until `meridian
    /// apply` exited. With `shownRows`, the watcher first shows that many other rows (`shown.jsonl`, applied and
    /// printed before the timed part).
    static func meridianRun(bin: String, directory: String, rows: Int, shownRows: Int = 0) throws -> (Double, Double) {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let (server, address) = try Self.startServer(
            bin: bin, db: directory + "/store.sqlite", schema: directory + "/../bench.yaml")
        defer { Self.stop(server) }

        let (watch, watchOut) = try Self.start(
            bin + "/meridian", ["watch", "Bench", "--format", "jsonl", "--server", address])
        defer { Self.stop(watch) }
        // The watcher's snapshot (empty) comes first: it is subscribed.
        let snapshot = Self.readLine(watchOut)
        guard snapshot.contains("\"event\":\"snapshot\"") else {
            throw BenchError(description: "meridian watch did not print its snapshot (said '\(snapshot)')")
        }

        if shownRows > 0 {
            let shown = try Self.apply(bin: bin, file: directory + "/../shown.jsonl", address: address, start: 0)
            try Self.awaitInserts(shownRows, from: watchOut)
            try Self.finish(shown)
        }

        let start = DispatchTime.now().uptimeNanoseconds
        let apply = try Self.apply(bin: bin, file: directory + "/../rows.jsonl", address: address, start: start)
        try Self.awaitInserts(rows, from: watchOut)
        let total = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        try Self.finish(apply)
        return (total, apply.seconds.value ?? total)
    }

    /// A running `meridian apply FILE`, its standard error, and the seconds from `start` to its exit once it ended.
    struct RunningApply {
        var process: Process
        var errors: Pipe
        var seconds: LockedSeconds
    }

    /// Starts `meridian apply FILE` against the server at `address`.
    static func apply(bin: String, file: String, address: String, start: UInt64) throws -> RunningApply {
        let apply = Process()
        apply.executableURL = URL(fileURLWithPath: bin + "/meridian")
        apply.arguments = ["apply", file, "--server", address]
        apply.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        let errors = Pipe()
        apply.standardError = errors
        let seconds = LockedSeconds()
        apply.terminationHandler = { _ in seconds.set(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9) }
        try apply.run()
        return RunningApply(process: apply, errors: errors, seconds: seconds)
    }

    /// Waits for `meridian apply` to exit; throws what it said if it failed.
    static func finish(_ apply: RunningApply) throws {
        apply.process.waitUntilExit()
        guard apply.process.terminationStatus == 0 else {
            let message = String(decoding: apply.errors.fileHandleForReading.remainingData(), as: UTF8.self)
            throw BenchError(description: "meridian apply failed: \(message)")
        }
    }

    /// Reads the watcher's output until it has printed `rows` inserts, counted straight from its bytes.
    static func awaitInserts(_ rows: Int, from watchOut: FileHandle) throws {
        let pattern = Array("\"op\":\"insert\"".utf8)
        var seen = 0
        var carry: [UInt8] = []
        while seen < rows {
            let data = watchOut.nextChunk()
            if data.isEmpty { throw BenchError(description: "meridian watch ended after \(seen) of \(rows) rows") }
            var bytes = carry
            bytes.append(contentsOf: data)
            var index = 0
            while index + pattern.count <= bytes.count {
                // Compared in place: this loop shares the two cores with the processes it times.
                if bytes[index] == pattern[0], bytes[index..<(index + pattern.count)].elementsEqual(pattern) {
                    seen += 1
                    index += pattern.count
                } else {
                    index += 1
                }
            }
            carry = Array(bytes.suffix(pattern.count - 1))
        }
    }

    /// Starts `meridian-server` on a loopback port of its choosing, quiet but for warnings; returns the process and
    /// the address it printed (`HOST:PORT`).
    static func startServer(bin: String, db: String, schema: String, _ extra: [String] = []) throws -> (Process, String)
    {
        let (server, output) = try Self.start(
            bin + "/meridian-server",
            ["--db", db, "--schema", schema, "--listen", "127.0.0.1:0", "--log-level", "warning"] + extra)
        let firstLine = Self.readLine(output)
        guard firstLine.hasPrefix("listening on ") else {
            Self.stop(server)
            throw BenchError(description: "meridian-server did not start (said '\(firstLine)')")
        }
        return (server, String(firstLine.dropFirst("listening on ".count)))
    }

    /// Starts `executable` with its standard output on a pipe (returned) and its standard error discarded.
    static func start(_ executable: String, _ arguments: [String]) throws -> (Process, FileHandle) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        return (process, output.fileHandleForReading)
    }

    /// SIGTERM, then waits for the exit.
    static func stop(_ process: Process) {
        process.terminate()
        process.waitUntilExit()
    }

    /// The ceiling: Python's seconds for the same rows into a fresh `database` in `directory`, WAL,
    /// synchronous=FULL, in one transaction or in transactions of `transactionRows`; with `preloadedRows`, into a
    /// table that already holds that many other rows (inserted before the timed part).
    static func pythonRun(
        directory: String, database: String, rows: Int, transactionRows: Int? = nil, preloadedRows: Int = 0
    ) throws -> Double {
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = [
            directory + "/ceiling.py", directory + "/" + database, String(rows), String(transactionRows ?? rows),
            String(preloadedRows),
        ]
        let out = Pipe()
        python.standardOutput = out
        try python.run()
        let text = String(decoding: out.fileHandleForReading.remainingData(), as: UTF8.self)
        python.waitUntilExit()
        guard python.terminationStatus == 0, let seconds = Double(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw BenchError(description: "python3 failed: \(text)")
        }
        return seconds
    }

    static let pythonScript = """
        import sqlite3, sys, time
        path, n = sys.argv[1], int(sys.argv[2])
        c = sqlite3.connect(path, isolation_level=None)
        c.execute("PRAGMA journal_mode=WAL")
        c.execute("PRAGMA synchronous=FULL")
        c.execute("CREATE TABLE Bench (id TEXT PRIMARY KEY NOT NULL, title TEXT NOT NULL, stamp INTEGER NOT NULL, "
                  "qty INTEGER NOT NULL)")
        rows = [("r%d" % i, "row %d" % i, i, i % 100) for i in range(n)]
        size = int(sys.argv[3]) if len(sys.argv) > 3 else n
        preloaded = int(sys.argv[4]) if len(sys.argv) > 4 else 0
        if preloaded:
            c.execute("BEGIN")
            c.executemany("INSERT INTO Bench VALUES (?, ?, ?, ?)",
                          [("r%ds" % i, "row %d" % i, i, i % 100) for i in range(preloaded)])
            c.execute("COMMIT")
        t = time.perf_counter()
        for start in range(0, n, size):
            c.execute("BEGIN")
            c.executemany("INSERT INTO Bench VALUES (?, ?, ?, ?)", rows[start:start + size])
            c.execute("COMMIT")
        print(time.perf_counter() - t)

        """

    /// Reads one line (without its newline) from `handle`, byte by byte (used before the timed part only).
    static func readLine(_ handle: FileHandle) -> String {
        var bytes: [UInt8] = []
        while true {
            guard let byte = handle.nextByte(), byte != UInt8(ascii: "\n") else { break }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A time set once from another thread.
final class LockedSeconds: @unchecked Sendable {
    private let lock = NSLock()
    private var seconds: Double?

    func set(_ value: Double) { self.lock.withLock { self.seconds = value } }
    var value: Double? { self.lock.withLock { self.seconds } }
}
