// MARK: - Supervisor: starts, kills, stops and restarts the children

internal import Foundation
internal import MeridianCore
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// What a child said or did.
enum ChildEvent: Sendable {
    case line(String)
    case exit(Int32)
}

/// Owns every child process and the proxy. Children it kills or stops on purpose are remembered, so that their
/// exits are not reported as crashes.
actor Supervisor {
    let options: SoakOptions
    let directory: String
    let databasePath: String
    let schemaPath: String
    private let executable: String
    private let serverExecutable: String
    private let events: AsyncStream<(Origin, ChildEvent)>.Continuation
    private(set) var proxy: TCPProxy?

    private var server: (child: ChildProcess, origin: Origin)?
    private var clients: [Int: (child: ChildProcess, origin: Origin)] = [:]
    private var writers: [Int: (child: ChildProcess, origin: Origin)] = [:]
    private var sqlite: ChildProcess?
    private var expectedExits: Set<Origin> = []
    private var stopping = false

    private(set) var clientKills = 0
    private(set) var serverKills = 0
    private(set) var clientStops = 0
    private(set) var cutRounds = 0
    private(set) var diskFulls = 0
    private(set) var clientIncarnations = 0
    private(set) var rawWrites = 0
    private(set) var rawWriteErrors = 0

    init(
        options: SoakOptions, directory: String, executable: String, serverExecutable: String,
        events: AsyncStream<(Origin, ChildEvent)>.Continuation
    ) {
        self.options = options
        self.directory = directory
        self.databasePath = directory + "/store.sqlite"
        self.schemaPath = directory + "/schema.yaml"
        self.executable = executable
        self.serverExecutable = serverExecutable
        self.events = events
    }

    /// Whether an exit was caused by the checker (a kill, a stop at the end).
    func isExpectedExit(_ origin: Origin) -> Bool {
        self.stopping || self.expectedExits.contains(origin)
    }

    // MARK: - Starting

    /// Starts (or restarts) the server on the store file and points the proxy at it.
    func startServer() async throws {
        let incarnation = (self.server?.origin.incarnation ?? 0) + 1
        let origin = Origin(role: .server, index: 0, incarnation: incarnation)
        let address = LineSlot()
        let events = self.events
        let logPath = self.directory + "/server.log"
        // Through sh, which ignores SIGXFSZ and execs the server (same pid): under a file size limit, writes then
        // fail with EFBIG instead of killing the server, as on a full disk.
        let child = try ChildProcess(
            name: "meridian-server",
            executable: "/bin/sh",
            arguments: [
                "-c", "trap '' XFSZ; exec \"$0\" \"$@\"", self.serverExecutable,
                "--db", self.databasePath, "--schema", self.schemaPath, "--listen", "127.0.0.1:0",
                "--log-retention", "none", "--client-queue-limit", String(self.options.queueLimit),
                "--heartbeat-ms", "1000", "--log-level", "warning",
            ]
                + (self.options.auth
                    ? [
                        "--auth", "jwt", "--jwt-key", self.keyPath, "--jwt-leeway", "1s", "--audit-log",
                        self.directory + "/audit.jsonl",
                    ] : []),
            stderrPath: logPath,
            onLine: { line in
                if line.hasPrefix("listening on ") { address.set(line) }
            },
            onExit: { status in events.yield((origin, .exit(status))) }
        )
        self.server = (child, origin)
        let deadline = ContinuousClock.now + .seconds(60)
        while address.value == nil {
            if !child.isRunning {
                throw CheckError(
                    "meridian-server exited before listening; its log (\(logPath)) ends with:\n\(tail(of: logPath))")
            }
            if ContinuousClock.now > deadline {
                throw CheckError("meridian-server did not print 'listening on HOST:PORT' within 60 s (\(logPath))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        guard let line = address.value, let colon = line.lastIndex(of: ":"),
            let port = Int(line[line.index(after: colon)...])
        else {
            throw CheckError("meridian-server printed an unreadable address: \(address.value ?? "")")
        }
        if let proxy {
            proxy.setUpstream(port: port)
        } else {
            self.proxy = try TCPProxy(upstreamPort: port)
        }
    }

    private var serverAddress: String { "127.0.0.1:\(self.proxy?.port ?? 0)" }

    /// The HS256 secret of `--auth` runs.
    var keyPath: String { self.directory + "/auth.secret" }

    /// The arguments that give a role its identity under `--auth`.
    private func identityArguments(client index: Int?) -> [String] {
        guard self.options.auth else { return [] }
        var arguments = ["--auth-key", self.keyPath, "--token-ttl", String(self.options.tokenLifetimeSeconds)]
        if let index { arguments += ["--principal-of-client", String(index)] }
        return arguments
    }

    /// Starts (or restarts, with the same cache file) client `index`.
    func startClient(_ index: Int) throws {
        let incarnation = (self.clients[index]?.origin.incarnation ?? 0) + 1
        let origin = Origin(role: .client, index: index, incarnation: incarnation)
        var arguments = [
            "client", "--server", self.serverAddress, "--cache", self.directory + "/client-\(index).sqlite",
            "--seed", String(self.options.seed &+ UInt64(index) &* 1000 &+ UInt64(incarnation)),
        ]
        if self.options.selfTestCorrupt, index == 0, incarnation == 1 { arguments.append("--self-test-corrupt") }
        arguments += self.identityArguments(client: index)
        self.clients[index] = (try self.start(origin, arguments: arguments), origin)
        self.clientIncarnations += 1
    }

    /// Starts writer `index`.
    func startWriter(_ index: Int) throws {
        let origin = Origin(role: .writer, index: index, incarnation: 1)
        let arguments =
            [
                "writer", "--server", self.serverAddress, "--index", String(index), "--seed", String(self.options.seed),
                "--pause-ms", String(self.options.writerPauseMs),
            ] + self.identityArguments(client: nil)
        self.writers[index] = (try self.start(origin, arguments: arguments), origin)
    }

    private func start(_ origin: Origin, arguments: [String]) throws -> ChildProcess {
        let events = self.events
        return try ChildProcess(
            name: "\(origin.role) \(origin.index)",
            executable: self.executable,
            arguments: arguments,
            stderrPath: self.directory + "/\(origin.role)-\(origin.index).log",
            onLine: { line in
                LineCounter.shared.increment()
                if origin.role == .writer, line == #"{"kind":"done"}"# { FinishedWriters.shared.insert(origin.index) }
                events.yield((origin, .line(line)))
            },
            onExit: { status in events.yield((origin, .exit(status))) }
        )
    }

    /// Starts the `sqlite3` shell on the store file, with a busy timeout, for the raw writes.
    func startSQLite() throws {
        let origin = Origin(role: .sqlite, index: 0, incarnation: 1)
        let events = self.events
        let child = try ChildProcess(
            name: "sqlite3",
            executable: "/usr/bin/sqlite3",
            arguments: ["-batch", self.databasePath],
            stderrPath: self.directory + "/sqlite3.log",
            withStdin: true,
            onLine: { _ in },
            onExit: { status in events.yield((origin, .exit(status))) }
        )
        try child.write(".timeout 5000\n")
        self.sqlite = child
    }

    /// One plain single-row statement from the `sqlite3` shell (each is its own commit).
    func rawWrite(_ random: inout SeededRandom) {
        let id = Workload.randomID(&random)
        let statement: String
        switch random.int(in: 0...3) {
        case 0:
            let values = Workload.randomValues(&random)
            statement =
                "INSERT OR IGNORE INTO Item (id, title, category, score, latitude, longitude) VALUES ('\(id)', "
                + "\(sql(values["title"]!)), \(sql(values["category"]!)), \(sql(values["score"]!)), "
                + "\(sql(values["latitude"]!)), \(sql(values["longitude"]!)));"
        case 1:
            statement =
                "UPDATE Item SET score = \(random.int(in: 0...99)), category = \(random.int(in: 0...5)) WHERE id = '\(id)';"
        case 2:
            statement = "DELETE FROM Item WHERE id = '\(id)';"
        default:
            let (latitude, longitude) = Workload.randomPosition(&random)
            statement = "UPDATE Item SET latitude = \(sql(latitude)), longitude = \(sql(longitude)) WHERE id = '\(id)';"
        }
        self.rawStatement(statement)
    }

    /// Sends one statement to the `sqlite3` shell.
    func rawStatement(_ statement: String) {
        do {
            try self.sqlite?.write(statement + "\n")
            self.rawWrites += 1
        } catch {
            self.rawWriteErrors += 1
        }
    }

    // MARK: - Faults

    /// Injects one fault; returns a line describing it.
    func inject(_ fault: Fault, _ random: inout SeededRandom) async throws -> String {
        switch fault {
        case .clientKill:
            let index = random.int(in: 0...(self.options.clients - 1))
            guard let (child, origin) = self.clients[index] else { return "no client \(index) to kill" }
            self.expectedExits.insert(origin)
            child.signal(SIGKILL)
            _ = await child.waitForExit(timeout: .seconds(10))
            self.clientKills += 1
            try await Task.sleep(for: .milliseconds(random.int(in: 200...1000)))
            try self.startClient(index)
            return "kill -9 \(origin), restarted from its cache file"
        case .serverKill:
            guard let (child, origin) = self.server else { return "no server to kill" }
            self.expectedExits.insert(origin)
            child.signal(SIGKILL)
            _ = await child.waitForExit(timeout: .seconds(10))
            self.serverKills += 1
            try await Task.sleep(for: .milliseconds(random.int(in: 300...1500)))
            try await self.startServer()
            return "kill -9 meridian-server, restarted on the same file"
        case .clientStop:
            let index = random.int(in: 0...(self.options.clients - 1))
            guard let (child, origin) = self.clients[index] else { return "no client \(index) to stop" }
            let pause = random.int(in: 2500...5000)
            child.signal(SIGSTOP)
            self.clientStops += 1
            try await Task.sleep(for: .milliseconds(pause))
            child.signal(SIGCONT)
            return "SIGSTOP \(origin) for \(pause) ms past the server's queue bound, then SIGCONT"
        case .connectionCut:
            let count = self.proxy?.cutAll() ?? 0
            self.cutRounds += 1
            return "cut \(count) connections at the proxy"
        case .diskFull:
            guard let (child, _) = self.server else { return "no server to starve of disk" }
            let hold = random.int(in: 1500...3500)
            try Self.prlimit(pid: child.pid, fileSize: "1024:unlimited")
            self.diskFulls += 1
            try await Task.sleep(for: .milliseconds(hold))
            try Self.prlimit(pid: child.pid, fileSize: "unlimited:unlimited")
            return "a 1 KiB file size limit on meridian-server for \(hold) ms (its writes fail with EFBIG), then lifted"
        }
    }

    /// Sets a running process's file size limit (`prlimit --pid PID --fsize=SOFT:HARD`).
    private static func prlimit(pid: Int32, fileSize: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
        process.arguments = ["--pid", String(pid), "--fsize=\(fileSize)"]
        do {
            try process.run()
        } catch {
            throw CheckError("cannot run prlimit (util-linux) for the disk-full fault: \(error)")
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CheckError("prlimit --pid \(pid) --fsize=\(fileSize) failed (status \(process.terminationStatus))")
        }
    }

    /// Resumes every client (none may stay stopped when the run ends).
    func resumeAll() {
        for (child, _) in self.clients.values { child.signal(SIGCONT) }
    }

    // MARK: - Stopping

    /// Asks every writer to finish its transaction in flight (SIGTERM); their exits are expected.
    func stopWriters() {
        for (child, origin) in self.writers.values {
            self.expectedExits.insert(origin)
            child.signal(SIGTERM)
        }
    }

    /// Writers whose process is still running.
    var runningWriters: [Int] { self.writers.filter { $0.value.child.isRunning }.map(\.key).sorted() }

    /// The current incarnation of each client.
    var clientOrigins: [Int: Origin] { self.clients.mapValues(\.origin) }

    /// Stops every child (SIGTERM, then SIGKILL) and the proxy. Safe to call more than once.
    func stopAll() async {
        self.stopping = true
        var children: [ChildProcess] = []
        children += self.clients.values.map(\.child)
        children += self.writers.values.map(\.child)
        if let sqlite { children.append(sqlite) }
        if let server { children.append(server.child) }
        await withTaskGroup(of: Void.self) { group in
            for child in children { group.addTask { await child.stop() } }
        }
        self.proxy?.stop()
    }
}

/// The number of report lines children have printed (the verifier's backlog is this minus what it handled).
final class LineCounter: Sendable {
    static let shared = LineCounter()
    private let count = Atomic<Int>(0)

    func increment() { self.count.add(1, ordering: .relaxed) }
    var value: Int { self.count.load(ordering: .relaxed) }
}

/// The writers that reported `done`, seen as their lines arrive rather than when the verifier reaches them (it may be
/// thousands of reports behind when the writers stop).
final class FinishedWriters: Sendable {
    static let shared = FinishedWriters()
    private let indexes = Mutex<Set<Int>>([])

    func insert(_ index: Int) { _ = self.indexes.withLock { $0.insert(index) } }
    var value: Set<Int> { self.indexes.withLock { $0 } }
}

/// The first line that matched, set from a reader thread.
final class LineSlot: Sendable {
    private let line = Mutex<String?>(nil)

    var value: String? { self.line.withLock { $0 } }

    func set(_ value: String) {
        self.line.withLock { if $0 == nil { $0 = value } }
    }
}

/// The last lines of a log file, for error messages.
func tail(of path: String, lines: Int = 15) -> String {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return "(no log)" }
    return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
}

/// A value as an SQL literal.
private func sql(_ value: Value) -> String {
    switch value {
    case .null: return "NULL"
    case .int(let i): return String(i)
    case .double(let d): return "\(d)"
    case .string(let s): return "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
    case .bool(let b): return b ? "1" : "0"
    default: return "NULL"
    }
}
