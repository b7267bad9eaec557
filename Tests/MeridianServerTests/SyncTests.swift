// The Sync stream over both transports: snapshots, deltas, the fetched-results trap, replace, resume, resnapshot.

import Foundation
import GRPCCore
import MeridianCore
import MeridianProto
import MeridianServer
import MeridianStore
import MeridianTestSupport
import MetricsTestKit
import SwiftProtobuf
import Testing

@Suite("Sync", .timeLimit(.minutes(5)))
struct SyncTests {
    @Test("a subscription gets its snapshot in order, in chunks, then its deltas", arguments: Wire.allCases)
    func snapshotThenDeltas(wire: Wire) async throws {
        let store = try Fixtures.store()
        var operations: [WriteOperation] = []
        for i in 0..<300 {
            operations.append(
                .insert("Point", id: String(format: "p%03d", i), Fixtures.point("t\(i)", category: Int64(i % 5))))
        }
        // Every row change has its seq; a commit's seq is its last change's.
        let loaded = try await commit(store, operations)
        #expect(loaded == 300)
        try await onWire(wire, store: store) { client in
            try await withSyncStream(client) { stream in
                stream.hello(maxBatchBytes: 2_000)
                var mirror = Mirror()
                let welcome = mirror.apply(try await stream.nextMessage())
                guard case .welcome(let w) = welcome.kind else {
                    Issue.record("expected Welcome, got \(welcome)")
                    return
                }
                #expect(w.seq == loaded)
                #expect(w.schemaFingerprint == store.schema.fingerprint)
                let fetch = Fixtures.fetch("Point", "category == 2", sort: [("title", false)])
                stream.subscribe("list", fetch)
                var chunkCount = 0
                var ordered: [String] = []
                while true {
                    let response = mirror.apply(try await stream.nextMessage())
                    guard case .snapshotChunk(let chunk) = response.kind else {
                        Issue.record("expected a snapshot chunk, got \(response)")
                        return
                    }
                    #expect(chunk.chunkIndex == UInt32(chunkCount))
                    #expect(!chunk.resnapshot)
                    chunkCount += 1
                    ordered += chunk.rows.map { $0.values["title"]!.stringValue }
                    if chunk.last { break }
                }
                #expect(chunkCount > 1, "2,000-byte chunks should cut 60 rows into several")
                #expect(ordered == ordered.sorted { $0.utf8Compare($1) > 0 }, "sorted by title, descending")
                // Chunks are staged: nothing shows until the Batch that names the snapshot.
                #expect(mirror.results["list"] == nil)
                let ready = mirror.apply(try await stream.nextMessage())
                guard case .batch(let batch) = ready.kind else {
                    Issue.record("expected the Batch that applies the snapshot, got \(ready)")
                    return
                }
                #expect(batch.deltas.map(\.subscriptionID) == ["list"])
                #expect(batch.deltas.first?.snapshot == true)
                #expect(batch.deltas.first?.epoch == 1)
                #expect(mirror.results["list"] == (try await directQuery(store, fetch)))

                let seq = try await commit(
                    store,
                    [
                        .insert("Point", id: "new", Fixtures.point("zzz", category: 2)),
                        .update("Point", id: "p002", ["title": "renamed"]),
                        .delete("Point", id: "p007"),
                        .insert("Point", id: "other", Fixtures.point("x", category: 3)),
                    ])
                try await mirror.catchUp(stream, to: seq)
                #expect(mirror.results["list"] == (try await directQuery(store, fetch)))
                #expect(mirror.results["list"]?["other"] == nil)
            }
        }
    }

