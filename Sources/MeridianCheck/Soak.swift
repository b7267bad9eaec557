// MARK: - Soak: one seeded run of the whole system under faults, ending with a summary

internal import Foundation
internal import MeridianFuzz

#if canImport(Glibc)
    internal import Glibc
#endif

/// A fault the soak injects on its seeded schedule.
public enum Fault: String, CaseIterable, Sendable, Hashable {
    /// `kill -9` a client, restart it on its cache file (a new incarnation).
    case clientKill = "client-kill"
    /// `kill -9` the server, restart it on the same store file (clients reconnect through the proxy and resume).
    case serverKill = "server-kill"
    /// `SIGSTOP` a client past its server-side queue bound, then `SIGCONT` (the resnapshot path).
    case clientStop = "client-stop"
    /// Cut every connection at the proxy.
    case connectionCut = "connection-cut"
    /// A full disk: a file size limit on the running server (`prlimit`), so every write to its files fails with
    /// `EFBIG` for a few seconds, then lifted.
    case diskFull = "disk-full"

    /// How often each kind comes up, relative to the others, under a fault rate (``SoakOptions/faultsPerMinute``):
    /// roughly what a fleet sees in a year — client processes die far more often than servers, connections drop
    /// about as often as servers restart, disks fill rarely.
    public var weight: Int {
        switch self {
        case .clientKill: 50
        case .serverKill: 5
        case .connectionCut: 5
        case .clientStop: 2
        case .diskFull: 1
        }
    }
}

/// How a soak runs.
public struct SoakOptions: Sendable {
    public var seed: UInt64
    public var duration: Int
    public var clients = 4
    public var writers = 3
    public var faults: Set<Fault> = Set(Fault.allCases)
    /// Where `meridian-server` is (default: next to this executable).
    public var binDirectory: String?
    /// Make client 0 drop one change (the self-test: the run must then fail).
    public var selfTestCorrupt = false
    /// Keep the run directory (store, cache files, logs) even when the run passes.
    public var keep = false
    /// Print every check that passes.
    public var verbose = false
    /// The server's `--client-queue-limit`: small, so that a stopped client overflows it.
    public var queueLimit = 64
    /// Writers pause for a random 0 … 2 × this many milliseconds between transactions.
    public var writerPauseMs = 10
    /// Faults at this mean rate, one at a time, each kind as often as its ``Fault/weight`` says (after one of each);
    /// `nil`: the default schedule (every kind once, then at random, a few seconds apart).
    public var faultsPerMinute: Double?
    /// Run the fuzz campaigns (MeridianFuzz: wire, predicate, schema, apply, token) for the whole soak, beside it, against
    /// a server of their own; every failure is a violation.
    public var fuzz = true
    /// Identities and rules (`--auth`): the server verifies HS256 tokens and serves ``Workload/authSchemaYAML``; each
    /// client reads as ``Workload/readerPrincipal(client:)`` and is checked against what that principal may see;
    /// writers write as ``Workload/writerPrincipal``; every token lives ``tokenLifetimeSeconds``.
    public var auth = false
    /// The lifetime of the tokens under `--auth`: clients refresh their streams before it ends.
    public var tokenLifetimeSeconds = 8

    public init(seed: UInt64, duration: Int) {
        self.seed = seed
        self.duration = duration
    }
}

/// What a soak did and found.
public struct SoakSummary: Sendable, CustomStringConvertible {
    public var options: SoakOptions
    public var directory: String
    public var transactions: [String: Int]
    public var revertReasons: [String: String]
    public var rawWrites: Int
    public var changes: Int
    public var clientIncarnations: Int
    public var clientKills: Int
    public var serverKills: Int
    public var clientStops: Int
    public var diskFulls: Int
    public var cutRounds: Int
    public var connectionsCut: Int
    public var reconnects: Int
    public var resnapshots: Int
    public var statesChecked: Int
    public var mapStatesChecked: Int
    /// Inputs the fuzz campaigns tried, by campaign.
    public var fuzzInputs: [String: Int]
    /// Under `--auth`, from the server's audit log: streams refreshed in place, and ended at their token's expiry.
    public var refreshes = 0
    public var expiries = 0
    public var violations: [String]
    /// The violations, those within the resynchronisation window marked `(resync)`.
    public var annotatedViolations: [String]
    public var resyncViolations: Int
    public var elapsed: Duration

