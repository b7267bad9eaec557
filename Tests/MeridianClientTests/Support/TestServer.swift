// MARK: - A real meridian-server on loopback
//
// Starts the built `meridian-server` (next to the test bundle) on 127.0.0.1 port 0 with the test schema, reads the
// chosen port from its `listening on HOST:PORT` line, and stops it (SIGTERM, then wait) when the body returns or
// throws. Tests that need it are enabled only when the executable exists, so this suite waits for the server branch.
// When a MeridianTestSupport target with `withTestServer` lands, this helper should defer to it.

import Foundation
import MeridianClient
import Testing

enum TestServer {
    /// The path of the built server, if it was built.
    static let executable: String? = {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: me).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("meridian-server").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }()

    /// Whether the real-server tests can run.
    static var isAvailable: Bool { executable != nil }

    static let schemaYAML = """
        version: 1
        entities:
          Point:
            id: client
            attributes:
              title: { type: string, default: "" }
              category: { type: int, default: 0 }
              latitude: double?
              longitude: double?
              note: string?
            derived:
              coordinate: { coordinate: [latitude, longitude] }
        """

    /// Runs `body` with a fresh server's port; the server is stopped however `body` ends.
    static func with<R>(_ body: (Int) async throws -> R) async throws -> R {
        let executable = try #require(Self.executable, "meridian-server is not built")
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let schemaPath = directory + "/schema.yaml"
        try Self.schemaYAML.write(toFile: schemaPath, atomically: true, encoding: .utf8)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "--db", directory + "/store.sqlite", "--schema", schemaPath, "--listen", "127.0.0.1:0", "--log-level",
            "warning",
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let port = try await Task.detached { () throws -> Int in
            var text = ""
            while true {
                let data = output.fileHandleForReading.availableData
                if data.isEmpty { throw ClientError(.unavailable, "meridian-server exited: \(text)") }
                text += String(decoding: data, as: UTF8.self)
                if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }),
                    let port = Int(line.split(separator: ":").last ?? "")
                {
                    return port
                }
            }
        }.value
        return try await body(port)
    }
}

/// A running container connected to a test server; cancelled when the body ends.
func withConnectedContainer<R: Sendable>(
    port: Int,
    cache: MeridianContainer.CacheLocation = .inMemory,
    _ body: @Sendable (MeridianContainer) async throws -> R
) async throws -> R {
    var configuration = try MeridianContainer.Configuration(server: "127.0.0.1:\(port)", cache: cache)
    configuration.validatesChangeSets = true
    let container = try await MeridianContainer(configuration)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await container.run() }
        defer { group.cancelAll() }
        return try await body(container)
    }
}
