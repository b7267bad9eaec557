// A commit of several operations reaches a subscriber as one Batch at the commit's seq, never as states in between
// (DESIGN.md, semantics 1: a batch always ends at a commit boundary).

import GRPCCore
import MeridianCore
import MeridianProto
import MeridianServer
import MeridianStore
import MeridianTestSupport
import SwiftProtobuf
import Testing

@Suite("Batch boundaries", .timeLimit(.minutes(5)))  // a hang guard: a missing batch would wait forever
struct BatchBoundaryTests {
    /// A delta's rows, in an order that does not depend on the server's: entered and left ids, updated ids with the
    /// attributes they changed.
    struct DeltaSummary: Equatable, CustomStringConvertible {
        var entered: [String] = []
        var updated: [String] = []
        var left: [String] = []

        init(entered: [String] = [], updated: [String] = [], left: [String] = []) {
            self.entered = entered.sorted()
            self.updated = updated.sorted()
            self.left = left.sorted()
        }

        init(_ delta: Meridian_V1_SubscriptionDelta) {
            self.init(
                entered: delta.entered.map(\.id),
                updated: delta.updated.map { "\($0.row.id) \($0.changed.joined(separator: ","))" },
                left: delta.left)
        }

        var description: String { "entered \(self.entered), updated \(self.updated), left \(self.left)" }
    }

    /// Reads past heartbeats to the next message, which must be a batch.
    func nextBatch(_ stream: SyncStream, _ mirror: inout Mirror) async throws -> Meridian_V1_Batch {
        let response = mirror.apply(try await stream.nextMessage())
        guard case .batch(let batch) = response.kind else { throw UnexpectedMessage(response: response) }
        return batch
    }

    /// A message other than the batch expected.
    struct UnexpectedMessage: Error {
        var response: Meridian_V1_SyncResponse
    }

    @Test(
        "one Apply of inserts, updates and deletes over three subscriptions arrives as one Batch at its seq",
        arguments: Wire.allCases)
    func oneCommitOneBatch(wire: Wire) async throws {
        let store = try Fixtures.store()
        try await commit(
            store,
            [
                .insert("Point", id: "a", Fixtures.point("A", category: 1)),
                .insert("Point", id: "b", Fixtures.point("B", category: 1)),
                .insert("Point", id: "c", Fixtures.point("C", category: 1)),
                .insert("Point", id: "d", Fixtures.point("D", category: 2)),
                .insert("Point", id: "g", Fixtures.point("G", category: 2)),
            ])
        let subscriptions = [
            "ones": Fixtures.fetch("Point", "category == 1"),
            "twos": Fixtures.fetch("Point", "category == 2"),
            "all": Fixtures.fetch("Point"),
        ]
        try await onWire(wire, store: store) { client in
            try await withSyncStream(client) { stream in
                stream.hello()
                var mirror = Mirror()
                mirror.apply(try await stream.nextMessage())
                for (id, fetch) in subscriptions {
                    stream.subscribe(id, fetch)
                    try await mirror.awaitSnapshot(stream, id)
                }
                let before = try await store.latestSeq()

                // Seven operations, one transaction: rows enter, leave, move between subscriptions and change
                // within them; `e` is inserted and updated in the same commit.
                var request = Meridian_V1_ApplyRequest()
                typealias Operation = Meridian_V1_Operation
                request.operations = [
                    Operation(kind: .insert, entity: "Point", id: "e", values: Fixtures.point("E", category: 1)),
                    Operation(kind: .update, entity: "Point", id: "a", values: ["title": "A2"]),
                    Operation(kind: .update, entity: "Point", id: "b", values: ["category": 2]),
                    Operation(kind: .delete, entity: "Point", id: "c"),
                    Operation(kind: .delete, entity: "Point", id: "d"),
                    Operation(kind: .insert, entity: "Point", id: "f", values: Fixtures.point("F", category: 3)),
                    Operation(kind: .update, entity: "Point", id: "e", values: ["title": "E2"]),
                ]
                let response = try await client.apply(request)
                let seq = response.result.seq
                #expect(seq == before + 7, "\(response)")

                let batches = mirror.batches
                let batch = try await self.nextBatch(stream, &mirror)
                #expect(batch.seq == seq)
                let deltas = Dictionary(
                    batch.deltas.map { ($0.subscriptionID, DeltaSummary($0)) }, uniquingKeysWith: { first, _ in first })
                #expect(batch.deltas.count == 3)
                #expect(deltas["ones"] == DeltaSummary(entered: ["e"], updated: ["a title"], left: ["b", "c"]))
                #expect(deltas["twos"] == DeltaSummary(entered: ["b"], left: ["d"]))
                #expect(
                    deltas["all"]
                        == DeltaSummary(entered: ["e", "f"], updated: ["a title", "b category"], left: ["c", "d"]))
                let e = batch.deltas.first { $0.subscriptionID == "ones" }?.entered.first
                #expect(e?.values["title"]?.stringValue == "E2")
                #expect(e?.version == 2)
                // The one batch took every subscription from the state before the commit to the state after it.
                #expect(mirror.batches == batches + 1)
                #expect(mirror.seq == seq)
                for (id, fetch) in subscriptions {
                    #expect(mirror.results[id] == (try await directQuery(store, fetch)), "\(id)")
                }

                // The next commit is the next batch, at its own seq, for the subscriptions it touches only.
                let next = try await commit(store, [.update("Point", id: "g", ["title": "G2"])])
                #expect(next == seq + 1)
                let second = try await self.nextBatch(stream, &mirror)
                #expect(second.seq == next)
                #expect(second.deltas.map(\.subscriptionID).sorted() == ["all", "twos"])
                #expect(second.deltas.allSatisfy { DeltaSummary($0) == DeltaSummary(updated: ["g title"]) })
                for (id, fetch) in subscriptions {
                    #expect(mirror.results[id] == (try await directQuery(store, fetch)), "\(id)")
                }
            }
        }
    }
}

