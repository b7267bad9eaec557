// The store's disk fills up, or is read-only: writes answer UNAVAILABLE with the operating system's reason, the
// health service says NOT_SERVING, nothing acknowledged is lost, and everything comes back when space does. The
// server runs in a mount namespace of its own, on a small tmpfs (root only: unshare and mount need it, as in CI).

import Foundation
import GRPCCore
import MeridianCore
import MeridianProto
import MeridianStore
import MeridianTestSupport
import Testing

@Suite("Disk faults", .timeLimit(.minutes(5)), .enabled(if: getuid() == 0, "unshare and mount need root"))
struct DiskFaultTests {
    /// `meridian-server` on a tmpfs of `size` mounted at `directory` in a mount namespace of its own (the process's
    /// pid is the server's: the shell execs it).
    static func serverOnTmpfs(
        _ directory: String, size: String, readOnly: Bool = false, _ extra: [String] = []
    ) throws -> ServerProcess {
        let mount = "mount -t tmpfs -o size=\(size) tmpfs \"$0\"" + (readOnly ? " && mount -o remount,ro \"$0\"" : "")
        return try ServerProcess(
            executable: URL(fileURLWithPath: "/usr/bin/unshare"),
            [
                "-m", "sh", "-c",
                mount + " && bin=\"$1\" schema=\"$2\" && shift 2 && exec \"$bin\" --db \"$0/store.sqlite\" "
                    + "--schema \"$schema\" --listen 127.0.0.1:0 --health-probe-interval 100ms --log-level warning \"$@\"",
                directory, ServerProcess.binary.path, Fixtures.demoSchemaPath,
            ] + extra)
    }

    /// Runs a command inside the server's mount namespace.
    static func inNamespace(of server: ServerProcess, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/nsenter")
        process.arguments = ["-t", String(server.process.processIdentifier), "-m", "--"] + arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    @Test(
        "a full disk: UNAVAILABLE with the reason, NOT_SERVING and /readyz 503; nothing acknowledged lost; back when space is"
    )
    func fullDisk() async throws {
        let directory = try ProcessTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try Self.serverOnTmpfs(directory, size: "16m", ["--admin", "127.0.0.1:0"])
        let port = try #require(listeningPort(await server.firstLine()))
        let adminLine = try #require(await server.firstLine())
        let admin = try #require(adminBase(adminLine), "\(adminLine)")
        // Room to give back later: half the disk. (Freeing less than the WAL needs to be checkpointed would not
        // bring writes back: SQLite cannot reuse its WAL before it copied it into the store file.)
        #expect(
            try Self.inNamespace(of: server, ["dd", "if=/dev/zero", "of=\(directory)/ballast", "bs=64k", "count=128"])
                == 0)
        try await withHTTP2Client(port: port) { grpc in
            let meridian = Meridian_V1_Meridian.Client(wrapping: grpc)
            let health = Grpc_Health_V1_Health.Client(wrapping: grpc)
            func status() async throws -> Grpc_Health_V1_HealthCheckResponse.ServingStatus {
                try await health.check(Grpc_Health_V1_HealthCheckRequest()).status
            }
            func insert(_ ids: [String]) async throws -> Meridian_V1_ApplyResponse {
                let title = String(repeating: "d", count: 16 << 10)
                return try await meridian.apply(
                    Meridian_V1_ApplyRequest(ids.map { .insert("Point", id: $0, Fixtures.point(title)) }))
            }
            while try await status() != .serving { try await Task.sleep(for: .milliseconds(50)) }
            var acknowledged: [String] = []
            var refused: Meridian_V1_ErrorDetail?
            for batch in 0..<1_000 where refused == nil {
                let ids = (0..<4).map { "b\(batch)-\($0)" }
                let response = try await insert(ids)
                if case .error(let error)? = response.outcome { refused = error } else { acknowledged += ids }
            }
            let error = try #require(refused)
            #expect(error.code == .unavailable)
            #expect(error.message.contains("full"), "\(error.message)")
            #expect(!acknowledged.isEmpty)
            // The health service turns: the probe's small commit fails too.
            while try await status() != .notServing { try await Task.sleep(for: .milliseconds(50)) }
            // So does /readyz, with the reason; /healthz does not (the process is alive).
            let notReady = try await httpGet(admin + "readyz")
            #expect(notReady.status == 503)
            let object = try JSONSerialization.jsonObject(with: Data(notReady.body.utf8)) as? [String: Any]
            #expect(object?["ready"] as? Bool == false)
            #expect((object?["reason"] as? String)?.contains("full") == true, "\(notReady.body)")
            #expect(try await httpGet(admin + "healthz").status == 200)
            // Space comes back: so do writes and the health.
            #expect(try Self.inNamespace(of: server, ["rm", "\(directory)/ballast"]) == 0)
            while try await status() != .serving { try await Task.sleep(for: .milliseconds(50)) }
            #expect(try await httpGet(admin + "readyz") == (200, "{\"ready\":true}\n"))
            let after = try await insert(["after"])
            guard case .result? = after.outcome else {
                Issue.record("a write after space came back: \(after)")
                return
            }
            // Every acknowledged row is there; none of the refused transaction's.
            var request = Meridian_V1_QueryRequest()
            request.fetch = Fixtures.fetch("Point")
            let ids = try await meridian.query(request) { response in
                var ids: Set<String> = []
                for try await chunk in response.messages { ids.formUnion(chunk.rows.map(\.id)) }
                return ids
            }
            #expect(ids == Set(acknowledged + ["after"]))
        }
        server.process.terminate()
        _ = await server.wait()
    }

    @Test("a store on a read-only file system is refused at start with exit 2, naming the cause")
    func readOnlyAtStart() async throws {
        let directory = try ProcessTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try Self.serverOnTmpfs(directory, size: "1m", readOnly: true)
        let (status, stderr) = await server.wait()
        #expect(status == 2)
        #expect(stderr.contains("its file system is read-only"), "\(stderr)")
    }
}
