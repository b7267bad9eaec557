// A limited subscription is kept as its window and a margin, not as every matching row; when the margin runs out, the
// window is refilled from the store at the batch's seq, and stays exact.

import GRPCCore
import MeridianCore
import MeridianProto
import MeridianStore
import MeridianTestSupport
import Synchronization
import Testing

@testable import MeridianServer

@Suite("Limited windows", .timeLimit(.minutes(5)))
struct LimitedWindowTests {
    /// The number of rows the hub keeps for each limited distinct subscription, by limit.
    static func keptRows(_ server: MeridianServer) -> [Int: Int] {
        server.hub.state.withLock { state in
            var kept: [Int: Int] = [:]
            for (key, distinct) in state.distinct {
                if let limit = key.limit { kept[limit] = distinct.live?.matchingCount }
            }
            return kept
        }
    }

    /// A title that sorts by `n`.
    static func title(_ n: Int) -> String { "t" + String(String(n + 100_000).dropFirst()) }

    @Test("LIMIT 20 over 2,000 rows keeps 36 rows; deleting the window and its margin refills it exactly")
    func keepsItsWindow() async throws {
        let store = try Fixtures.store()
        try await commit(
            store, (0..<2_000).map { .insert("Point", id: "p\($0)", Fixtures.point(Self.title($0), category: 1)) })
        let fetch = Fixtures.fetch("Point", sort: [("title", true)], limit: 20)
        try await withTestServer(store: store, configuration: Fixtures.configuration()) { server, port in
            try await withHTTP2Client(port: port) { grpc in
                try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: grpc)) { stream in
                    stream.hello()
                    var mirror = Mirror()
                    mirror.apply(try await stream.nextMessage())
                    stream.subscribe("top", fetch)
                    try await mirror.awaitSnapshot(stream, "top")
                    #expect(mirror.results["top"]?.count == 20)
                    #expect(Self.keptRows(server) == [20: 36])
                    // The whole window and most of the margin go in one commit: 6 rows left, the window refills.
                    let seq = try await commit(store, (0..<30).map { .delete("Point", id: "p\($0)") })
                    try await mirror.catchUp(stream, to: seq)
                    #expect(mirror.results["top"] == (try await directQuery(store, fetch)))
                    #expect(mirror.ids("top").count == 20)
                    #expect(Self.keptRows(server) == [20: 36])
                    // Rows inserted after the last kept row are not kept; one inserted at the top is.
                    let later = try await commit(
                        store,
                        (0..<200).map { .insert("Point", id: "n\($0)", Fixtures.point(Self.title(5_000 + $0))) }
                            + [.insert("Point", id: "first", Fixtures.point("a"))])
                    try await mirror.catchUp(stream, to: later)
                    #expect(mirror.results["top"] == (try await directQuery(store, fetch)))
                    #expect(mirror.results["top"]?["first"] != nil)
                    #expect(Self.keptRows(server) == [20: 37])
                    // Kept: first and p30…p65. Three rows land after p65 but before p66…p1999, which are not kept;
                    // then 18 kept rows go. Were the three kept, 22 rows would seem to fill the window, one of them
                    // wrongly; they are not, so the 19 left refill it.
                    try await commit(
                        store, (0..<3).map { .insert("Point", id: "late\($0)", Fixtures.point(Self.title(900 + $0))) })
                    let gone = try await commit(
                        store, [.delete("Point", id: "first")] + (30..<47).map { .delete("Point", id: "p\($0)") })
                    try await mirror.catchUp(stream, to: gone)
                    #expect(mirror.results["top"] == (try await directQuery(store, fetch)))
                    #expect(mirror.results["top"]?["p66"] != nil)
                }
            }
        }
    }

    @Test("random commits over a limited window with a small margin: after each, the client shows LIMIT's rows")
    func randomCommitsStayExact() async throws {
        let store = try Fixtures.store()
        var random = SplitMix64(seed: 0x5EED_2026)
        try await commit(
            store,
            (0..<60).map {
                .insert("Point", id: "p\($0)", Fixtures.point(Self.title(Int(random.next() % 1_000)), category: 1))
            })
        let fetches = [
            Fixtures.fetch("Point", sort: [("title", true)], limit: 10),
            Fixtures.fetch("Point", "category == 1", sort: [("title", false)], limit: 5),
        ]
        try await withTestServer(store: store, configuration: Fixtures.configuration()) { server, port in
            try await withHTTP2Client(port: port) { grpc in
                try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: grpc)) { stream in
                    stream.hello()
                    var mirror = Mirror()
                    mirror.apply(try await stream.nextMessage())
                    for (i, fetch) in fetches.enumerated() { stream.subscribe("w\(i)", fetch) }
                    for i in fetches.indices { try await mirror.awaitSnapshot(stream, "w\(i)") }
                    var next = 60
                    for round in 0..<120 {
                        var operations: [WriteOperation] = []
                        var touched: Set<String> = []
                        for _ in 0..<(1 + Int(random.next() % 8)) {
                            // Half the time a row the windows show: their margins run out, and refill.
                            let shown = Set((mirror.results["w0"] ?? [:]).keys).union(
                                (mirror.results["w1"] ?? [:]).keys)
                            let existing = try await directQuery(store, Fixtures.fetch("Point"))
                            let ids = existing.keys.sorted().filter {
                                !touched.contains($0) && (random.next() % 2 == 0 || shown.contains($0))
                            }
                            let pick = ids.isEmpty ? nil : ids[Int(random.next() % UInt64(ids.count))]
                            switch (random.next() % 4, pick) {
                            case (0, let id?):
                                operations.append(.delete("Point", id: id))
                                touched.insert(id)
                            case (1, let id?):
                                operations.append(
                                    .update(
                                        "Point", id: id,
                                        [
                                            "title": .string(Self.title(Int(random.next() % 1_000))),
                                            "category": .int(Int64(random.next() % 2)),
                                        ]))
                                touched.insert(id)
                            default:
                                operations.append(
                                    .insert(
                                        "Point", id: "p\(next)",
                                        Fixtures.point(
                                            Self.title(Int(random.next() % 1_000)),
                                            category: Int64(random.next() % 2))))
                                touched.insert("p\(next)")
                                next += 1
                            }
                        }
                        let seq = try await commit(store, operations)
                        try await mirror.catchUp(stream, to: seq)
                        for (i, fetch) in fetches.enumerated() {
                            let expected = try await directQuery(store, fetch)
                            #expect(mirror.results["w\(i)"] == expected, "round \(round), w\(i)")
                        }
                    }
                    // Neither subscription ever kept more than its window, its margin and a batch's growth.
                    #expect(Self.keptRows(server).values.allSatisfy { $0 <= 26 + 13 + 8 })
                }
            }
        }
    }
}
