// The fan-out failing on a log entry it cannot decode: every stream ends UNAVAILABLE with a message, new streams are
// refused the same way, and writes go on — instead of streams that stay open with a frozen seq.

import Foundation
import GRPCCore
import MeridianCore
import MeridianProto
import MeridianServer
import MeridianStore
import MeridianTestSupport
import Testing

@Suite("Fan-out failure", .timeLimit(.minutes(2)))
struct FanoutFailureTests {
    @Test("a log image that does not decode ends every stream with UNAVAILABLE and refuses new ones; writes go on")
    func corruptLogImage() async throws {
        let store = try Fixtures.store()
        let path = try #require(store.path)
        try await commit(store, [.insert("Point", id: "a", Fixtures.point("A", category: 1))])
        try await withTestServer(store: store, configuration: Fixtures.configuration()) { server, port in
            try await withHTTP2Client(port: port) { client in
                let meridian = Meridian_V1_Meridian.Client(wrapping: client)
                try await withSyncStream(meridian) { stream in
                    stream.hello()
                    var mirror = Mirror()
                    stream.subscribe("all", Fixtures.fetch("Point"))
                    try await mirror.awaitSnapshot(stream, "all")

                    // Another process updates the row and breaks the after-image its trigger logged, in one
                    // transaction: the fan-out reads an entry it cannot decode.
                    let status = await sqlite3(
                        path,
                        """
                        PRAGMA busy_timeout = 5000;
                        BEGIN;
                        UPDATE Point SET title = 'B' WHERE id = 'a';
                        UPDATE meridian_changes SET after = 'not json' WHERE seq = (SELECT max(seq) FROM meridian_changes);
                        COMMIT;
                        """)
                    try #require(status == 0)

                    // The stream ends, with UNAVAILABLE and a detail saying why (not heartbeats at a frozen seq).
                    let ended: any Error
                    do {
                        while true { mirror.apply(try await stream.next()) }
                    } catch {
                        ended = error
                    }
                    let error = try #require(ended as? RPCError, "the stream ended with \(ended)")
                    #expect(error.code == .unavailable)
                    #expect(error.errorDetail?.code == .unavailable)
                    #expect(error.message.contains("change feed stopped"), "\(error.message)")
                    #expect(!error.message.contains("meridian_changes"), "the message shows the server's internals")
                    #expect(mirror.results["all"]?["a"]?.values["title"]?.stringValue == "A")
                }

                // A new stream is refused the same way.
                try await withSyncStream(meridian) { stream in
                    stream.hello()
                    await #expect {
                        while true { _ = try await stream.next() }
                    } throws: { error in
                        (error as? RPCError)?.code == .unavailable
                            && (error as? RPCError)?.errorDetail?.code == .unavailable
                    }
                }

                // The health service and readiness (/readyz) say so.
                let health = Grpc_Health_V1_Health.Client(wrapping: client)
                #expect(try await health.check(Grpc_Health_V1_HealthCheckRequest()).status == .notServing)
                #expect(
                    server.readinessProblem?.contains("the fan-out stopped") == true,
                    "\(server.readinessProblem ?? "ready")")
                #expect(server.status().problem == server.readinessProblem)

                // Writes go on.
                var request = Meridian_V1_ApplyRequest()
                request.operations = [
                    Meridian_V1_Operation(
                        kind: .insert, entity: "Point", id: "c",
                        values: ["title": .string("C"), "category": .int(1)])
                ]
                let response = try await meridian.apply(request)
                guard case .result(let result) = response.outcome else {
                    Issue.record("the write after the fan-out stopped was rejected: \(response)")
                    return
                }
                #expect(result.seq > 0)
            }
        }
    }
}