    public var description: String {
        let total = self.transactions.values.reduce(0, +)
        let outcomes = self.transactions.keys.sorted().map { "\($0) \(self.transactions[$0]!)" }
        let seconds = Double(self.elapsed.components.seconds)
        return """
            meridian-check summary (seed \(self.options.seed), \(self.options.duration) s planned, \(String(format: "%.0f", seconds)) s run)
            transactions: \(total) (\(outcomes.joined(separator: ", "))); raw sqlite3 writes: \(self.rawWrites); changes logged: \(self.changes)
            clients: \(self.options.clients) (\(self.clientIncarnations) incarnations); writers: \(self.options.writers)\(self.options.auth ? "; identities: 3 readers, 1 writer, \(self.options.tokenLifetimeSeconds) s tokens; \(self.refreshes) refreshes, \(self.expiries) streams ended at expiry" : "")
            kills: \(self.clientKills + self.serverKills) (clients \(self.clientKills), server \(self.serverKills)); stops: \(self.clientStops); full disks: \(self.diskFulls)
            reconnects: \(self.reconnects); connection cuts: \(self.connectionsCut) in \(self.cutRounds) rounds
            resnapshots: \(self.resnapshots)
            states checked: \(self.statesChecked) controller, \(self.mapStatesChecked) map
            fuzz inputs: \(self.fuzzInputs.values.reduce(0, +))\(self.fuzzInputs.isEmpty ? "" : " (" + self.fuzzInputs.keys.sorted().map { "\($0) \(self.fuzzInputs[$0]!)" }.joined(separator: ", ") + ")")
            \(self.revertReasons.keys.sorted().map { "reverted \($0), e.g.: \(self.revertReasons[$0]!)" }.joined(separator: "\n"))
            violations: \(self.violations.count) (\(self.resyncViolations) within \(Verifier.resyncWindowMs / 1000) s of a reconnection or snapshot)
            """
    }
}