    @Test(
        "chunks are cut to the server's size when the client takes larger messages; a larger Batch still comes whole",
        arguments: Wire.allCases)
    func serverChunkSize(wire: Wire) async throws {
        let store = try Fixtures.store()
        try await commit(
            store,
            (0..<300).map { .insert("Point", id: String(format: "p%03d", $0), Fixtures.point("t\($0)", category: 1)) })
        let configuration = Fixtures.configuration { $0.snapshotChunkBytes = 2_000 }
        try await onWire(wire, store: store, configuration: configuration) { client in
            try await withSyncStream(client) { stream in
                stream.hello(maxBatchBytes: 1 << 20)
                var mirror = Mirror()
                mirror.apply(try await stream.nextMessage())
                stream.subscribe("all", Fixtures.fetch("Point"))
                var chunks = 0
                while true {
                    let response = mirror.apply(try await stream.nextMessage())
                    guard case .snapshotChunk(let chunk) = response.kind else {
                        Issue.record("expected a snapshot chunk, got \(response)")
                        return
                    }
                    chunks += 1
                    #expect((try response.serializedBytes() as [UInt8]).count <= 2_000)
                    if chunk.last { break }
                }
                #expect(chunks > 5, "300 rows of about 40 bytes in chunks of 2,000 bytes")
                try await mirror.awaitSnapshot(stream, "all")
                // A commit of about 12 KB: one message, as the client takes 1 MiB.
                let seq = try await commit(
                    store,
                    (0..<300).map {
                        .update("Point", id: String(format: "p%03d", $0), ["title": .string("renamed \($0)")])
                    })
                let response = mirror.apply(try await stream.nextMessage())
                guard case .batch(let batch) = response.kind else {
                    Issue.record("expected the Batch, got \(response)")
                    return
                }
                #expect(!batch.continued)
                #expect(batch.seq == seq)
                #expect((try response.serializedBytes() as [UInt8]).count > 2_000)
                #expect(mirror.results["all"] == (try await directQuery(store, Fixtures.fetch("Point"))))
            }
            // A query's chunks too.
            var request = Meridian_V1_QueryRequest()
            request.fetch = Fixtures.fetch("Point")
            request.maxChunkBytes = 1 << 20
            let sizes = try await client.query(request) { response in
                var sizes: [Int] = []
                for try await chunk in response.messages {
                    sizes.append((try chunk.serializedBytes() as [UInt8]).count)
                }
                return sizes
            }
            #expect(sizes.count > 5)
            #expect(sizes.allSatisfy { $0 <= 2_000 })
        }
    }

    @Test(
        "an update moves a row into and out of a predicate: enter and leave (the fetched-results trap)",
        arguments: Wire.allCases)
    func enterAndLeaveOnUpdate(wire: Wire) async throws {
        let store = try Fixtures.store()
        try await commit(store, [.insert("Point", id: "a", Fixtures.point("A", category: 1))])
        try await onWire(wire, store: store) { client in
            try await withSyncStream(client) { stream in
                stream.hello()
                var mirror = Mirror()
                mirror.apply(try await stream.nextMessage())
                stream.subscribe("two", Fixtures.fetch("Point", "category == 2"))
                try await mirror.awaitSnapshot(stream, "two")
                #expect(mirror.ids("two") == [])

                try await commit(store, [.update("Point", id: "a", ["category": 2])])
                var response = mirror.apply(try await stream.nextMessage())
                guard case .batch(let entered) = response.kind else {
                    Issue.record("expected a batch: \(response)")
                    return
                }
                #expect(entered.deltas.count == 1)
                #expect(entered.deltas[0].entered.map(\.id) == ["a"])
                #expect(entered.deltas[0].entered[0].values["category"] == Meridian_V1_Value(.int(2)))
                #expect(entered.deltas[0].entered[0].version == 2)

                try await commit(store, [.update("Point", id: "a", ["title": "A2"])])
                response = mirror.apply(try await stream.nextMessage())
                guard case .batch(let updated) = response.kind else {
                    Issue.record("expected a batch: \(response)")
                    return
                }
                #expect(updated.deltas[0].updated.map(\.row.id) == ["a"])
                #expect(updated.deltas[0].updated[0].changed == ["title"])

                try await commit(store, [.update("Point", id: "a", ["latitude": 1.5])])
                response = mirror.apply(try await stream.nextMessage())
                guard case .batch(let moved) = response.kind else {
                    Issue.record("expected a batch: \(response)")
                    return
                }
                #expect(moved.deltas[0].updated[0].changed == ["coordinate", "latitude"])

                try await commit(store, [.update("Point", id: "a", ["category": 3])])
                response = mirror.apply(try await stream.nextMessage())
                guard case .batch(let left) = response.kind else {
                    Issue.record("expected a batch: \(response)")
                    return
                }
                #expect(left.deltas[0].left == ["a"])
                #expect(mirror.ids("two") == [])
            }
        }
    }

