// The built meridian-server binary: its CLI contract, and a Python client generated from Protos/ talking to it.

import Foundation
import GRPCCore
import MeridianCore
import MeridianProcessIO
import MeridianProto
import MeridianStore
import MeridianTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A `meridian-server` child process, killed when the test ends.
final class ServerProcess: Sendable {
    static var binary: URL {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundle, bundle.deletingLastPathComponent()] {
            let url = candidate.appendingPathComponent("meridian-server")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return URL(fileURLWithPath: Fixtures.root + "/.build/debug/meridian-server")
    }

    let process: Process
    let stdout = Pipe()
    let stderr = Pipe()

    convenience init(_ arguments: [String]) throws {
        try self.init(executable: Self.binary, arguments)
    }

    /// Runs `executable` (a wrapper that execs `meridian-server`, such as `unshare`) with `arguments`.
    init(executable: URL, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = self.stdout
        process.standardError = self.stderr
        self.process = process
        try process.run()
    }

    deinit {
        if self.process.isRunning {
            kill(self.process.processIdentifier, SIGKILL)
            self.process.waitUntilExit()
        }
    }

    /// The first line the server prints on stdout (`nil` if it exits first).
    func firstLine() async -> String? {
        await readLine(self.stdout.fileHandleForReading)
    }

    /// Waits for the process to exit; returns its status and everything it wrote to stderr. A server still running
    /// after `limit` is killed and the wait recorded as an issue: a test whose server never stops (the signal that
    /// should stop it was never sent) fails instead of hanging the whole run (a time limit cannot end this wait).
    func wait(limit: Duration = .seconds(120)) async -> (status: Int32, stderr: String) {
        let handle = self.stderr.fileHandleForReading
        let process = self.process
        let killed = Mutex(false)
        let pid = process.processIdentifier
        let timer = DispatchWorkItem {
            guard process.isRunning else { return }
            killed.withLock { $0 = true }
            kill(pid, SIGKILL)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(limit.nanoseconds)), execute: timer)
        let result = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let text = String(decoding: handle.remainingData(), as: UTF8.self)
                process.waitUntilExit()
                continuation.resume(returning: (process.terminationStatus, text))
            }
        }
        timer.cancel()
        if killed.withLock({ $0 }) { Issue.record("meridian-server was still running after \(limit): killed") }
        return result
    }

    /// Runs `meridian-server` with `arguments` to completion.
    static func run(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let server = try ServerProcess(arguments)
        let out = server.stdout.fileHandleForReading
        let stdoutText = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: String(decoding: out.remainingData(), as: UTF8.self))
            }
        }
        let (status, stderr) = await server.wait()
        return (status, stdoutText, stderr)
    }
}

/// Reads one line from `handle` without blocking a cooperative thread.
func readLine(_ handle: FileHandle) async -> String? {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            var line = Data()
            while true {
                guard let byte = handle.nextByte() else {
                    return continuation.resume(returning: line.isEmpty ? nil : String(decoding: line, as: UTF8.self))
                }
                if byte == 0x0A { return continuation.resume(returning: String(decoding: line, as: UTF8.self)) }
                line.append(byte)
            }
        }
    }
}

/// Runs `python3 script arguments…` to its end; returns its exit status and standard output (standard error too, when
/// `errors` is set).
func runPython(_ script: String, _ arguments: [String], errors: Bool = false) async throws -> (Int32, String) {
    let python = Process()
    python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    python.arguments = ["python3", script] + arguments
    python.environment = ProcessInfo.processInfo.environment.merging(["PYTHONIOENCODING": "utf-8"]) { $1 }
    let output = Pipe()
    python.standardOutput = output
    if errors { python.standardError = output }
    try python.run()
    let text = await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            let data = output.fileHandleForReading.remainingData()
            python.waitUntilExit()
            continuation.resume(returning: String(decoding: data, as: UTF8.self))
        }
    }
    return (python.terminationStatus, text)
}

/// The port in a `listening on HOST:PORT` line.
func listeningPort(_ line: String?) -> Int? {
    guard let line, line.hasPrefix("listening on 127.0.0.1:") else { return nil }
    return Int(line.dropFirst("listening on 127.0.0.1:".count))
}

