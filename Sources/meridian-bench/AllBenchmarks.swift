// MARK: - Every benchmark, one table
//
// `meridian-bench all [--json] [--output FILE]` (what `./meridian.sh bench all` runs)
//
// Runs the store, server (with its many-clients case), bulk and sync benchmarks one after the other, each at its
// default size, and prints one Markdown table of every figure next to its ceiling, headed by the date, the commit
// and the machine: the README's benchmark table is this output. With `--json`, the figures are printed as the
// benchmark contract's JSON lines instead (the table still goes to `--output`).

import Foundation
import MeridianProcessIO

enum AllBenchmarks {
    static let usage = "usage: meridian-bench all [--json] [--output FILE]"

    static func run(arguments: [String]) async throws {
        var json = false
        var output: String?
        var i = 0
        while i < arguments.count {
            switch arguments[i] {
            case "--json": json = true
            case "--output" where i + 1 < arguments.count:
                output = arguments[i + 1]
                i += 1
            default:
                FileHandle.standardError.write(Data("error: unknown argument '\(arguments[i])'\n\(usage)\n".utf8))
                exit(2)
            }
            i += 1
        }
        // The tables of each benchmark go to standard error as they run; the figures are gathered.
        let notes = FigurePrinter(json: true)
        let started = ContinuousClock.now
        var figures: [BenchFigure] = []
        figures += try await StoreBenchmark.figures(printer: notes)
        figures += try await ServerBenchmark.figures(printer: notes)
        figures += try await BulkBenchmark.figures(printer: notes)
        figures += try await SyncBenchmark.figures(printer: notes)
        let elapsed = ContinuousClock.now - started
        let table = self.markdown(figures, minutes: Double(elapsed.components.seconds) / 60)
        if let output { try table.write(toFile: output, atomically: true, encoding: .utf8) }
        if json {
            for figure in figures { print(figure.json) }
        } else {
            print(table, terminator: "")
        }
    }

    /// The figures as a Markdown table, with a line saying when, at which commit and on what they were measured.
    static func markdown(_ figures: [BenchFigure], minutes: Double) -> String {
        let date = ISO8601DateFormatter.string(
            from: Date(), timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
        var lines = [
            "Measured \(date) at commit \(self.commit()) on \(ProcessInfo.processInfo.activeProcessorCount) cores "
                + "(`./meridian.sh bench all`, \(String(format: "%.0f", minutes.rounded(.up))) minutes). Ratio: "
                + "Meridian over its ceiling in the same run (for times, lower is better; for rates, higher).",
            "",
            "| bench | case | Meridian | ceiling | ratio |",
            "|---|---|---:|---:|---:|",
        ]
        for figure in figures {
            let ratio = figure.ratio.map { String(format: "%.2fx", $0) } ?? "-"
            lines.append(
                "| \(figure.bench) | \(figure.name) | \(self.format(figure.value, figure.unit)) | "
                    + "\(figure.ceiling.map { self.format($0, figure.unit) } ?? "-") | \(ratio) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A value with its unit, to a sensible precision.
    static func format(_ value: Double, _ unit: String) -> String {
        guard value.isFinite else { return "-" }
        switch value {
        case 1e6...: return String(format: "%.2fM %@", value / 1e6, unit)
        case 1e4...: return String(format: "%.0fk %@", value / 1e3, unit)
        case 100...: return String(format: "%.0f %@", value, unit)
        case 1...: return String(format: "%.2f %@", value, unit)
        default: return String(format: "%.3f %@", value, unit)
        }
    }

    /// The short hash of the checkout's HEAD, with `+` when the work tree has changes; "unknown" outside a checkout.
    static func commit() -> String {
        func git(_ arguments: [String]) -> String? {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["git"] + arguments
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle(forWritingAtPath: "/dev/null")
            guard (try? process.run()) != nil else { return nil }
            let text = String(decoding: out.fileHandleForReading.remainingData(), as: UTF8.self)
            process.waitUntilExit()
            return process.terminationStatus == 0 ? text.trimmingCharacters(in: .whitespacesAndNewlines) : nil
        }
        guard let head = git(["rev-parse", "--short", "HEAD"]) else { return "unknown" }
        let dirty = git(["status", "--porcelain", "--untracked-files=no"]).map { !$0.isEmpty } ?? false
        return dirty ? head + "+" : head
    }
}
