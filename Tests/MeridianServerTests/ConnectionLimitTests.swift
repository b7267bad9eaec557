// The bounds on connections: how many may be open (--max-connections), how many calls one may hold at once
// (--max-streams-per-connection), how long one may stay open with no call (--idle-timeout), and how long one may stay
// silent (--hello-timeout before its first byte, --keepalive-interval + --hello-timeout after).

import Foundation
import GRPCCore
import MeridianCore
import MeridianProto
import MeridianServer
import MeridianStore
import MeridianTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Connection bounds", .timeLimit(.minutes(2)))
struct ConnectionLimitTests {
    /// Waits (up to a minute) until `condition` holds.
    func waitUntil(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
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
        try await self.retrying(when: { $0.code == .unavailable }, call)
    }

    /// Runs `call`, again (up to five times in all) when it fails with an error `isTransient` accepts.
    func retrying(when isTransient: (RPCError) -> Bool, _ call: () async throws -> Void) async throws {
        for attempt in 1...5 {
            do {
                return try await call()
            } catch let error as RPCError where isTransient(error) && attempt < 5 {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    @Test("a connection with no call open is closed after --idle-timeout; one holding a Sync stream is not")
    func idleTimeout() async throws {
        let store = try Fixtures.store()
        let configuration = Fixtures.configuration { $0.idleTimeout = .seconds(3) }
        try await withTestServer(store: store, configuration: configuration) { server, port in
            // The stream's connection is idle too until its first call: on a loaded machine the call can come after
            // the timeout, and the connection is closed under it. Then the scenario starts over.
            try await self.retryingUnavailable {
                try await self.idleScenario(server: server, port: port, store: store)
            }
        }
    }

    func idleScenario(server: MeridianServer, port: Int, store: Store) async throws {
        try await withHTTP2Client(port: port) { streaming in
            try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: streaming)) { stream in
                var mirror = try await Mirror.subscribed(stream)
                try await withHTTP2Client(port: port) { idle in
                    try await self.retryingUnavailable {
                        _ = try await Meridian_V1_Meridian.Client(wrapping: idle).getSchema(
                            Meridian_V1_GetSchemaRequest())
                    }
                    #expect(server.openConnections == 2)
                    // A connection that speaks HTTP/2 but never calls is idle from the start.
                    let neverCalls = try RawSocket.connect(port: port)
                    defer { close(neverCalls) }
                    RawSocket.send(neverCalls, RawSocket.http2Preface)
                    // (3 s, and up to a minute on a loaded machine: CI saw 10 s pass while 10,000 sockets of
                    // another test were being closed.)
                    #expect(
                        await RawSocket.awaitClosed([neverCalls], until: .now + .seconds(60)).isEmpty,
                        "a connection that never calls is closed")
                    // (The gRPC client connects again at once, so the count of open ones would show its close
                    // for a moment only.)
                    try await self.waitUntil("the idle connection is closed") { server.closedConnections >= 2 }
                    // The stream's connection stays: well past the timeout, a commit made now still reaches the
                    // stream (had its connection been closed, the stream would have ended with an error; the
                    // heartbeats received before would not tell).
                    try await Task.sleep(for: .milliseconds(3_500))
                    let late = "late-\(UUID().uuidString)"  // unique: the scenario may run again
                    let seq = try await commit(store, [.insert("Point", id: late, Fixtures.point("late"))])
                    while mirror.seq < seq { mirror.apply(try await stream.nextMessage()) }
                    #expect(mirror.results["all"]?[late] != nil)
                }
            }
        }
    }

    @Test(
        "a silent connection is closed after --hello-timeout; one that spoke, then answers no PING, after --keepalive-interval more; a quiet stream stays"
    )
    func silentConnections() async throws {
        let store = try Fixtures.store()
        let configuration = Fixtures.configuration {
            $0.helloTimeout = .seconds(1)
            $0.keepaliveInterval = .seconds(1)
            // The stream hears nothing from the server either: only the keepalive PINGs keep it talking.
            $0.heartbeatInterval = .seconds(60)
        }
        try await withTestServer(store: store, configuration: configuration) { server, port in
            // The stream's own Hello must arrive within the same 1 s: on a loaded machine it can come later, and the
            // server ends the stream. Then the scenario starts over (its assertions all hold from the start).
            let lateHello: (RPCError) -> Bool = {
                $0.code == .resourceExhausted && $0.message.hasPrefix("no Hello within")
            }
            try await self.retrying(when: lateHello) {
                try await self.silentScenario(server: server, port: port, store: store)
            }
        }
    }

    func silentScenario(server: MeridianServer, port: Int, store: Store) async throws {
        try await withHTTP2Client(port: port) { client in
            try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: client)) { stream in
                var mirror = try await Mirror.subscribed(stream)

                let start = ContinuousClock.now
                let silent = try RawSocket.connect(port: port)
                let talker = try RawSocket.connect(port: port)
                defer {
                    close(silent)
                    close(talker)
                }
                // HTTP/2's client preface and an empty SETTINGS frame, then nothing, not even a PING's answer.
                RawSocket.send(talker, RawSocket.http2Preface)
                #expect(
                    await RawSocket.awaitClosed([silent, talker], until: start + .milliseconds(600)).count == 2,
                    "nobody is closed before its timeout")
                #expect(
                    await RawSocket.awaitClosed([silent], until: start + .seconds(60)).isEmpty,
                    "the silent connection is closed after --hello-timeout")
                // Halfway between the two timeouts, measured from the start (a loaded machine may notice the
                // silent connection's close late, so not from then).
                #expect(
                    await RawSocket.awaitClosed([talker], until: start + .milliseconds(1_500)).count == 1,
                    "the connection that spoke has --keepalive-interval more")
                #expect(
                    await RawSocket.awaitClosed([talker], until: start + .seconds(60)).isEmpty,
                    "the connection that answers no PING is closed")
                try await self.waitUntil("only the stream's connection is open") { server.openConnections == 1 }
                // Four seconds of silence later, the stream's connection still carries changes: its client
                // answered every PING.
                try await Task.sleep(until: start + .seconds(4))
                let late = "late-\(UUID().uuidString)"  // unique: the scenario may run again
                let seq = try await commit(store, [.insert("Point", id: late, Fixtures.point("late"))])
                while mirror.seq < seq { mirror.apply(try await stream.nextMessage()) }
                #expect(mirror.results["all"]?[late] != nil)
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