    @Test("a region replace sends only what entered and left", arguments: Wire.allCases)
    func regionReplace(wire: Wire) async throws {
        let store = try Fixtures.store()
        var operations: [WriteOperation] = []
        for i in 0..<10 {
            operations.append(.insert("Point", id: "p\(i)", Fixtures.point("t\(i)", lat: Double(i), lon: Double(i))))
        }
        try await commit(store, operations)
        func region(_ lo: Double, _ hi: Double) -> Meridian_V1_FetchRequest {
            Fixtures.fetch(
                "Point", "latitude BETWEEN {$lo, $hi} AND longitude BETWEEN {$lo, $hi}",
                variables: ["lo": .value(.double(lo)), "hi": .value(.double(hi))])
        }
        try await onWire(wire, store: store) { client in
            try await withSyncStream(client) { stream in
                stream.hello()
                var mirror = Mirror()
                mirror.apply(try await stream.nextMessage())
                stream.subscribe("map", region(0, 4.5))
                try await mirror.awaitSnapshot(stream, "map")
                #expect(mirror.ids("map") == ["p0", "p1", "p2", "p3", "p4"])
                stream.replace("map", region(3, 6.5))
                let response = mirror.apply(try await stream.nextMessage())
                guard case .batch(let batch) = response.kind else {
                    Issue.record("expected a batch: \(response)")
                    return
                }
                #expect(batch.deltas.count == 1)
                #expect(batch.deltas[0].replaced)
                #expect(batch.deltas[0].left.sorted() == ["p0", "p1", "p2"])
                #expect(batch.deltas[0].entered.map(\.id).sorted() == ["p5", "p6"])
                #expect(batch.deltas[0].updated.isEmpty)
                #expect(mirror.ids("map") == ["p3", "p4", "p5", "p6"])
                // From now on the new region's deltas.
                let seq = try await commit(
                    store, [.update("Point", id: "p1", ["latitude": 5.0, "longitude": 5.0])])
                try await mirror.catchUp(stream, to: seq)
                #expect(mirror.results["map"] == (try await directQuery(store, region(3, 6.5))))
            }
        }
    }

