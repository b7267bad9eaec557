// MARK: - The connection's watchdog, against a server that goes silent

import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import MeridianClient
import MeridianCore
import MeridianProto
import MeridianTestSupport
import SwiftProtobuf
import Synchronization
import Testing

/// A container drops a stream it hears nothing on for three heartbeat intervals and reconnects; the reconnection's
/// handshake is not held to the previous stream's heartbeats (a loaded server may take longer than three of them to
/// accept and welcome a client, which then reconnected over and over without ever being welcomed).
@Suite("The connection's watchdog", .timeLimit(.minutes(2)))
struct WatchdogTests {
    /// Sync calls answered so far.
    final class Calls: Sendable {
        let count = Mutex(0)
        func next() -> Int {
            self.count.withLock {
                $0 += 1
                return $0
            }
        }
    }

    /// The statuses a container went through.
    final class Statuses: Sendable {
        let list = Mutex<[ConnectionStatus]>([])
        var seen: [ConnectionStatus] { self.list.withLock { $0 } }

        /// Records `container`'s statuses until cancelled.
        func follow(_ container: MeridianContainer) async {
            for await status in container.connectionStatusUpdates() { self.list.withLock { $0.append(status) } }
        }
    }

    /// Answers each Sync call with a Welcome announcing 200 ms heartbeats: the first at once, then nothing more; the
    /// later ones after 1.5 s (more than three of those heartbeats), then a heartbeat every 100 ms.
    struct SilentThenSlowServer: RegistrableRPCService {
        let schema: Schema
        let calls: Calls

        func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
            let (fingerprint, calls) = (self.schema.fingerprint, self.calls)
            router.registerHandler(
                forMethod: Meridian_V1_Meridian.Method.Sync.descriptor, deserializer: RawMessageBytes(),
                serializer: RawMessageBytes(),
                handler: { request, _ in
                    let call = calls.next()
                    return StreamingServerResponse { writer in
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask { for try await _ in request.messages {} }
                            if call > 1 { try await Task.sleep(for: .milliseconds(1_500)) }
                            var welcome = Meridian_V1_Welcome()
                            welcome.schemaFingerprint = fingerprint
                            welcome.heartbeatIntervalMs = 200
                            welcome.protocolVersion = ProtocolVersion.current
                            try await writer.write(
                                try Meridian_V1_SyncResponse.with { $0.welcome = welcome }.serializedBytes())
                            guard call > 1 else {
                                try await Task.sleep(for: .seconds(3_600))
                                return
                            }
                            while true {
                                try await Task.sleep(for: .milliseconds(100))
                                let beat = Meridian_V1_SyncResponse.with { $0.heartbeat = Meridian_V1_Heartbeat() }
                                try await writer.write(try beat.serializedBytes())
                            }
                        }
                        return [:]
                    }
                })
        }
    }

    @Test("a silent stream is dropped after three heartbeats; the reconnection's slower Welcome is waited for")
    func silentThenSlowWelcome() async throws {
        let schema = try Schema.parse(yaml: TestServer.schemaYAML)
        let calls = Calls()
        let transport = HTTP2ServerTransport.Posix(
            address: .ipv4(host: "127.0.0.1", port: 0), transportSecurity: .plaintext)
        let server = GRPCServer(transport: transport, services: [SilentThenSlowServer(schema: schema, calls: calls)])
        @Sendable func serve() async throws { try await server.serve() }
        try await withRunning(serve, shutdown: server.beginGracefulShutdown) {
            let port = try #require(try await transport.listeningAddress.ipv4?.port)
            var configuration = try MeridianContainer.Configuration(server: "127.0.0.1:\(port)", cache: .inMemory)
            configuration.schema = schema
            let container = try await MeridianContainer(configuration)
            let statuses = Statuses()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await container.run() }
                group.addTask { await statuses.follow(container) }
                defer { group.cancelAll() }
                let deadline = ContinuousClock.now + .seconds(60)
                while statuses.seen.filter({ $0 == .connected }).count < 2, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                // Welcomed again, and kept: the heartbeats hold the second stream open.
                try await Task.sleep(for: .seconds(1))
                let seen = statuses.seen
                #expect(seen.filter { $0 == .connected }.count == 2, "\(seen)")
                #expect(seen.filter { $0 == .waitingToReconnect }.count == 1, "\(seen)")
                #expect(calls.count.withLock { $0 } == 2)
            }
        }
    }
}

@Suite("The connection's watchdog and a busy context", .timeLimit(.minutes(2)))
struct BusyContextWatchdogTests {
    @Test("a context busy for many heartbeat intervals with a message is not the server's silence: no reconnection")
    func busyContext() async throws {
        try await TestServer.with { port in
            try await withConnectedContainer(port: port) { container in
                let statuses = WatchdogTests.Statuses()
                let watcher = Task { await statuses.follow(container) }
                defer { watcher.cancel() }
                let points = try await container.controller(for: try FetchRequest(entity: "Point"))
                try await points.waitUntilLoaded()
                // 200 ms heartbeats: the stream's reader hands the next one to the context and waits 1.5 s for it.
                await container.context.occupy(for: .milliseconds(1_500))
                // Then a write, seen through the same stream.
                let seq = try await container.apply([.insert("Point", id: "after", ["title": "after"])]).seq
                await container.context.waitUntilApplied(seq)
                #expect(points.rows.map(\.id) == ["after"])
                let seen = statuses.seen
                #expect(!seen.contains(.waitingToReconnect), "the stream was reconnected: \(seen)")
            }
        }
    }
}
