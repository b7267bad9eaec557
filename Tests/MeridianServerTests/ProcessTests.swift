// The built meridian-server binary: its CLI contract, and a Python client generated from Protos/ talking to it.

import Foundation
import GRPCCore
import MeridianCore
import MeridianProto
import MeridianStore
import MeridianTestSupport
import Synchronization
import Testing

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

    init(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = Self.binary
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

    /// Waits for the process to exit; returns its status and everything it wrote to stderr.
    func wait() async -> (status: Int32, stderr: String) {
        let handle = self.stderr.fileHandleForReading
        let process = self.process
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                continuation.resume(returning: (process.terminationStatus, text))
            }
        }
    }

    /// Runs `meridian-server` with `arguments` to completion.
    static func run(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let server = try ServerProcess(arguments)
        let out = server.stdout.fileHandleForReading
        let stdoutText = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: String(decoding: out.readDataToEndOfFile(), as: UTF8.self))
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
                let byte = handle.readData(ofLength: 1)
                if byte.isEmpty {
                    return continuation.resume(returning: line.isEmpty ? nil : String(decoding: line, as: UTF8.self))
                }
                if byte.first == 0x0A { return continuation.resume(returning: String(decoding: line, as: UTF8.self)) }
                line.append(byte)
            }
        }
    }
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

    @Test("--help exits 0 and documents every flag")
    func help() async throws {
        let (status, out, _) = try await ServerProcess.run(["--help"])
        #expect(status == 0)
        for flag in [
            "--db", "--in-memory", "--schema", "--listen", "--log-level", "--log-retention", "--max-subscriptions",
            "--max-request-bytes", "--client-queue-limit", "--snapshot-chunk-bytes", "--heartbeat-ms",
            "--commit-poll-ms", "--durability",
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
                stream.hello()
                var mirror = Mirror()
                mirror.apply(try await stream.nextMessage())
                stream.subscribe("all", Fixtures.fetch("Point"))
                try await mirror.awaitSnapshot(stream, "all")
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

    @Test("a Python client generated from Protos/ subscribes, writes a row with Apply, and receives its change")
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

        let server = try ServerProcess([
            "--db", directory + "/store.sqlite", "--schema", Fixtures.demoSchemaPath, "--listen", "127.0.0.1:0",
            "--log-level", "warning",
        ])
        let line = await server.firstLine()
        let port = try #require(listeningPort(line), "first line: \(line ?? "nil")")
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", script, directory, String(port)]
        python.environment = ProcessInfo.processInfo.environment.merging(["PYTHONIOENCODING": "utf-8"]) { $1 }
        let output = Pipe()
        python.standardOutput = output
        try python.run()
        let text = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let data = output.fileHandleForReading.readDataToEndOfFile()
                python.waitUntilExit()
                continuation.resume(returning: String(decoding: data, as: UTF8.self))
            }
        }
        #expect(python.terminationStatus == 0)
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "output: \(text)")
        #expect(lines.first == "welcome \(try Fixtures.demoSchema().fingerprint)")
        #expect(lines.dropFirst().first == "snapshot 0")
        #expect(lines.dropFirst(2).first?.hasPrefix("applied result ") == true)
        #expect(lines.dropFirst(3).first == "entered True Café 4 same-seq True")
        server.process.terminate()
        let (status, _) = await server.wait()
        #expect(status == 0)
    }

    static let pythonScript = #"""
        import queue, sys
        sys.path.insert(0, sys.argv[1])
        import grpc
        from meridian.v1 import meridian_pb2 as m, meridian_pb2_grpc as rpc

        channel = grpc.insecure_channel("127.0.0.1:" + sys.argv[2])
        stub = rpc.MeridianStub(channel)
        requests = queue.Queue()

        def produce():
            while True:
                request = requests.get()
                if request is None:
                    return
                yield request

        requests.put(m.SyncRequest(hello=m.Hello(client_name="python")))
        requests.put(m.SyncRequest(subscribe=m.Subscribe(
            subscription_id="py", fetch=m.FetchRequest(entity="Point", predicate="category == 4"))))
        responses = stub.Sync(produce())
        written = None
        applied = None
        for response in responses:
            kind = response.WhichOneof("kind")
            if kind == "welcome":
                print("welcome", response.welcome.schema_fingerprint)
            elif kind == "snapshot_chunk" and response.snapshot_chunk.last:
                print("snapshot", len(response.snapshot_chunk.rows))
                applied = stub.Apply(m.ApplyRequest(operations=[m.Operation(
                    kind=m.Operation.KIND_INSERT, entity="Point",
                    values={"title": m.Value(string_value="Café"), "category": m.Value(int_value=4)})]))
                print("applied", applied.WhichOneof("outcome"), applied.result.seq)
                written = applied.result.rows[0].id
            elif kind == "batch":
                for delta in response.batch.deltas:
                    for row in delta.entered:
                        print("entered", row.id == written, row.values["title"].string_value,
                              row.values["category"].int_value, "same-seq", response.batch.seq == applied.result.seq)
                requests.put(None)
                responses.cancel()
                break
        channel.close()
        """#
}
