// MARK: - A real meridian-server for end-to-end tests

import Foundation

/// A `meridian-server` process on a temporary database and `Schemas/demo.yaml`, listening on a port the OS chose.
struct TestServer: Sendable {
    /// `127.0.0.1:PORT`, for `--server`.
    let address: String
    let process: ChildProcess
    let directory: String
}

/// Starts a server, runs `body`, and always stops the server and removes its files, even when `body` throws.
///
/// - Parameters:
///   - schema: The schema file (default `Schemas/demo.yaml`).
///   - arguments: More server arguments (`--auth jwt --jwt-key FILE`).
func withTestServer<T>(
    schema: String = repositoryRoot + "/Schemas/demo.yaml", arguments: [String] = [],
    _ body: (TestServer) async throws -> T
) async throws -> T {
    let directory = NSTemporaryDirectory() + "meridian-cli-tests-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let process = try ChildProcess(
        product("meridian-server"),
        [
            "--db", directory + "/store.sqlite", "--schema", schema, "--listen", "127.0.0.1:0",
        ] + arguments)
    var address: String?
    while let line = await process.nextLine(timeout: .seconds(60)) {
        if line.hasPrefix("listening on ") {
            address = String(line.dropFirst("listening on ".count))
            break
        }
    }
    guard let address else {
        await process.stop()
        throw TestServerError(message: "the server did not start: \(process.errorOutput)")
    }
    let server = TestServer(address: address, process: process, directory: directory)
    do {
        let result = try await body(server)
        let status = await process.stop()
        if status != 0 { throw TestServerError(message: "the server exited \(status): \(process.errorOutput)") }
        return result
    } catch {
        await process.stop()
        throw error
    }
}

struct TestServerError: Error, CustomStringConvertible {
    var message: String
    var description: String { self.message }
}