    @Test("many subscriptions on one stream, limited and sorted ones included", arguments: Wire.allCases)
    func manySubscriptions(wire: Wire) async throws {
        let store = try Fixtures.store()
        var operations: [WriteOperation] = []
        for i in 0..<100 {
            operations.append(.insert("Point", id: "p\(i)", Fixtures.point("t\(i % 17)", category: Int64(i % 7))))
        }
        try await commit(store, operations)
        var fetches: [String: Meridian_V1_FetchRequest] = [:]
        for c in 0..<7 { fetches["cat\(c)"] = Fixtures.fetch("Point", "category == \(c)") }
        fetches["top5"] = Fixtures.fetch("Point", "", sort: [("title", true)], limit: 5)
        fetches["low3"] = Fixtures.fetch("Point", "category < 3", sort: [("title", false)], limit: 3)
        fetches["all"] = Fixtures.fetch("Point")
        fetches["caf"] = Fixtures.fetch("Point", "title BEGINSWITH \"t1\"")
        fetches["authors"] = Fixtures.fetch("Author")
        try await onWire(wire, store: store) { client in
            try await withSyncStream(client) { stream in
                stream.hello()
                var mirror = Mirror()
                mirror.apply(try await stream.nextMessage())
                for (id, fetch) in fetches { stream.subscribe(id, fetch) }
                for id in fetches.keys { try await mirror.awaitSnapshot(stream, id) }
                var seq: Int64 = 0
                for round in 0..<30 {
                    // Updates touch p0–p49 (some twice), deletes p50–p79 (each once).
                    seq = try await commit(
                        store,
                        [
                            .update(
                                "Point", id: "p\((round * 13) % 50)",
                                ["category": .int(Int64(round % 7)), "title": .string("u\(round)")]),
                            .insert("Point", id: "n\(round)", Fixtures.point("n\(round)", category: Int64(round % 4))),
                            .delete("Point", id: "p\(50 + round)"),
                        ])
                }
                _ = try? await commit(store, [.insert("Author", id: "au", ["firstName": "A", "lastName": "B"])])
                seq = try await store.latestSeq()
                try await mirror.catchUp(stream, to: seq)
                for (id, fetch) in fetches {
                    #expect(mirror.results[id] == (try await directQuery(store, fetch)), "subscription \(id)")
                }
            }
        }
    }

    @Test("resume sends only the missed deltas", arguments: Wire.allCases)
    func resume(wire: Wire) async throws {
        let store = try Fixtures.store()
        for i in 0..<20 {
            try await commit(store, [.insert("Point", id: "p\(i)", Fixtures.point("t\(i)", category: Int64(i % 2)))])
        }
        let fetch = Fixtures.fetch("Point", "category == 1")
        try await onWire(wire, store: store) { client in
            var mirror = Mirror()
            try await withSyncStream(client) { stream in
                stream.hello()
                mirror.apply(try await stream.nextMessage())
                stream.subscribe("odd", fetch)
                try await mirror.awaitSnapshot(stream, "odd")
            }
            let resumeFrom = mirror.seq
            // Missed while away: an enter, a leave, an update and an unrelated change.
            try await commit(store, [.update("Point", id: "p2", ["category": 1])])
            try await commit(store, [.update("Point", id: "p3", ["category": 0])])
            try await commit(store, [.update("Point", id: "p5", ["title": "five"])])
            let last = try await commit(store, [.update("Point", id: "p4", ["title": "four"])])
            try await withSyncStream(client) { stream in
                stream.hello(resumeFrom: resumeFrom)
                let welcome = mirror.apply(try await stream.nextMessage())
                guard case .welcome(let w) = welcome.kind else {
                    Issue.record("expected Welcome: \(welcome)")
                    return
                }
                #expect(w.resumed)
                stream.subscribe("odd", fetch, resume: true)
                let response = mirror.apply(try await stream.nextMessage())
                guard case .batch(let batch) = response.kind else {
                    Issue.record("expected the missed deltas as a batch, got \(response)")
                    return
                }
                #expect(batch.seq >= last)
                #expect(batch.deltas.count == 1)
                #expect(batch.deltas[0].entered.map(\.id) == ["p2"])
                #expect(batch.deltas[0].left == ["p3"])
                #expect(batch.deltas[0].updated.map(\.row.id) == ["p5"])
                #expect(mirror.snapshotsReceived["odd"] == 1, "no second snapshot")
                #expect(mirror.results["odd"] == (try await directQuery(store, fetch)))
            }
        }
    }