// MARK: - Batches larger than the client's messages
//
// Cut small here (256 KiB messages, a 1.25 MiB commit): the property is the same at any size, and decoding megabytes
// in a debug build would slow the other tests running beside it. The 10 MiB commit is the client's test
// (MeridianClientTests, "Against a real server on loopback").

@Suite("Batches in parts", .timeLimit(.minutes(5)))
struct BatchPartsTests {
    static let messageBytes = 256 << 10

    /// `rows` rows of `titleBytes` (half of them in category 1) and 10 deletes.
    static func largeCommit(titleBytes: Int = 32 << 10, rows: Int = 40) -> [WriteOperation] {
        let title = String(repeating: "m", count: titleBytes)
        var operations: [WriteOperation] = (0..<rows).map {
            .insert("Point", id: "big\($0)", Fixtures.point(title, category: Int64($0 % 2)))
        }
        operations += (0..<10).map { .delete("Point", id: "old\($0)") }
        return operations
    }

    /// A store with 20 small rows in category 1, and a stream subscribed to all rows and to category 1.
    func withSubscribedStream(
        wire: Wire, protocolVersion: UInt32 = ProtocolVersion.current,
        _ body: @Sendable (Store, SyncStream, inout Mirror) async throws -> Void
    ) async throws {
        let store = try Fixtures.store()
        try await commit(store, (0..<20).map { .insert("Point", id: "old\($0)", Fixtures.point("old", category: 1)) })
        try await onWire(wire, store: store) { client in
            try await withSyncStream(client) { stream in
                stream.hello(maxBatchBytes: UInt32(Self.messageBytes), protocolVersion: protocolVersion)
                var mirror = Mirror()
                mirror.apply(try await stream.nextMessage())
                stream.subscribe("all", Fixtures.fetch("Point"))
                stream.subscribe("one", Fixtures.fetch("Point", "category == 1"))
                while mirror.results["all"] == nil || mirror.results["one"] == nil {
                    mirror.apply(try await stream.nextMessage())
                }
                try await body(store, stream, &mirror)
            }
        }
    }

    @Test(
        "a commit larger than the client's messages arrives as one Batch in parts, each within the client's size",
        arguments: Wire.allCases)
    func largeCommitInParts(wire: Wire) async throws {
        try await self.withSubscribedStream(wire: wire) { store, stream, mirror in
            let seq = try await commit(store, Self.largeCommit())
            var parts = 0
            while mirror.seq < seq {
                let response = try await stream.nextMessage()
                if case .batch(let batch) = response.kind {
                    let bytes: [UInt8] = try response.serializedBytes()
                    #expect(bytes.count <= Self.messageBytes)
                    #expect(batch.seq == seq)
                    // Atomic: nothing of the commit shows before its last part.
                    if batch.continued { #expect(mirror.results["all"]?.count == 20) }
                    parts += 1
                }
                mirror.apply(response)
            }
            // 1.25 MiB for "all" and 0.6 for "one", in parts of at most 256 KiB.
            #expect(parts >= 8)
            #expect(mirror.heldBatch == nil)
            #expect(mirror.results["all"]?.count == 50)
            #expect(mirror.results["one"]?.count == 30)
            #expect(mirror.results["all"]?["big7"]?.values["title"]?.stringValue.utf8.count == 32 << 10)
        }
    }

    @Test("a client of protocol version 1 gets a large Batch whole, as before")
    func versionOneWhole() async throws {
        try await self.withSubscribedStream(wire: .http2, protocolVersion: 1) { store, stream, mirror in
            let seq = try await commit(store, Self.largeCommit())
            let response = try await stream.nextMessage()
            guard case .batch(let batch) = response.kind else {
                Issue.record("expected a Batch, got \(response)")
                return
            }
            let bytes: [UInt8] = try response.serializedBytes()
            #expect(bytes.count > Self.messageBytes)
            #expect(!batch.continued)
            #expect(batch.seq == seq)
            mirror.apply(response)
            #expect(mirror.results["all"]?.count == 50)
        }
    }
}
