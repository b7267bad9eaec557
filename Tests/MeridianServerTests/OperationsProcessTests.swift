// The built meridian-server as operators run it: --admin prints its address, --log-format json writes JSON lines,
// bad flags exit 2, and the standard gRPC health service answers Python's grpcio-health-checking client and turns
// NOT_SERVING on SIGTERM before the process exits.

import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("meridian-server operations", .timeLimit(.minutes(5)))
struct OperationsProcessTests {
    @Test("--admin prints the endpoint's address after the listening line, and the endpoint answers")
    func adminLine() async throws {
        let server = try ServerProcess([
            "--in-memory", "--schema", Fixtures.demoSchemaPath, "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0",
        ])
        #expect(listeningPort(await server.firstLine()) != nil)
        let line = try #require(await server.firstLine())
        let base = try #require(adminBase(line), "\(line)")
        #expect(try await httpGet(base + "healthz") == (200, "ok\n"))
        let metrics = try await httpGet(base + "metrics")
        #expect(metrics.status == 200)
        #expect(metrics.body.contains("meridian_commits_total 0"), "\(metrics.body.prefix(2000))")
        kill(server.process.processIdentifier, SIGTERM)
        #expect(await server.wait().status == 0)
    }

    @Test("--log-format json writes one JSON object a line with time, level, label, message and the metadata")
    func jsonLogs() async throws {
        let server = try ServerProcess([
            "--in-memory", "--schema", Fixtures.demoSchemaPath, "--listen", "127.0.0.1:0", "--log-format", "json",
        ])
        #expect(listeningPort(await server.firstLine()) != nil)
        kill(server.process.processIdentifier, SIGTERM)
        let (status, stderr) = await server.wait()
        #expect(status == 0)
        let lines = stderr.split(separator: "\n")
        #expect(lines.count >= 2, "\(stderr)")
        var messages: [String] = []
        for line in lines {
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
            #expect((object["time"] as? String)?.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z/) != nil)
            #expect(object["level"] as? String != nil)
            #expect(object["label"] as? String != nil)
            messages.append(object["message"] as? String ?? "")
            if object["message"] as? String == "meridian server starting" {
                #expect(object["meridian.seq"] as? String == "0", "the metadata is a member: \(line)")
                #expect(object["label"] as? String == "meridian.server")
                #expect(object["level"] as? String == "info")
            }
        }
        #expect(messages.contains("meridian server starting"), "\(messages)")
        #expect(messages.contains("meridian server stopped"), "\(messages)")
    }

    @Test("bad --log-format, --admin and --admin-token-file exit 2 with the reason")
    func badFlags() async throws {
        let directory = try ProcessTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let shortToken = directory + "/short"
        try "tooshort\n".write(toFile: shortToken, atomically: true, encoding: .utf8)
        let secret = directory + "/jwt.secret"
        try String(repeating: "k", count: 48).write(toFile: secret, atomically: true, encoding: .utf8)
        let base = ["--in-memory", "--schema", Fixtures.demoSchemaPath, "--listen", "127.0.0.1:0"]
        let cases: [([String], String)] = [
            (["--log-format", "xml"], "--log-format must be text or json, not 'xml'"),
            (["--admin", "nowhere"], "--admin must be HOST:PORT"),
            (["--admin", "0.0.0.0:0"], "needs --admin-token-file"),
            (
                ["--auth", "jwt", "--jwt-key", secret, "--admin", "127.0.0.1:0"],
                "--admin with --auth jwt needs --admin-token-file"
            ),
            (["--admin-token-file", shortToken], "--admin-token-file needs --admin HOST:PORT"),
            (
                ["--admin", "127.0.0.1:0", "--admin-token-file", directory + "/missing"],
                "cannot read the admin token file"
            ),
            (["--admin", "127.0.0.1:0", "--admin-token-file", shortToken], "at least 16 characters"),
        ]
        for (flags, message) in cases {
            let (status, _, stderr) = try await ServerProcess.run(base + flags)
            #expect(status == 2, "\(flags)")
            #expect(stderr.contains(message), "\(flags): \(stderr)")
        }
    }

    /// Checks, watches, and sends SIGTERM to `argv[2]` on the first status the watch gets; prints what it sees, and
    /// whether the server process was still running when NOT_SERVING arrived.
    static let healthScript = #"""
        import os, signal, sys
        import grpc
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        port, pid = sys.argv[1], int(sys.argv[2])
        name = health_pb2.HealthCheckResponse.ServingStatus.Name
        stub = health_pb2_grpc.HealthStub(grpc.insecure_channel(f"127.0.0.1:{port}"))

        def running(pid):
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
            except FileNotFoundError:
                return False

        print("check", name(stub.Check(health_pb2.HealthCheckRequest(service="")).status), flush=True)
        print("check meridian.v1.Meridian",
              name(stub.Check(health_pb2.HealthCheckRequest(service="meridian.v1.Meridian")).status), flush=True)
        try:
            stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"))
            print("unknown service answered", flush=True)
        except grpc.RpcError as error:
            print("unknown service", error.code().name, flush=True)
        signalled = False
        for response in stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=60):
            status = name(response.status)
            print("watch", status, "running" if running(pid) else "exited", flush=True)
            if not signalled:
                os.kill(pid, signal.SIGTERM)
                signalled = True
        print("watch ended", flush=True)
        """#

    @Test("grpcio-health-checking: SERVING, NOT_FOUND for an unknown service, NOT_SERVING on SIGTERM before exit")
    func pythonHealthClient() async throws {
        let directory = try ProcessTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = directory + "/health.py"
        try Self.healthScript.write(toFile: script, atomically: true, encoding: .utf8)
        // A stream open past SIGTERM keeps the server in its graceful shutdown for a moment: the watch sees it.
        let server = try ServerProcess([
            "--in-memory", "--schema", Fixtures.demoSchemaPath, "--listen", "127.0.0.1:0",
        ])
        let port = try #require(listeningPort(await server.firstLine()))
        let (status, text) = try await runPython(
            script, [String(port), String(server.process.processIdentifier)], errors: true)
        #expect(status == 0, "\(text)")
        // The script sends the SIGTERM; one that failed before it did (grpcio missing, a refused call) would leave the
        // server running and the wait below hanging the whole test run: it is stopped here instead.
        if status != 0 { kill(server.process.processIdentifier, SIGTERM) }
        // NOT_SERVING arriving at all says the server sent it before it exited; whether it still runs when the
        // script reads the message is the reader's timing (it once read it after the exit, on a loaded machine).
        let lines = text.split(separator: "\n").map {
            $0 == "watch NOT_SERVING exited" ? "watch NOT_SERVING running" : String($0)
        }
        #expect(
            lines == [
                "check SERVING", "check meridian.v1.Meridian SERVING", "unknown service NOT_FOUND",
                "watch SERVING running", "watch NOT_SERVING running", "watch ended",
            ], "\(text)")
        #expect(await server.wait().status == 0)
    }
}