    @Test("a resume that missed more than --max-resume-changes gets a snapshot flagged resnapshot instead")
    func resumePastLimit() async throws {
        let store = try Fixtures.store()
        for i in 0..<10 { try await commit(store, [.insert("Point", id: "p\(i)", Fixtures.point("t\(i)"))]) }
        let fetch = Fixtures.fetch("Point")
        try await onWire(.inProcess, store: store, configuration: Fixtures.configuration { $0.maxResumeChanges = 3 }) {
            client in
            var mirror = Mirror()
            try await withSyncStream(client) { stream in
                stream.hello()
                mirror.apply(try await stream.nextMessage())
                stream.subscribe("all", fetch)
                try await mirror.awaitSnapshot(stream, "all")
            }
            /// Misses `count` changes, then resumes: how the subscription was answered.
            func resume(missing count: Int) async throws -> String {
                let from = mirror.seq
                for i in 0..<count {
                    try await commit(store, [.update("Point", id: "p\(i)", ["title": .string("v\(from)-\(i)")])])
                }
                // A change to another entity counts too: the seqs decide, not a read of the log.
                try await commit(store, [.insert("Author", id: "a\(from)", ["firstName": "a", "lastName": "b"])])
                let snapshots = mirror.snapshotsReceived["all", default: 0]
                try await withSyncStream(client) { stream in
                    stream.hello(resumeFrom: from)
                    mirror.apply(try await stream.nextMessage())
                    stream.subscribe("all", fetch, resume: true)
                    while mirror.seq < from + Int64(count) + 1 { mirror.apply(try await stream.nextMessage()) }
                }
                #expect(mirror.results["all"] == (try await directQuery(store, fetch)))
                return mirror.snapshotsReceived["all", default: 0] > snapshots ? "snapshot" : "deltas"
            }
            #expect(try await resume(missing: 2) == "deltas")
            #expect(try await resume(missing: 3) == "snapshot")
            #expect(mirror.resnapshots == 1)
        }
    }

    @Test("a stream resuming several subscriptions of two entities reads the log once, and each gets its own changes")
    func resumeReadsTheLogOnce() async throws {
        let store = try Fixtures.store()
        for i in 0..<12 {
            try await commit(store, [.insert("Point", id: "p\(i)", Fixtures.point("t\(i)", category: Int64(i % 3)))])
        }
        try await commit(store, [.insert("Author", id: "a0", ["firstName": "Ada", "lastName": "L"])])
        let fetches = [
            "zero": Fixtures.fetch("Point", "category == 0"), "one": Fixtures.fetch("Point", "category == 1"),
            "authors": Fixtures.fetch("Author"),
        ]
        let metrics = TestMetrics()
        try await withTestServer(store: store, configuration: Fixtures.configuration(), metricsFactory: metrics) {
            _, port in
            try await withHTTP2Client(port: port) { http2 in
                let client = Meridian_V1_Meridian.Client(wrapping: http2)
                var mirror = Mirror()
                try await withSyncStream(client) { stream in
                    stream.hello()
                    mirror.apply(try await stream.nextMessage())
                    for (id, fetch) in fetches { stream.subscribe(id, fetch) }
                    for id in fetches.keys { try await mirror.awaitSnapshot(stream, id) }
                }
                let from = mirror.seq
                // Missed while away, interleaved: changes of both entities, entering, leaving and updating.
                try await commit(store, [.update("Point", id: "p1", ["category": 0])])
                try await commit(store, [.insert("Author", id: "a1", ["firstName": "Bo", "lastName": "M"])])
                try await commit(store, [.update("Point", id: "p0", ["title": "zero"])])
                try await commit(store, [.update("Point", id: "p3", ["category": 1])])
                let last = try await commit(store, [.delete("Author", id: "a0")])
                let readsBefore = metrics.counterTotal(label: "meridian_resume_reads_total")
                try await withSyncStream(client) { stream in
                    let resumed = fetches.map { id, fetch in
                        var subscribe = Meridian_V1_Subscribe()
                        subscribe.subscriptionID = id
                        subscribe.fetch = fetch
                        subscribe.resume = true
                        return subscribe
                    }
                    stream.hello(resumeFrom: from, subscriptions: resumed)
                    while mirror.seq < last { mirror.apply(try await stream.nextMessage()) }
                }
                #expect(metrics.counterTotal(label: "meridian_resume_reads_total") - readsBefore == 1)
                #expect(mirror.snapshotsReceived.values.allSatisfy { $0 == 1 }, "resumed, not re-snapshotted")
                for (id, fetch) in fetches {
                    #expect(mirror.results[id] == (try await directQuery(store, fetch)), "\(id)")
                }
            }
        }
    }