@Suite("meridian-server process", .timeLimit(.minutes(5)))
struct ProcessTests {
    static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "meridian-server-test-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("a corrupt store file is refused at start and by --check-integrity with exit 2; a sound one passes")
    func integrity() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-integrity-\(UUID())")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.sqlite"
        do {
            let store = try Store.open(path: path, schema: try Fixtures.demoSchema())
            try await store.apply((0..<3_000).map { .insert("Point", id: "p\($0)", Fixtures.point("title \($0)")) })
            try store.close()
        }
        let schema = Fixtures.demoSchemaPath
        let sound = try await ServerProcess.run(["--db", path, "--schema", schema, "--check-integrity"])
        #expect(sound.status == 0)
        #expect(sound.stdout == "ok: \(path) passed the full integrity check\n")

        // Garbage over a page in the middle of the file (a table's b-tree page: the file has dozens).
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: (size / 2 / 4_096) * 4_096)
        try handle.write(contentsOf: Data((0..<4_096).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }))
        try handle.close()

        let checked = try await ServerProcess.run(["--db", path, "--schema", schema, "--check-integrity"])
        #expect(checked.status == 2)
        #expect(checked.stderr.contains("meridian-server: the store file \(path) is corrupt (full check); restore it"))
        let started = try await ServerProcess.run(["--db", path, "--schema", schema, "--listen", "127.0.0.1:0"])
        #expect(started.status == 2)
        #expect(started.stderr.contains("is corrupt (quick check)"))
        #expect(started.stdout.isEmpty, "it must not listen")

        let missing = try await ServerProcess.run([
            "--db", directory + "/none.sqlite", "--schema", schema, "--check-integrity",
        ])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("there is no store file at"))
    }

    @Test("backup copies the store consistent at one commit while a writer goes on; the copy equals it at its seq")
    func backup() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-backup-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.sqlite"
        let copyPath = directory + "/copy.sqlite"
        let store = try Store.open(path: path, schema: try Fixtures.demoSchema())
        // One insert a commit, each one change: the store at seq N holds exactly w0 ..< wN.
        let writer = Task {
            var i = 0
            while !Task.isCancelled {
                try await store.apply([.insert("Point", id: "w\(i)", Fixtures.point("w\(i)"))])
                i += 1
            }
        }
        // Some commits before the copy (on a loaded machine the writer's first may take longer than any fixed sleep).
        let started = ContinuousClock.now
        while try await store.latestSeq() < 5, ContinuousClock.now - started < .seconds(30) {
            try await Task.sleep(for: .milliseconds(20))
        }
        let result = try await ServerProcess.run(["backup", "--db", path, "--to", copyPath])
        try await Task.sleep(for: .milliseconds(100))
        writer.cancel()
        _ = try? await writer.value
        #expect(result.status == 0, "\(result.stderr)")
        let prefix = "backup of \(path) at seq "
        #expect(result.stdout.hasPrefix(prefix) && result.stdout.hasSuffix(": \(copyPath)\n"))
        let seq = try #require(Int64(result.stdout.dropFirst(prefix.count).prefix { $0.isNumber }))
        #expect(seq > 0)
        let copy = try Store.open(path: copyPath, schema: try Fixtures.demoSchema())
        let copied = try await copy.snapshot(entity: "Point")
        #expect(copied.seq == seq)
        #expect(Set(copied.rows.map(\.id)) == Set((0..<seq).map { "w\($0)" }))
        #expect(try await store.latestSeq() > seq, "the writer went on during and after the copy")
        try copy.close()
        try store.close()

        let again = try await ServerProcess.run(["backup", "--db", path, "--to", copyPath])
        #expect(again.status == 2)
        #expect(
            again.stderr == "meridian-server backup: \(copyPath) exists already; a backup never overwrites a file\n")
        let usage = try await ServerProcess.run(["backup", "--db", path])
        #expect(usage.status == 2)
        #expect(usage.stderr.contains("--to"))
    }

    @Test("10,000 connections that never send a byte are closed after --hello-timeout; the server serves meanwhile")
    func silentConnections() async throws {
        let server = try ServerProcess([
            "--in-memory", "--schema", Fixtures.demoSchemaPath, "--listen", "127.0.0.1:0", "--hello-timeout", "2s",
            "--max-connections", "10100", "--log-level", "warning",
        ])
        let port = try #require(listeningPort(await server.firstLine()))
        // The sockets live in a Python child: 10,000 descriptors in the test process itself made Foundation's
        // Process.run crash in a concurrent test (a bad pointer in its memmove).
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = directory + "/silent.py"
        try Self.silentSocketsScript.write(toFile: script, atomically: true, encoding: .utf8)
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", script, String(port), "10000", "60"]
        let output = Pipe()
        python.standardOutput = output
        try python.run()
        defer { if python.isRunning { python.terminate() } }
        #expect(await readLine(output.fileHandleForReading) == "connected 10000")
        try await withHTTP2Client(port: port) { client in
            let schema = try await Meridian_V1_Meridian.Client(wrapping: client).getSchema(
                Meridian_V1_GetSchemaRequest())
            #expect(!schema.schema.entities.isEmpty, "served beside 10,000 silent connections")
        }
        #expect(await readLine(output.fileHandleForReading) == "still open 0", "every silent connection was closed")
        try await withHTTP2Client(port: port) { client in
            _ = try await Meridian_V1_Meridian.Client(wrapping: client).getSchema(Meridian_V1_GetSchemaRequest())
        }
    }

    /// Opens N connections to 127.0.0.1:PORT that never send a byte, says `connected N`, then waits up to SECONDS for
    /// the server to close them (reading and dropping what it sends first) and says `still open K`.
    static let silentSocketsScript = """
        import selectors, socket, sys, time
        port, count, wait = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
        sockets = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
        print(f"connected {len(sockets)}", flush=True)
        selector = selectors.DefaultSelector()
        for s in sockets:
            s.setblocking(False)
            selector.register(s, selectors.EVENT_READ)
        still_open = len(sockets)
        deadline = time.monotonic() + wait
        while still_open and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.5):
                try:
                    data = key.fileobj.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    selector.unregister(key.fileobj)
                    key.fileobj.close()
                    still_open -= 1
        print(f"still open {still_open}", flush=True)
        """

    @Test("--help exits 0 and documents every flag")
    func help() async throws {
        let (status, out, _) = try await ServerProcess.run(["--help"])
        #expect(status == 0)
        for flag in [
            "--db", "--in-memory", "--schema", "--listen", "--log-level", "--log-retention", "--max-subscriptions",
            "--max-request-bytes", "--client-queue-limit", "--snapshot-chunk-bytes", "--heartbeat-ms",
            "--commit-poll-ms", "--durability", "--hello-timeout", "--max-operations",
            "--max-id-bytes", "--max-predicate-bytes", "--max-row-bytes", "--client-queue-bytes", "--max-connections",
            "--max-streams-per-connection", "--idle-timeout", "--max-resume-changes", "--query-timeout",
            "--max-in-values", "--integrity", "--check-integrity", "--keepalive-interval", "--auth", "--jwt-key",
            "--jwt-issuer", "--jwt-audience", "--jwt-leeway", "--jwt-max-lifetime", "--api-keys",
            "--allow-unauthenticated", "--audit-log", "--tls-cert", "--tls-key", "--tls-client-ca", "--tls-client-auth",
            "--tls-reload-interval", "--max-streams-per-principal", "--apply-rate-per-principal",
            "--max-subscriptions-per-principal", "--flush-delay-us", "--shutdown-timeout",
        ] {
            #expect(out.contains(flag), "--help mentions \(flag)")
        }
    }

    @Test(
        "bad arguments exit 2 with a clear message",
        arguments: [
            (["--in-memory", "--schema", "s.yaml", "--listen", "nohost"], "--listen must be HOST:PORT"),
            (["--in-memory", "--schema", "s.yaml", "--listen", "127.0.0.1:70000"], "--listen must be HOST:PORT"),
            (["--schema", "s.yaml"], "give exactly one of --db PATH and --in-memory"),
            (["--in-memory", "--schema", "s.yaml", "--log-retention", "7w"], "--log-retention must be"),
            (["--in-memory"], "Missing expected argument '--schema <path>'"),
            (["--in-memory", "--schema", "s.yaml", "--durability", "fast"], "--durability must be full or normal"),
            (["--in-memory", "--schema", "s.yaml", "--hello-timeout", "0s"], "--hello-timeout must be a positive"),
            (["--in-memory", "--schema", "s.yaml", "--max-operations", "0"], "--max-operations must be positive"),
            (["--in-memory", "--schema", "s.yaml", "--idle-timeout", "soon"], "--idle-timeout must be a positive"),
            (
                ["--in-memory", "--schema", "s.yaml", "--keepalive-interval", "0"],
                "--keepalive-interval must be a positive"
            ),
            (["--in-memory", "--schema", "s.yaml", "--integrity", "some"], "--integrity must be quick, full or off"),
            (["--in-memory", "--schema", "s.yaml", "--max-row-bytes", "0"], "--max-row-bytes must be positive"),
            (["--in-memory", "--schema", "s.yaml", "--max-connections", "0"], "--max-connections must be positive"),
            (["--in-memory", "--schema", "s.yaml", "--flush-delay-us=-5"], "--flush-delay-us must be positive"),
        ])
    func badArguments(arguments: [String], message: String) async throws {
        let (status, _, stderr) = try await ServerProcess.run(arguments)
        #expect(status == 2)
        #expect(stderr.contains(message), "stderr: \(stderr)")
    }

    @Test("a store that needs a destructive migration: exit 2 with the store's message")
    func destructiveMigration() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let db = directory + "/store.sqlite"
        try Store.open(path: db, schema: try Fixtures.demoSchema()).close()
        let changed = try String(contentsOfFile: Fixtures.demoSchemaPath, encoding: .utf8)
            .replacingOccurrences(of: "      address: { type: string, default: \"\" }\n", with: "")
        let schemaPath = directory + "/changed.yaml"
        try changed.write(toFile: schemaPath, atomically: true, encoding: .utf8)
        var expected = ""
        do {
            _ = try Store.open(path: db, schema: try Schema.load(contentsOf: schemaPath))
            Issue.record("the store should refuse the migration")
        } catch let error as StoreError {
            expected = error.message
        }
        #expect(!expected.isEmpty)
        let (status, out, stderr) = try await ServerProcess.run([
            "--db", db, "--schema", schemaPath, "--listen", "127.0.0.1:0",
        ])
        #expect(status == 2)
        #expect(out.isEmpty)
        #expect(stderr.contains(expected), "stderr: \(stderr)")
    }

    @Test(
        "with MERIDIAN_EXIT_WITH_PARENT a server whose starter ends stops by itself; without it, it runs on",
        .timeLimit(.minutes(2)), arguments: [true, false])
    func stopsWhenOrphaned(exitWithParent: Bool) async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A shell starts the server, waits until it listens (so that its parent is the shell when it looks), prints
        // its pid and ends: the server is left without the process that started it, as when a test process crashes.
        let script = """
            "$0" --db "$1/store.sqlite" --schema "$2" --listen 127.0.0.1:0 --log-level warning > "$1/out" 2>&1 &
            pid=$!
            while ! grep -q listening "$1/out"; do sleep 0.05; done
            echo $pid
            """
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", script, ServerProcess.binary.path, directory, Fixtures.demoSchemaPath]
        var environment = ProcessInfo.processInfo.environment
        environment["MERIDIAN_EXIT_WITH_PARENT"] = exitWithParent ? "1" : nil
        shell.environment = environment
        let output = Pipe()
        shell.standardOutput = output
        try shell.run()
        // Read until the shell's end closes the pipe (`waitUntilExit()` was seen to hang here: Foundation's
        // monitor of the shell never reported its exit).
        let printed = String(decoding: output.fileHandleForReading.remainingData(), as: UTF8.self)
        let pid = try #require(
            pid_t(printed.trimmingCharacters(in: .whitespacesAndNewlines)), "the shell said '\(printed)'")
        /// Whether the server still runs (an exited one that nobody has reaped yet is a zombie: state `Z`).
        func running() -> Bool {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return false }
            return !stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
        }
        defer { if running() { kill(pid, SIGKILL) } }
        let deadline = ContinuousClock.now + .seconds(exitWithParent ? 30 : 3)
        while running(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(running() == !exitWithParent)
        if exitWithParent {
            let log = try String(contentsOfFile: directory + "/out", encoding: .utf8)
            #expect(log.contains("the process that started it ended (MERIDIAN_EXIT_WITH_PARENT); stopping"), "\(log)")
        }
    }

    @Test("listening on HOST:PORT, Goodbye to clients on SIGTERM, exit 0")
    func sigterm() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try ServerProcess([
            "--db", directory + "/store.sqlite", "--schema", Fixtures.demoSchemaPath, "--listen", "127.0.0.1:0",
            "--log-level", "warning",
        ])
        let line = await server.firstLine()
        let port = try #require(listeningPort(line), "first line: \(line ?? "nil")")
        try await withHTTP2Client(port: port) { client in
            try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: client)) { stream in
                _ = try await Mirror.subscribed(stream)  // subscribed, so that the stream is live when the server stops
                server.process.terminate()
                var sawGoodbye = false
                while let response = try? await stream.next() {
                    if case .goodbye(let goodbye) = response.kind {
                        sawGoodbye = true
                        #expect(goodbye.reason.contains("shutting down"))
                    }
                }
                #expect(sawGoodbye)
            }
        }
        let (status, _) = await server.wait()
        #expect(status == 0)
    }

    @Test("--shutdown-timeout cancels a Query whose client stopped reading, and the server exits 0")
    func shutdownTimeout() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = directory + "/store.sqlite"
        do {
            // About 2 MB of rows: far more than the client's 64 KiB window and a few dozen unread chunks hold.
            let store = try Store.open(path: database, schema: try Fixtures.demoSchema())
            let title = String(repeating: "x", count: 400)
            try await store.apply((0..<5_000).map { .insert("Point", id: "p\($0)", Fixtures.point(title)) })
            try store.close()
        }
        // Without the timeout the server would wait for the Query for as long as its read may run: an hour.
        let server = try ServerProcess([
            "--db", database, "--schema", Fixtures.demoSchemaPath, "--listen", "127.0.0.1:0", "--log-level", "warning",
            "--query-timeout", "1h", "--shutdown-timeout", "2s",
        ])
        let line = await server.firstLine()
        let port = try #require(listeningPort(line), "first line: \(line ?? "nil")")
        try await withHTTP2Client(port: port, windowSize: 65_535) { client in
            let meridian = Meridian_V1_Meridian.Client(wrapping: client)
            var request = Meridian_V1_QueryRequest()
            request.fetch = Fixtures.fetch("Point", "")
            // Small chunks: the client's transport stops taking them once a few dozen wait unread.
            request.maxChunkBytes = 4_096
            _ = try? await meridian.query(request) { response in
                var chunks = response.messages.makeAsyncIterator()
                _ = try await chunks.next()  // the first chunk; then nothing more is read
                let stopping = ContinuousClock.now
                server.process.terminate()
                let exit = await withTaskGroup(of: (status: Int32, stderr: String)?.self) { group in
                    group.addTask { await server.wait() }
                    group.addTask {
                        try? await Task.sleep(for: .seconds(30))
                        return nil
                    }
                    let first = await group.next()!
                    if first == nil { kill(server.process.processIdentifier, SIGKILL) }
                    group.cancelAll()
                    return first
                }
                let (status, stderr) = try #require(exit, "the server was still running 30 s after SIGTERM")
                #expect(status == 0, "stderr: \(stderr)")
                #expect(ContinuousClock.now - stopping < .seconds(20))
            }
        }
    }

    @Test(
        "a Python client from Protos/ stays consistent applying each Batch: two subscriptions, a reconnection, a re-snapshot"
    )
    func pythonClient() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let generate = Process()
        generate.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        generate.arguments = [
            "python3", "-m", "grpc_tools.protoc", "-I", Fixtures.root + "/Protos", "--python_out=\(directory)",
            "--grpc_python_out=\(directory)", Fixtures.root + "/Protos/meridian/v1/meridian.proto",
        ]
        try generate.run()
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                generate.waitUntilExit()
                continuation.resume()
            }
        }
        try #require(
            generate.terminationStatus == 0, "python3 -m grpc_tools.protoc failed (is grpcio-tools installed?)")
        let script = directory + "/client.py"
        try Self.pythonScript.write(toFile: script, atomically: true, encoding: .utf8)

        let database = directory + "/store.sqlite"
        let server = try ServerProcess([
            "--db", database, "--schema", Fixtures.demoSchemaPath, "--listen", "127.0.0.1:0", "--log-level", "warning",
        ])
        let line = await server.firstLine()
        let port = try #require(listeningPort(line), "first line: \(line ?? "nil")")
        let (pythonStatus, text) = try await runPython(script, [directory, String(port), database])
        #expect(pythonStatus == 0, "output: \(text)")
        let lines = text.split(separator: "\n").map(String.init)
        #expect(
            lines == [
                "refused StatusCode.FAILED_PRECONDITION CODE_UNSUPPORTED_PROTOCOL",
                "welcome \(try Fixtures.demoSchema().fingerprint) version 1",
                "visible near,top",
                "live consistent",
                "resumed True",
                "caught up in one batch: near delta, top snapshot",
                "sql equal near,top",
            ], "output: \(text)")
        server.process.terminate()
        let (status, _) = await server.wait()
        #expect(status == 0)
    }

    /// A client written from docs/protocol.md alone, applying each Batch as it arrives (the protocol's one rule) and
    /// checking after every Batch that each subscription it shows equals the query over the store's state at that
    /// Batch's seq (the script makes every write, so it knows that state), and at the end equals SQL on the file.
    static let pythonScript = #"""
        import queue, sqlite3, sys
        sys.path.insert(0, sys.argv[1])
        import grpc
        from meridian.v1 import meridian_pb2 as m, meridian_pb2_grpc as rpc

        channel = grpc.insecure_channel("127.0.0.1:" + sys.argv[2])
        stub = rpc.MeridianStub(channel)

        def fail(message):
            print("violation", message)
            sys.exit(1)

        # An old client (no protocol_version) is refused, not served a stream it would misread.
        try:
            for _ in stub.Sync(iter([m.SyncRequest(hello=m.Hello(client_name="old"))])):
                fail("an old client was served")
        except grpc.RpcError as e:
            raw = dict(e.trailing_metadata() or ()).get("meridian-error-bin")
            detail = m.ErrorDetail.FromString(raw)
            print("refused", e.code(), m.ErrorDetail.Code.Name(detail.code))

        # The store's states, by seq: the script makes every write, so it knows them.
        states = {0: {}}
        latest = 0

        def apply(*operations):
            global latest
            response = stub.Apply(m.ApplyRequest(operations=list(operations)))
            if response.HasField("error"):
                fail("apply rejected: " + response.error.message)
            state = dict(states[latest])
            for operation, written in zip(operations, response.result.rows):
                if operation.kind == m.Operation.KIND_DELETE:
                    del state[written.id]
                else:
                    row = dict(state.get(written.id, {"category": 0}))
                    row.update({k: v.string_value if v.HasField("string_value") else v.int_value
                                for k, v in operation.values.items()})
                    state[written.id] = row
            latest = response.result.seq
            states[latest] = state

        def point(id, title, category):
            return m.Operation(kind=m.Operation.KIND_UPSERT, entity="Point", id=id,
                               values={"title": m.Value(string_value=title), "category": m.Value(int_value=category)})

        def delete(id):
            return m.Operation(kind=m.Operation.KIND_DELETE, entity="Point", id=id)

        # Two subscriptions: every Point of category 4, and the first three by title (a limited window).
        fetches = {
            "near": m.FetchRequest(entity="Point", predicate="category == 4"),
            "top": m.FetchRequest(entity="Point", sort=[m.SortKey(attribute="title")], limit=3),
        }

        def expected(name, state):
            rows = sorted(state.items(), key=lambda kv: (kv[1]["title"].encode(), kv[0].encode()))
            if name == "near":
                return {id: row for id, row in rows if row["category"] == 4}
            return dict(rows[:3])

        # What the client shows, what it stages, and the seq it is at.
        shown, staged, epochs, seq = {}, {}, {}, 0

        def receive(response):
            """Applies one message by the rule: a chunk is staged, a Batch is applied whole. Returns the Batch's
            subscriptions as (name, snapshot) pairs, or None for any other message."""
            global seq
            kind = response.WhichOneof("kind")
            if kind == "snapshot_chunk":
                chunk = response.snapshot_chunk
                if epochs.get(chunk.subscription_id) == chunk.epoch:
                    rows = [] if chunk.chunk_index == 0 else staged[chunk.subscription_id][1]
                    staged[chunk.subscription_id] = (chunk.seq, rows + list(chunk.rows))
                return None
            if kind == "subscription_error":
                fail("subscription error " + response.subscription_error.error.message)
            if kind != "batch":
                return None
            named = []
            current = [d for d in response.batch.deltas if epochs.get(d.subscription_id) == d.epoch]
            # The staged snapshots first, oldest first; then every delta.
            for delta in sorted((d for d in current if d.snapshot), key=lambda d: staged[d.subscription_id][0]):
                shown[delta.subscription_id] = {row.id: row for row in staged.pop(delta.subscription_id)[1]}
            for delta in current:
                name = delta.subscription_id
                rows = shown[name]
                for id in delta.left:
                    del rows[id]
                for row in delta.entered:
                    rows[row.id] = row
                for update in delta.updated:
                    rows[update.row.id] = update.row
                named.append((name, delta.snapshot))
            seq = response.batch.seq
            for name, rows in shown.items():
                want = expected(name, states[seq])
                got = {id: {"title": row.values["title"].string_value, "category": row.values["category"].int_value}
                       for id, row in rows.items()}
                if got != want:
                    fail("after the Batch at %d, %s shows %s, the store had %s" % (seq, name, got, want))
            return named

        def open_stream(resume_from=None):
            requests = queue.Queue()
            def produce():
                while True:
                    request = requests.get()
                    if request is None:
                        return
                    yield request
            hello = m.Hello(client_name="python", protocol_version=1)
            if resume_from is not None:
                hello.resume_from_seq = resume_from
            for name, fetch in fetches.items():
                hello.subscriptions.append(
                    m.Subscribe(subscription_id=name, fetch=fetch, resume=resume_from is not None))
                epochs[name] = 1
            requests.put(m.SyncRequest(hello=hello))
            return requests, stub.Sync(produce())

        apply(point("a", "Apple", 4), point("b", "Banana", 1), point("c", "Cherry", 4), point("d", "Date", 2))
        apply(point("e", "Elder", 4))

        # First stream: both subscriptions become visible by Batches, then live commits arrive.
        requests, responses = open_stream()
        welcome = next(responses).welcome
        print("welcome", welcome.schema_fingerprint, "version", welcome.protocol_version)
        writes = [
            lambda: apply(point("a", "Apple", 1)),                       # leaves near, stays in top
            lambda: apply(point("f", "Avocado", 4), delete("b")),        # enters both; b leaves top
            lambda: apply(point("c", "Aardvark", 4)),                    # moves into top, pushes another out
        ]
        for response in responses:
            named = receive(response)
            if named is None or len(shown) < 2:
                continue
            if len(writes) == 3:
                print("visible", ",".join(sorted(shown)))
            if writes:
                writes.pop(0)()
            elif seq >= latest:
                print("live consistent")
                break
        requests.put(None)
        responses.cancel()

        # Writes the client misses while it is away.
        apply(point("g", "Abacus", 4), point("d", "Date", 4))
        apply(delete("e"))
        apply(point("h", "Aaron", 3))

        # Second stream: resume; the server answers both re-added subscriptions in one Batch.
        requests, responses = open_stream(resume_from=seq)
        print("resumed", next(responses).welcome.resumed)
        for response in responses:
            named = receive(response)
            if named is None:
                continue
            kinds = dict(named)
            if set(kinds) != {"near", "top"}:
                fail("the catch-up Batch names only %s" % sorted(kinds))
            print("caught up in one batch: near %s, top %s" % tuple(
                "snapshot" if kinds[name] else "delta" for name in ("near", "top")))
            if seq != latest:
                fail("caught up at %d, the store is at %d" % (seq, latest))
            break
        requests.put(None)
        responses.cancel()
        channel.close()

        # At the end, equal to SQL on the store's file.
        db = sqlite3.connect(sys.argv[3])
        table = {id: {"title": title, "category": category}
                 for id, title, category in db.execute('SELECT id, title, category FROM "Point"')}
        for name in sorted(shown):
            got = {id: {"title": row.values["title"].string_value, "category": row.values["category"].int_value}
                   for id, row in shown[name].items()}
            if got != expected(name, table):
                fail("%s shows %s, SQL has %s" % (name, got, expected(name, table)))
        print("sql equal", ",".join(sorted(shown)))
        """#
}
