// MARK: - The built meridian-check, run as CI runs it: short seeded soaks

import Foundation
import MeridianProcessIO
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The folder holding the built products (`meridian-check`, `meridian-server`): the test bundle's own folder.
let productsFolder: String = {
    let candidates = [
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path,
        Bundle.main.bundleURL.deletingLastPathComponent().path,
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path + "/.build/debug",
    ]
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0 + "/meridian-check") } ?? candidates[2]
}()

/// What a finished run printed and how it exited.
struct CheckRun: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String

    var description: String { "exit \(self.status)\nstdout:\n\(self.stdout)\nstderr:\n\(self.stderr)" }

    /// The number after `violations:` in the summary, or nil when there is no summary.
    var violations: Int? {
        self.summary("violations").flatMap { Int($0.prefix { $0.isNumber }) }
    }

    /// How many of the violations were within the resynchronisation window (`violations: N (M within …`).
    var resyncViolations: Int? {
        guard let text = self.summary("violations"), let open = text.firstIndex(of: "(") else { return nil }
        return Int(text[text.index(after: open)...].prefix { $0.isNumber })
    }

    /// The run directory a failing run keeps (`logs and store kept in PATH`), if it kept one.
    var keptDirectory: String? {
        guard let range = self.stdout.range(of: "logs and store kept in ") else { return nil }
        let path = self.stdout[range.upperBound...].prefix { $0 != "\n" }
        return path.isEmpty ? nil : String(path)
    }

    /// A summary line's text after `label: `.
    func summary(_ label: String) -> String? {
        self.stdout.split(separator: "\n").first(where: { $0.hasPrefix(label + ": ") }).map {
            String($0.dropFirst(label.count + 2))
        }
    }
}

/// Runs `meridian-check` with `arguments` and waits for it (its own children are stopped by it).
func runChecker(_ arguments: [String]) async throws -> CheckRun {
    // The test target depends on both executables, so `swift build --build-tests` builds them: one missing is a
    // failure, never a skip.
    for name in ["meridian-check", "meridian-server"] {
        try #require(
            FileManager.default.isExecutableFile(atPath: productsFolder + "/" + name),
            "\(productsFolder)/\(name) is not built")
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: productsFolder + "/meridian-check")
    process.arguments = arguments + ["--bin", productsFolder]
    // The clients log their connections and snapshots (a few dozen lines) into the run directory, which a failing
    // run keeps: CI's one failure so far had to be read from the reports alone.
    var environment = ProcessInfo.processInfo.environment
    if environment["MERIDIAN_CHECK_LOG_LEVEL"] == nil { environment["MERIDIAN_CHECK_LOG_LEVEL"] = "debug" }
    process.environment = environment
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    // Read both pipes to the end on their own threads, so that neither fills up.
    async let out = Task.detached { output.fileHandleForReading.remainingData() }.value
    async let err = Task.detached { errors.fileHandleForReading.remainingData() }.value
    let (stdout, stderr) = await (out, err)
    // Polled, not `waitUntilExit()`: on Linux, Foundation can miss a child's exit and spin forever inside it, on a
    // thread of the cooperative pool. The checker ends its own children; one that outlives 10 minutes is killed.
    let deadline = ContinuousClock.now + .seconds(600)
    while process.isRunning {
        if ContinuousClock.now > deadline { kill(process.processIdentifier, SIGKILL) }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return CheckRun(
        status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
        stderr: String(decoding: stderr, as: UTF8.self))
}

@Suite(.serialized)
struct CheckerRunTests {
    @Test(
        "a seeded soak without faults: every state every client reaches is the store's, every write ends",
        .timeLimit(.minutes(2)))
    func soakWithoutFaults() async throws {
        let run = try await runChecker([
            "--seed", "11", "--duration", "15", "--clients", "2", "--writers", "2", "--writer-pause-ms", "20",
            "--no-faults",
        ])
        #expect(run.status == 0, "\(run)")
        #expect(run.violations == 0, "\(run)")
        // The fuzz campaigns ran beside the soak, every input answered as promised.
        let fuzz = try #require(run.summary("fuzz inputs"), "\(run)")
        #expect(!fuzz.hasPrefix("0") && fuzz.contains("wire"), "\(run)")
        let states = try #require(run.summary("states checked"), "\(run)")
        #expect(!states.hasPrefix("0 "), "no controller state was checked: \(run)")
        let transactions = try #require(run.summary("transactions"), "\(run)")
        #expect(transactions.contains("confirmed"), "\(run)")
        #expect(!transactions.contains("stuck"), "\(run)")
    }

