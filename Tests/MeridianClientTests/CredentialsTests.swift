// MARK: - Credentials: tokens on every call, refreshed on the open stream before they expire

import Foundation
import MeridianAuth
import MeridianClient
import MeridianCore
import MeridianServer
import MeridianStore
import MeridianTestSupport
import Synchronization
import Testing

@Suite("Credentials", .timeLimit(.minutes(2)))
struct CredentialsTests {
    /// A server that verifies HS256 tokens (no leeway), and a signer for them.
    static func withAuthenticatedServer<R: Sendable>(
        auditLog: String? = nil, leeway: Duration = .seconds(2), _ body: (Int, Store, SigningKey) async throws -> R
    ) async throws -> R {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-cred-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let secret = directory + "/hs256.secret"
        try String(repeating: "c", count: 40).write(toFile: secret, atomically: true, encoding: .utf8)
        let authenticator = Authenticator(
            // A little leeway, as in production: on a loaded machine the refresh may go out late.
            tokens: TokenVerifier(keys: try await VerificationKeys.load(contentsOf: secret), leeway: leeway),
            apiKeys: nil)
        let signer = try await SigningKey.load(contentsOf: secret)
        let store = try Store.temporary(schema: try Schema.parse(yaml: TestServer.schemaYAML))
        defer { try? store.close() }
        var configuration = ServerConfiguration()
        // A heartbeat a second: the client drops a stream silent for three of them, and with the whole suite running
        // on two cores a stream could be silent for 600 ms (200 ms heartbeats) and reconnect — what
        // `refreshInPlace` must not see for any other reason than its credential.
        configuration.heartbeatInterval = .seconds(1)
        configuration.auditLogPath = auditLog
        return try await withTestServer(store: store, configuration: configuration, authenticator: authenticator) {
            _, port in try await body(port, store, signer)
        }
    }

    @Test("a provider's short-lived tokens refresh the open stream in place: no reconnection, no missed change")
    func refreshInPlace() async throws {
        // A 5 s token is refreshed 1 s before it expires (a fifth of its life); with 4 s of leeway the refresh may come
        // 5 s late before the server ends the stream — under the whole suite on two cores, 3 s (2 s of leeway) was
        // sometimes not enough. The first token still lapses (expiry and leeway) well inside the 12 s below.
        try await Self.withAuthenticatedServer(leeway: .seconds(4)) { port, store, signer in
            let calls = Mutex(0)
            let credentials = Credentials.provider {
                calls.withLock { $0 += 1 }
                return try await signer.sign(subject: "app", claims: [:], lifetime: .seconds(5))
            }
            try await withConnectedContainer(port: port, configure: { $0.credentials = credentials }) { container in
                let statuses = Mutex<[ConnectionStatus]>([])
                let watcher = Task {
                    for await status in container.connectionStatusUpdates() { statuses.withLock { $0.append(status) } }
                }
                defer { watcher.cancel() }
                let points = try await container.controller(for: FetchRequest(entity: "Point"))
                try await points.waitUntilLoaded()
                try await store.apply([.insert("Point", id: "before", ["title": "before"])])
                // Past the first token's expiry and leeway (9 s), and the second's expiry: the stream must still be
                // the first one.
                try await Task.sleep(for: .seconds(12))
                let seq = try await store.apply([.insert("Point", id: "after", ["title": "after"])]).seq
                await container.context.waitUntilApplied(seq)
                #expect(points.rows.map(\.id).sorted() == ["after", "before"])
                #expect(calls.withLock { $0 } >= 3, "the provider was not asked again before expiry")
                let seen = statuses.withLock { $0 }
                #expect(!seen.contains(.waitingToReconnect), "the stream was reconnected: \(seen)")
            }
        }
    }

    @Test(
        "lone saves ride one ApplyStream, kept open while idle; the next save opens a new one once its token was replaced"
    )
    func savesReopenTheStreamWithAFreshToken() async throws {
        let auditLog = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-audit-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: auditLog) }
        /// The calls of each method the server authenticated, from its audit log.
        @Sendable func calls(_ method: String) throws -> Int {
            try String(contentsOfFile: auditLog, encoding: .utf8).split(separator: "\n").count {
                $0.contains("\"event\":\"authenticated\"") && $0.contains("\"rpc\":\"\(method)\"")
            }
        }
        try await Self.withAuthenticatedServer(auditLog: auditLog) { port, _, signer in
            let signed = Mutex(0)
            let credentials = Credentials.provider {
                signed.withLock { $0 += 1 }
                return try await signer.sign(subject: "app", claims: [:], lifetime: .seconds(5))
            }
            try await withConnectedContainer(port: port, configure: { $0.credentials = credentials }) { container in
                let points = try await container.controller(for: FetchRequest(entity: "Point"))
                try await points.waitUntilLoaded()
                func save(_ id: String) async throws {
                    try await container.context.insert(into: "Point", id: id, values: ["title": .string(id)])
                    _ = try await container.context.save().confirmed()
                }
                try await save("first")
                try await Task.sleep(for: .milliseconds(300))
                try await save("second")
                // Under a loaded machine the two saves can outlast the token's refresh time, and the second then
                // opens a stream with the fresh token, as it must: one stream per token asked for so far.
                let tokens = signed.withLock { $0 }
                #expect(try calls("ApplyStream") == 1 || tokens > 1, "each lone save opened a stream of its own")
                #expect(try calls("ApplyStream") <= tokens)
                #expect(try calls("Apply") == 0)
                // Past the first token's expiry and the server's leeway: the stream opened with it would be refused
                // (the save rejected as unauthenticated); the save goes out on a new one, under the fresh token.
                try await Task.sleep(for: .seconds(8))
                try await save("third")
                #expect(try calls("ApplyStream") >= 2)
                #expect(points.rows.map(\.id).sorted() == ["first", "second", "third"])
            }
        }
    }

    @Test("one-shot calls send the token; none, or a bad one, is unauthenticated")
    func oneShot() async throws {
        try await Self.withAuthenticatedServer { port, _, signer in
            let address = try ServerAddress(parsing: "127.0.0.1:\(port)")
            let token = try await signer.sign(subject: "tool", claims: [:], lifetime: .seconds(600))
            let schema = try await MeridianConnection.with(address, credentials: .token(token)) {
                try await $0.schema().schema
            }
            #expect(schema.entity(named: "Point") != nil)
            for credentials in [nil, Credentials.token("not-a-key")] {
                do {
                    _ = try await MeridianConnection.with(address, credentials: credentials) {
                        try await $0.schema()
                    }
                    Issue.record("served without a valid token")
                } catch let error as ClientError {
                    #expect(error.code == .unauthenticated, "\(error)")
                }
            }
        }
    }
}