/// Runs a soak: the server, the proxy, the clients, the writers, the `sqlite3` writer and the fault schedule, all
/// checked as they go; then stops the writers (every transaction must end), makes one last write every client must
/// reach, stops everything and returns the summary. Every child is stopped before this returns or throws.
///
/// - Throws: ``CheckError`` when the run cannot be set up (no server binary, a child that cannot start).
public func runSoak(_ options: SoakOptions) async throws -> SoakSummary {
    signal(SIGPIPE, SIG_IGN)
    let started = ContinuousClock.now
    let directory = NSTemporaryDirectory() + "meridian-check-\(options.seed)-\(getpid())"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    try (options.auth ? Workload.authSchemaYAML : Workload.schemaYAML).write(
        toFile: directory + "/schema.yaml", atomically: true, encoding: .utf8)
    if options.auth {
        // The secret the server verifies with and the roles sign with (mode 0600: it is a key).
        guard
            FileManager.default.createFile(
                atPath: directory + "/auth.secret", contents: Data((String(repeating: "k", count: 48) + "\n").utf8),
                attributes: [.posixPermissions: 0o600])
        else { throw CheckError("cannot write the soak's token secret to \(directory)/auth.secret") }
    }
    let executable = currentExecutablePath()
    let bin = options.binDirectory ?? (executable as NSString).deletingLastPathComponent
    let serverExecutable = bin + "/meridian-server"
    guard FileManager.default.isExecutableFile(atPath: serverExecutable) else {
        throw CheckError(
            "no meridian-server in \(bin): build it (swift build --product meridian-server) or pass --bin DIR")
    }
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3") else {
        throw CheckError("the sqlite3 shell is missing (/usr/bin/sqlite3): run ./meridian.sh setup")
    }
    let (events, continuation) = AsyncStream.makeStream(of: (Origin, ChildEvent).self)
    let supervisor = Supervisor(
        options: options, directory: directory, executable: executable, serverExecutable: serverExecutable,
        events: continuation)
    let log = { (text: String) in
        let elapsed = (ContinuousClock.now - started).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        FileHandle.standardError.write(Data("meridian-check: [\(String(format: "%6.1f", seconds)) s] \(text)\n".utf8))
    }
    log("run directory \(directory)")

    do {
        try await supervisor.startServer()
        let verifier = Verifier(
            oracle: try Oracle(path: directory + "/store.sqlite"), verbose: options.verbose, auth: options.auth)
        var summary = try await withThrowingTaskGroup(of: Void.self) { group in
            // The consumer: every line of every child, checked as it arrives.
            group.addTask {
                // Every report, kept in the run directory (reports.jsonl) to replay what a client saw.
                _ = FileManager.default.createFile(atPath: directory + "/reports.jsonl", contents: nil)
                let transcript = FileHandle(forWritingAtPath: directory + "/reports.jsonl")
                defer { try? transcript?.close() }
                for await (origin, event) in events {
                    switch event {
                    case .line(let line):
                        transcript?.write(
                            Data("\(origin.role) \(origin.index).\(origin.incarnation) \(line)\n".utf8))
                        await verifier.handle(line: line, from: origin)
                    case .exit(let status):
                        if await !supervisor.isExpectedExit(origin) {
                            await verifier.violation(
                                "\(origin) exited with status \(status) without being killed (log in \(directory))")
                        }
                    }
                }
            }
            try await supervisor.startSQLite()
            for index in 0..<options.clients { try await supervisor.startClient(index) }
            for index in 0..<options.writers { try await supervisor.startWriter(index) }
            try await waitUntil("every client and writer is ready", timeout: .seconds(120)) {
                let clients = await verifier.clientsReady.count
                let writers = await verifier.writersReady.count
                return clients == options.clients && writers == options.writers
            }
            log("\(options.clients) clients and \(options.writers) writers ready; running for \(options.duration) s")
            let deadline = ContinuousClock.now + .seconds(options.duration)
            // The fuzzers, beside the soak: their own scratch server (bad input must never reach the checked store
            // as anything but writes), with a witness client proving it keeps serving.
            let fuzzing: Task<FuzzReport, any Error>? =
                options.fuzz
                ? Task { try await FuzzCampaigns.run(seed: options.seed, duration: .seconds(options.duration)) } : nil
            defer { fuzzing?.cancel() }

            // The oracle reads the log ahead of the reports, so that checking a report rarely waits for a read.
            group.addTask {
                while !Task.isCancelled, ContinuousClock.now < deadline + .seconds(300) {
                    await verifier.catchUp()
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            // The raw sqlite3 writer, now and then.
            group.addTask {
                var random = SeededRandom(seed: options.seed, stream: 9)
                while ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(random.int(in: 100...500)))
                    await supervisor.rawWrite(&random)
                }
            }
            // The fault schedule.
            let enabled = Fault.allCases.filter(options.faults.contains)
            if !enabled.isEmpty {
                var random = SeededRandom(seed: options.seed, stream: 7)
                var plan = enabled
                for i in plan.indices.reversed() { plan.swapAt(i, random.int(in: 0...i)) }
                // The gap from the end of one fault to the start of the next: its mean is the rate's interval.
                let (low, high): (Double, Double)
                if let rate = options.faultsPerMinute {
                    (low, high) = (30 / rate, 90 / rate)
                } else {
                    let gap = max(2.0, min(10.0, Double(options.duration) / Double(2 * enabled.count + 1)))
                    (low, high) = (gap / 2, gap)
                }
                let weights = enabled.map(\.weight)
                try await Task.sleep(for: .seconds(random.double(in: low...high)))
                while ContinuousClock.now + .seconds(low) < deadline {
                    let fault: Fault
                    if !plan.isEmpty {
                        fault = plan.removeFirst()
                    } else if options.faultsPerMinute != nil {
                        var pick = random.int(in: 0...(weights.reduce(0, +) - 1))
                        var index = 0
                        while pick >= weights[index] {
                            pick -= weights[index]
                            index += 1
                        }
                        fault = enabled[index]
                    } else {
                        fault = random.element(of: enabled)
                    }
                    let line = try await supervisor.inject(fault, &random)
                    if options.faultsPerMinute == nil || options.verbose || fault != .clientKill { log(line) }
                    try await Task.sleep(for: .seconds(random.double(in: low...high)))
                }
            }
            try await Task.sleep(until: deadline)
            await supervisor.resumeAll()

            // Every writer finishes its transaction in flight; none may stay pending.
            log(
                "stopping the writers (\(LineCounter.shared.value - (await verifier.linesHandled)) reports not yet checked)"
            )
            await supervisor.stopWriters()
            do {
                // Seen as the lines arrive: the verifier may be far behind, and a stuck transaction is reported by
                // the writer itself (after `stuckAfter`) before its `done`.
                try await waitUntil("the writers finish", timeout: .seconds(90)) {
                    FinishedWriters.shared.value.count == options.writers
                }
            } catch {
                let missing = Set(0..<options.writers).subtracting(FinishedWriters.shared.value).sorted()
                await verifier.violation(
                    "writers \(missing) did not finish within 90 s of SIGTERM: a transaction stuck pending?")
            }

            // One last commit every client must reach: resume works after every fault.
            // Under --auth a reader advances only on commits it can see: the last one has a row in a category each
            // principal shares (0, 1 and 2), and no owner.
            await supervisor.rawStatement(
                options.auth
                    ? "INSERT INTO Item (id, title, category, score) VALUES ('final-\(options.seed)-0', 'final', 0, 0), "
                        + "('final-\(options.seed)-1', 'final', 1, 0), ('final-\(options.seed)-2', 'final', 2, 0);"
                    : "INSERT INTO Item (id, title, category, score) VALUES ('final-\(options.seed)', 'final', 0, 0);")
            let before = await verifier.storeSeq
            try? await waitUntil("the final write is logged", timeout: .seconds(20)) {
                await verifier.catchUp()
                return await verifier.storeSeq > before
            }
            let finalSeq = await verifier.storeSeq
            log(
                "every client must reach seq \(finalSeq) (\(LineCounter.shared.value - (await verifier.linesHandled)) reports not yet checked)"
            )
            let origins = await supervisor.clientOrigins
            do {
                // The clients' reports reach the verifier behind its backlog: the 60 s count from when it caught up.
                try await drainBacklog(of: verifier)
                try await waitUntil("every client reaches the final seq", timeout: .seconds(60)) {
                    let seqs = await verifier.clientSeq
                    return origins.allSatisfy { index, origin in
                        seqs[index].map { $0.incarnation == origin.incarnation && $0.seq >= finalSeq } ?? false
                    }
                }
            } catch {
                let seqs = await verifier.clientSeq
                for (index, origin) in origins.sorted(by: { $0.key < $1.key }) {
                    let reached = seqs[index].flatMap { $0.incarnation == origin.incarnation ? $0.seq : nil }
                    if (reached ?? 0) < finalSeq {
                        await verifier.violation(
                            "\(origin) did not reach the final seq \(finalSeq) within 60 s (last shown: \(reached.map(String.init) ?? "nothing"))"
                        )
                    }
                }
            }

            var fuzzInputs: [String: Int] = [:]
            if let fuzzing {
                do {
                    let report = try await fuzzing.value
                    for campaign in report.campaigns {
                        fuzzInputs[campaign.campaign.rawValue, default: 0] += campaign.inputs
                    }
                    for failure in report.failures { await verifier.violation("fuzz: \(failure)") }
                } catch {
                    await verifier.violation("the fuzz campaigns could not run: \(error)")
                }
            }

            await supervisor.stopAll()
            try await Task.sleep(for: .milliseconds(300))
            continuation.finish()
            try await group.next()  // the consumer, which ends with the events
            group.cancelAll()
            return SoakSummary(
                options: options,
                directory: directory,
                transactions: await verifier.transactions,
                revertReasons: await verifier.revertReasons,
                rawWrites: await supervisor.rawWrites,
                changes: await verifier.changesReplayed,
                clientIncarnations: await supervisor.clientIncarnations,
                clientKills: await supervisor.clientKills,
                serverKills: await supervisor.serverKills,
                clientStops: await supervisor.clientStops,
                diskFulls: await supervisor.diskFulls,
                cutRounds: await supervisor.cutRounds,
                connectionsCut: await supervisor.proxy?.cuts ?? 0,
                reconnects: max(0, await verifier.connects - (await supervisor.clientIncarnations)),
                resnapshots: await verifier.resnapshots,
                statesChecked: await verifier.statesChecked,
                mapStatesChecked: await verifier.mapStatesChecked,
                fuzzInputs: fuzzInputs,
                violations: await verifier.violations,
                annotatedViolations: await verifier.annotatedViolations,
                resyncViolations: await verifier.resyncViolations,
                elapsed: ContinuousClock.now - started
            )
        }
        if options.auth, let audit = try? String(contentsOfFile: directory + "/audit.jsonl", encoding: .utf8) {
            for line in audit.split(separator: "\n") {
                if line.contains("\"event\":\"refreshed\"") { summary.refreshes += 1 }
                if line.contains("\"event\":\"stream_expired\"") { summary.expiries += 1 }
            }
        }
        if !summary.violations.isEmpty {
            try? summary.annotatedViolations.joined(separator: "\n").write(
                toFile: directory + "/violations.txt", atomically: true, encoding: .utf8)
        }
        if summary.violations.isEmpty, !options.keep {
            try? FileManager.default.removeItem(atPath: directory)
        }
        return summary
    } catch {
        await supervisor.stopAll()
        continuation.finish()
        throw error
    }
}

/// Polls `condition` every 50 ms until it holds.
///
/// - Throws: ``CheckError`` naming `what` after `timeout`.
/// Waits until the verifier has handled every report printed so far, for as long as it keeps making progress.
///
/// - Throws: ``CheckError`` when it handled nothing for 60 s.
func drainBacklog(of verifier: Verifier) async throws {
    var handled = await verifier.linesHandled
    var progressed = ContinuousClock.now
    while handled < LineCounter.shared.value {
        try await Task.sleep(for: .milliseconds(100))
        let now = await verifier.linesHandled
        if now > handled {
            handled = now
            progressed = .now
        } else if progressed.duration(to: .now) > .seconds(60) {
            throw CheckError("the verifier handled no report for 60 s (\(LineCounter.shared.value - handled) waiting)")
        }
    }
}

func waitUntil(_ what: String, timeout: Duration, _ condition: @Sendable () async -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while await !condition() {
        if ContinuousClock.now > deadline { throw CheckError("timed out waiting until \(what) (\(timeout))") }
        try await Task.sleep(for: .milliseconds(50))
    }
}