    @Test("resume after the log was pruned sends a snapshot flagged resnapshot", arguments: Wire.allCases)
    func resnapshotAfterPruning(wire: Wire) async throws {
        let store = try Fixtures.store()
        for i in 0..<10 { try await commit(store, [.insert("Point", id: "p\(i)", Fixtures.point("t\(i)"))]) }
        let fetch = Fixtures.fetch("Point")
        try await onWire(wire, store: store) { client in
            var mirror = Mirror()
            try await withSyncStream(client) { stream in
                stream.hello()
                mirror.apply(try await stream.nextMessage())
                stream.subscribe("all", fetch)
                try await mirror.awaitSnapshot(stream, "all")
            }
            let resumeFrom = mirror.seq
            try await commit(store, [.delete("Point", id: "p1")])
            try await commit(store, [.insert("Point", id: "q", Fixtures.point("q"))])
            try await store.prune(keepingLast: 1)
            try await withSyncStream(client) { stream in
                stream.hello(resumeFrom: resumeFrom)
                let welcome = mirror.apply(try await stream.nextMessage())
                guard case .welcome(let w) = welcome.kind else {
                    Issue.record("expected Welcome: \(welcome)")
                    return
                }
                #expect(!w.resumed)
                stream.subscribe("all", fetch, resume: true)
                try await mirror.awaitSnapshot(stream, "all", count: 2)
                #expect(mirror.resnapshots == 1)
                #expect(mirror.results["all"] == (try await directQuery(store, fetch)))
            }
        }
    }

    @Test("unsubscribe stops deltas; the id can be reused", arguments: Wire.allCases)
    func unsubscribe(wire: Wire) async throws {
        let store = try Fixtures.store()
        try await onWire(wire, store: store) { client in
            try await withSyncStream(client) { stream in
                stream.hello()
                var mirror = Mirror()
                mirror.apply(try await stream.nextMessage())
                stream.subscribe("a", Fixtures.fetch("Point"))
                stream.subscribe("b", Fixtures.fetch("Point", "category == 9"))
                try await mirror.awaitSnapshot(stream, "a")
                try await mirror.awaitSnapshot(stream, "b")
                stream.unsubscribe("a")
                stream.subscribe("a", Fixtures.fetch("Point", "category == 1"))
                try await mirror.awaitSnapshot(stream, "a", count: 2)
                let seq = try await commit(store, [.insert("Point", id: "x", Fixtures.point("x", category: 9))])
                try await mirror.catchUp(stream, to: seq)
                #expect(mirror.ids("a") == [])
                #expect(mirror.ids("b") == ["x"])
            }
        }
    }

    @Test("heartbeats carry the latest seq when nothing concerns the stream")
    func heartbeats() async throws {
        let store = try Fixtures.store()
        try await onWire(.inProcess, store: store) { client in
            try await withSyncStream(client) { stream in
                stream.hello()
                var mirror = Mirror()
                mirror.apply(try await stream.nextMessage())
                stream.subscribe("authors", Fixtures.fetch("Author"))
                try await mirror.awaitSnapshot(stream, "authors")
                let seq = try await commit(store, [.insert("Point", id: "x", Fixtures.point("x"))])
                while true {
                    let response = mirror.apply(try await stream.next())
                    if case .heartbeat(let heartbeat) = response.kind, heartbeat.seq >= seq { break }
                    if case .batch = response.kind { Issue.record("no batch expected: \(response)") }
                }
            }
        }
    }
}

extension Meridian_V1_Value {
    var stringValue: String {
        if case .stringValue(let s) = self.kind { return s }
        return ""
    }
}