    @Test("the self-test: a client that drops one change is caught, and the run fails with the seed to replay")
    func selfTestIsCaught() async throws {
        let run = try await runChecker([
            "--seed", "12", "--duration", "8", "--clients", "1", "--writers", "2", "--no-faults", "--no-fuzz",
            "--self-test-corrupt",
            "--faults-per-minute", "30",
        ])
        #expect(run.status == 1, "\(run)")
        #expect((run.violations ?? 0) > 0, "\(run)")
        #expect(run.stdout.contains("replay: meridian-check --seed 12"), "\(run)")
        #expect(run.stdout.contains("--faults-per-minute 30.0"), "the replay keeps the fault rate: \(run)")
        #expect(run.stderr.contains("controller 'all-by-id'") || run.stderr.contains("does not apply"), "\(run)")
        // Failing as it must, it kept its run directory, as a failing run does for its replay: not needed here.
        let kept = try #require(run.keptDirectory, "\(run)")
        #expect(kept.contains("meridian-check-12-"), "\(kept)")
        try FileManager.default.removeItem(atPath: kept)
    }

    @Test("a fault rate out of range is a usage error (exit 2)")
    func faultRateRange() async throws {
        for rate in ["0", "601", "-3"] {
            let run = try await runChecker(["--seed", "1", "--faults-per-minute=\(rate)"])
            #expect(run.status == 2, "\(run)")
            #expect(run.stderr.contains("--faults-per-minute must be more than 0 and at most 600"), "\(run)")
        }
    }

    /// Faults: client kills (restart from the cache file), server kills, SIGSTOP past the queue bound, connection
    /// cuts, a full disk. No violation is allowed: after a reconnection or an overflow re-snapshot the client holds
    /// the per-subscription answers and applies them as one commit (docs/checker.md, "Findings").
    @Test("a seeded soak with every fault", .timeLimit(.minutes(2)))
    func soakWithFaults() async throws {
        let run = try await runChecker([
            "--seed", "13", "--duration", "20", "--clients", "2", "--writers", "2", "--writer-pause-ms", "20",
            "--no-fuzz",
        ])
        #expect(run.summary("fuzz inputs") == "0", "\(run)")
        let kills = try #require(run.summary("kills"), "\(run)")
        #expect(!kills.hasPrefix("0 "), "no kill was injected: \(run)")
        #expect(kills.contains("full disks: ") && !kills.hasSuffix("full disks: 0"), "no full disk: \(run)")
        // A write that failed on the full disk is UNAVAILABLE and says why (it used to be INTERNAL, and before that
        // to say only "the commit failed").
        if let reason = run.summary("reverted unavailable, e.g.") {
            #expect(reason.contains("disk") || reason.contains("full"), "\(run)")
        }
        if let reason = run.summary("reverted internal, e.g.") {
            #expect(!reason.contains("disk") && !reason.contains("full"), "a disk error answered as internal: \(run)")
        }
        // Neither controllers nor the map may show a state the store did not have (docs/checker.md, "Findings").
        let lines = try run.violationLines()
        #expect(lines.isEmpty, "\(lines.joined(separator: "\n"))\n\(run)")
        #expect(run.status == 0, "\(run)")
        #expect(run.violations == 0, "\(run)")
    }

    /// Identities and rules: three principals with overlapping views, owners changing, 4 s tokens refreshed on the
    /// open streams (a stopped client's stream ends at the expiry and reconnects with a new token). Every state each
    /// client reaches must be exactly what its principal may see at that seq (the rules evaluated by the checker, in
    /// Core, on the store's log). Broken on purpose once — one principal's subscriptions left unrestricted on the
    /// server — this run failed at once with "shows 1 rows … the store at seq 1 gives 0 rows".
    @Test(
        "a seeded soak with identities and rules: each client sees exactly its principal's rows",
        .timeLimit(.minutes(2)))
    func soakWithRules() async throws {
        let run = try await runChecker([
            "--seed", "14", "--duration", "20", "--clients", "3", "--writers", "2", "--writer-pause-ms", "20",
            "--no-fuzz", "--auth", "--token-ttl", "4",
        ])
        let identities = try #require(run.summary("clients"), "\(run)")
        #expect(identities.contains("identities: 3 readers"), "\(run)")
        // Streams were refreshed in place (the audit log's count): 20 s of 4 s tokens, three clients and two writers.
        let refreshes = identities.split(separator: ";").first { $0.contains("refreshes") }
            .flatMap { Int($0.split(separator: " ").first { Int($0) != nil } ?? "") }
        #expect((refreshes ?? 0) >= 5, "\(run)")
        let lines = try run.violationLines()
        #expect(lines.isEmpty, "\(lines.joined(separator: "\n"))\n\(run)")
        #expect(run.status == 0, "\(run)")
        #expect(run.violations == 0, "\(run)")
    }
}

extension CheckRun {
    /// Every violation of a failed run, from `violations.txt` in the run directory it kept (none when it passed).
    func violationLines() throws -> [String] {
        guard let marker = self.stdout.range(of: "logs and store kept in ") else { return [] }
        let directory = self.stdout[marker.upperBound...].prefix { !$0.isNewline }
        let text = try String(contentsOfFile: directory + "/violations.txt", encoding: .utf8)
        return text.split(separator: "\n").map(String.init)
    }
}
