// The bounds on connections: how many may be open (--max-connections), how many calls one may hold at once
// (--max-streams-per-connection), and how long one may stay open with no call (--idle-timeout).

import GRPCCore
import MeridianCore
import MeridianProto
import MeridianServer
import MeridianTestSupport
import Testing

@Suite("Connection bounds", .timeLimit(.minutes(2)))
struct ConnectionLimitTests {
    /// Waits (up to 10 s) until `condition` holds.
    func waitUntil(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting until \(what)")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test("a connection past --max-connections is closed at once; when one closes, a new one is served")
    func maxConnections() async throws {
        let store = try Fixtures.store()
        try await withTestServer(store: store, configuration: Fixtures.configuration { $0.maxConnections = 2 }) {
            server, port in
            try await withHTTP2Client(port: port) { first in
                let kept = Meridian_V1_Meridian.Client(wrapping: first)
                _ = try await kept.getSchema(Meridian_V1_GetSchemaRequest())
                try await withHTTP2Client(port: port) { second in
                    _ = try await Meridian_V1_Meridian.Client(wrapping: second).getSchema(
                        Meridian_V1_GetSchemaRequest())
                    #expect(server.openConnections == 2)
                    try await withHTTP2Client(port: port) { third in
                        do {
                            _ = try await Meridian_V1_Meridian.Client(wrapping: third).getSchema(
                                Meridian_V1_GetSchemaRequest())
                            Issue.record("a third connection must be refused")
                        } catch let error as RPCError {
                            #expect(error.code == .unavailable)
                        }
                    }
                }
                try await self.waitUntil("the closed connections are counted out") { server.openConnections == 1 }
                try await withHTTP2Client(port: port) { fourth in
                    _ = try await Meridian_V1_Meridian.Client(wrapping: fourth).getSchema(
                        Meridian_V1_GetSchemaRequest())
                }
                _ = try await kept.getSchema(Meridian_V1_GetSchemaRequest())
            }
        }
    }

    /// Runs `call`, again when the connection was closed under it (a loaded machine can take longer than a short idle
    /// timeout between accepting a connection and reading its first call).
    func retryingUnavailable(_ call: () async throws -> Void) async throws {
        for attempt in 1...5 {
            do {
                return try await call()
            } catch let error as RPCError where error.code == .unavailable && attempt < 5 {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    @Test("a connection with no call open is closed after --idle-timeout; one holding a Sync stream is not")
    func idleTimeout() async throws {
        let store = try Fixtures.store()
        let configuration = Fixtures.configuration { $0.idleTimeout = .seconds(2) }
        try await withTestServer(store: store, configuration: configuration) { server, port in
            try await withHTTP2Client(port: port) { streaming in
                try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: streaming)) { stream in
                    stream.hello()
                    _ = try await stream.nextMessage()
                    try await withHTTP2Client(port: port) { idle in
                        try await self.retryingUnavailable {
                            _ = try await Meridian_V1_Meridian.Client(wrapping: idle).getSchema(
                                Meridian_V1_GetSchemaRequest())
                        }
                        #expect(server.openConnections == 2)
                        try await self.waitUntil("the idle connection is closed") { server.openConnections == 1 }
                        // The stream's connection stays: heartbeats still arrive on it, well past the timeout (had
                        // it been closed, the stream would have ended with an error). (The idle client may reconnect
                        // on its own meanwhile, so the count is not checked again.)
                        try await Task.sleep(for: .milliseconds(2_500))
                        for _ in 0..<3 {
                            guard case .heartbeat = try await stream.next().kind else {
                                Issue.record("expected a heartbeat")
                                return
                            }
                        }
                    }
                }
            }
        }
    }

    @Test("a call past --max-streams-per-connection waits until a call on its connection ends")
    func streamsPerConnection() async throws {
        let store = try Fixtures.store()
        let configuration = Fixtures.configuration { $0.maxStreamsPerConnection = 1 }
        try await withTestServer(store: store, configuration: configuration) { _, port in
            try await withHTTP2Client(port: port) { client in
                let meridian = Meridian_V1_Meridian.Client(wrapping: client)
                let answered = LockedValue(false)
                let second: Task<Void, any Error>
                do {
                    second = try await withSyncStream(meridian) { stream in
                        stream.hello()
                        _ = try await stream.nextMessage()
                        let waiting = Task {
                            _ = try await meridian.getSchema(Meridian_V1_GetSchemaRequest())
                            answered.set(true)
                        }
                        try await Task.sleep(for: .milliseconds(500))
                        #expect(!answered.value, "a second call ran beside the stream")
                        return waiting
                    }
                }
                // The stream ended: the waiting call goes through.
                try await second.value
                #expect(answered.value)
            }
        }
    }
}
