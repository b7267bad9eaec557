// MARK: - A real server on loopback
//
// The real MeridianServer, in process, on 127.0.0.1 with a port the OS picks (MeridianTestSupport's
// `withTestServer`), over a temporary store with the test schema; stopped however the test ends.

import Foundation
import MeridianClient
import MeridianCore
import MeridianServer
import MeridianStore
import MeridianTestSupport
import Testing

enum TestServer {
    /// The schema the real-server tests serve (ids chosen by the client, as the writes here always are).
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

    /// Runs `body` with the port of a fresh server; the server and its store go away when `body` ends.
    static func with<R: Sendable>(_ body: (Int) async throws -> R) async throws -> R {
        try await self.with { port, _ in try await body(port) }
    }

    /// Runs `body` with the port of a fresh server (its configuration changed by `configure`) and its store (to write
    /// to it directly).
    static func with<R: Sendable>(
        configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (Int, Store) async throws -> R
    ) async throws -> R {
        let store = try Store.temporary(schema: try Schema.parse(yaml: Self.schemaYAML))
        defer { try? store.close() }
        var configuration = ServerConfiguration()
        configuration.heartbeatInterval = .milliseconds(200)
        configure(&configuration)
        return try await withTestServer(store: store, configuration: configuration) { _, port in
            try await body(port, store)
        }
    }
}

/// A running container connected to a test server; its connection is cancelled when the body ends.
func withConnectedContainer<R: Sendable>(
    port: Int,
    cache: MeridianContainer.CacheLocation = .inMemory,
    configure: (inout MeridianContainer.Configuration) -> Void = { _ in },
    _ body: @Sendable (MeridianContainer) async throws -> R
) async throws -> R {
    var configuration = try MeridianContainer.Configuration(server: "127.0.0.1:\(port)", cache: cache)
    configuration.validatesChangeSets = true
    configure(&configuration)
    let container = try await MeridianContainer(configuration)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await container.run() }
        defer { group.cancelAll() }
        return try await body(container)
    }
}
