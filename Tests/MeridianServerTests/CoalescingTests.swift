import Logging
import MeridianCore
import MeridianProto
import MeridianStore
import SwiftProtobuf
import Synchronization
import Testing

@testable import MeridianServer

/// A slow client's queued batches are folded row by row; the folded `changed` lists must name what a client would
/// have heard from the batches one by one — derived attributes included.
@Suite struct CoalescingTests {
    let coordinate = DerivedAttribute(name: "coordinate", kind: .coordinate(latitude: "lat", longitude: "lon"))

    func part(entered: [Row] = [], left: [(String, Row?)] = [], updated: [(Row, [String])] = []) -> BatchPart {
        BatchPart(
            subscription: WireSubscription(id: "s", epoch: 1),
            delta: SharedDelta(
                entered: entered.map { VersionedRow(row: $0, version: 1) },
                left: left.map { (id: $0.0, before: $0.1) },
                updated: updated.map { (row: VersionedRow(row: $0.0, version: 2), changed: $0.1) }),
            replaced: false, derived: [self.coordinate])
    }

    @Test("a row that left and came back with a new position is an update naming the position and the coordinate")
    func leftAndReentered() {
        let before = Row(id: "a", values: ["title": "A", "lat": 1.0, "lon": 2.0])
        let after = Row(id: "a", values: ["title": "A", "lat": 1.5, "lon": 2.0])
        var merged = MergedDelta()
        merged.fold(self.part(left: [("a", before)]))
        merged.fold(self.part(entered: [after]))
        let proto = merged.proto(WireSubscription(id: "s", epoch: 1))
        #expect(proto.entered.isEmpty && proto.left.isEmpty)
        #expect(proto.updated.map(\.changed) == [["coordinate", "lat"]])
    }

    @Test("a row that left and came back with its values as they were is an update naming nothing, at its new version")
    func leftAndReenteredUnchanged() {
        let row = Row(id: "a", values: ["title": "A", "lat": 1.0, "lon": 2.0])
        var merged = MergedDelta()
        merged.fold(self.part(left: [("a", row)]))
        merged.fold(self.part(entered: [row]))
        let proto = merged.proto(WireSubscription(id: "s", epoch: 1))
        #expect(proto.entered.isEmpty && proto.left.isEmpty)
        #expect(proto.updated.map(\.changed) == [[]])
        #expect(proto.updated.map(\.row.version) == [1])
    }

    @Test("updates fold into one naming every changed attribute; a title-only return names no coordinate")
    func updatesFold() {
        let row = Row(id: "a", values: ["title": "B", "lat": 1.0, "lon": 2.0])
        var merged = MergedDelta()
        merged.fold(self.part(updated: [(row, ["coordinate", "lon"])]))
        merged.fold(self.part(updated: [(row, ["title"])]))
        #expect(
            merged.proto(WireSubscription(id: "s", epoch: 1)).updated.map(\.changed) == [
                ["coordinate", "lon", "title"]
            ])

        var back = MergedDelta()
        back.fold(self.part(left: [("a", Row(id: "a", values: ["title": "A", "lat": 1.0, "lon": 2.0]))]))
        back.fold(self.part(entered: [row]))
        #expect(back.proto(WireSubscription(id: "s", epoch: 1)).updated.map(\.changed) == [["title"]])
    }

    @Test("an image unknown to the fold reports every attribute, derived ones included")
    func unknownImage() {
        let row = Row(id: "a", values: ["title": "B", "lat": 1.0, "lon": 2.0])
        var merged = MergedDelta()
        merged.fold(self.part(left: [("a", nil)]))
        merged.fold(self.part(entered: [row]))
        #expect(
            merged.proto(WireSubscription(id: "s", epoch: 1)).updated.map(\.changed) == [
                ["coordinate", "lat", "lon", "title"]
            ])
    }

    @Test(
        "a merged batch's hand-written bytes decode to the message built from its merged deltas",
        arguments: [false, true])
    func mergedBytes(replaced: Bool) throws {
        let a = Row(id: "a", values: ["title": "A", "lat": 1.0, "lon": 2.0, "note": .null, "n": 7])
        let b = Row(id: "b", values: ["title": "", "lat": -1.5, "lon": 0.0])
        let c = Row(id: "c", values: ["title": "C"])
        var first = self.part(entered: [a], left: [("c", c)], updated: [(b, ["lat"])])
        first.replaced = replaced
        var batch = QueuedBatch(seq: 5, parts: [first])
        let second = self.part(
            entered: [Row(id: "d", values: ["title": "D"])], updated: [(a, ["title"]), (b, ["lon"])])
        _ = batch.merge(
            seq: 300,
            parts: [
                second,
                BatchPart(subscription: WireSubscription(id: "t", epoch: 300), delta: second.delta, replaced: false),
                .snapshotReady(WireSubscription(id: "u", epoch: 2), seq: 5),
            ])
        var expected = Meridian_V1_SyncResponse()
        expected.batch.seq = 300
        expected.batch.deltas = try batch.mergedOrder.map { try #require(batch.merged[$0]).proto($0) }
        #expect(expected.batch.deltas.map(\.epoch) == [1, 300, 2])
        #expect(expected.batch.deltas.map(\.snapshot) == [false, false, true])
        #expect(expected.batch.deltas.map(\.snapshotSeq) == [0, 0, 5])
        #expect(try Meridian_V1_SyncResponse(serializedBytes: batch.encoded()) == expected)
    }

    @Test("a subscription's snapshot folded into a batch supersedes its earlier deltas; later ones apply after it")
    func snapshotSupersedes() {
        let a = Row(id: "a", values: ["title": "A"])
        let b = Row(id: "b", values: ["title": "B"])
        var merged = MergedDelta()
        merged.fold(self.part(entered: [a]))
        merged.fold(.snapshotReady(WireSubscription(id: "s", epoch: 1), seq: 2))
        merged.fold(self.part(entered: [b]))
        let proto = merged.proto(WireSubscription(id: "s", epoch: 1))
        #expect(proto.snapshot)
        #expect(proto.snapshotSeq == 2)
        #expect(proto.entered.map(\.id) == ["b"])
    }

    @Test("the same id under two epochs stays two deltas in a merged batch (an old subscription and its successor)")
    func epochsStayApart() throws {
        let old = BatchPart(
            subscription: WireSubscription(id: "r", epoch: 1),
            delta: SharedDelta(
                entered: [VersionedRow(row: Row(id: "a", values: [:]), version: 1)], left: [], updated: []),
            replaced: false)
        var batch = QueuedBatch(seq: 1, parts: [old])
        _ = batch.merge(seq: 2, parts: [.snapshotReady(WireSubscription(id: "r", epoch: 2), seq: 2)])
        let decoded = try Meridian_V1_SyncResponse(serializedBytes: batch.encoded())
        #expect(decoded.batch.deltas.map { "\($0.subscriptionID)@\($0.epoch)" } == ["r@1", "r@2"])
        #expect(decoded.batch.deltas.map(\.snapshot) == [false, true])
        #expect(decoded.batch.deltas.first?.entered.map(\.id) == ["a"])
    }

    @Test("the outbox is bounded in bytes: a few large rows overflow it, and snapshots wait only within the bound")
    func boundedInBytes() async throws {
        let outbox = ClientOutbox(limit: 1_000, limitBytes: 10_000)
        func part(_ id: String) -> BatchPart {
            let row = VersionedRow(
                row: Row(id: id, values: ["title": .string(String(repeating: "x", count: 3_000))]), version: 1)
            return BatchPart(
                subscription: WireSubscription(id: "s", epoch: 1),
                delta: SharedDelta(entered: [row], left: [], updated: []), replaced: false)
        }
        // Nobody reads: the first batch waits, the next ones merge into it, 3 KB a row.
        var results: [String] = []
        for i in 0..<5 {
            switch outbox.enqueueBatch(seq: Int64(i + 1), parts: [part("r\(i)")]) {
            case .queued: results.append("queued")
            case .overflowed: results.append("overflowed")
            case .closed: results.append("closed")
            }
            if results.last == "overflowed" { break }
        }
        // Four rows, far under the 1,000-row limit, pass 10,000 bytes.
        #expect(results == ["queued", "queued", "queued", "overflowed"])
        #expect(outbox.queuedRows == 0)
        // The hub re-snapshots the client (until then nothing but messages is taken).
        _ = outbox.dropAndHold()
        // Snapshots: what waits may not pass the bound.
        let rows = (0..<2).map {
            VersionedRow(
                row: Row(id: "s\($0)", values: ["title": .string(String(repeating: "y", count: 3_000))]), version: 1)
        }
        let snapshot = QueuedSnapshot(subscriptionID: "a", epoch: 1, seq: 9, rows: rows, resnapshot: false)
        #expect(snapshot.bytes > 6_000 && snapshot.bytes < 6_200)
        #expect(outbox.canTake(snapshotBytes: snapshot.bytes))
        outbox.enqueue(snapshot)
        #expect(!outbox.canTake(snapshotBytes: snapshot.bytes))
        // Sent, it no longer counts.
        guard case .snapshot? = await outbox.next() else {
            Issue.record("the snapshot was not queued")
            return
        }
        #expect(outbox.canTake(snapshotBytes: snapshot.bytes))
    }

    /// A release queued after the drop would name a snapshot whose chunks were dropped.
    @Test("after an overflow only messages reach the writer until the hub re-snapshots", arguments: [false, true])
    func overflowTakesNothingUntilResnapshot(holding: Bool) async throws {
        let outbox = ClientOutbox(limit: 2)
        if holding { outbox.beginHold(showing: 2) }
        func row(_ id: String) -> VersionedRow { VersionedRow(row: Row(id: id, values: ["title": "A"]), version: 1) }
        func enqueue(_ seq: Int64, _ parts: [BatchPart]) -> String {
            switch outbox.enqueueBatch(seq: seq, parts: parts) {
            case .queued: "queued"
            case .overflowed: "overflowed"
            case .closed: "closed"
            }
        }
        let s = WireSubscription(id: "s", epoch: 1)
        let t = WireSubscription(id: "t", epoch: 1)
        func changes(_ ids: [String]) -> BatchPart {
            BatchPart(
                subscription: t, delta: SharedDelta(entered: ids.map(row), left: [], updated: []), replaced: false)
        }
        // s's snapshot streamed from the store waits in the queue (its release waits for the hub to reach seq 3);
        // then t's changes pass the bound, in the hub batch that reaches seq 3: the queue is dropped, chunk included.
        outbox.enqueue(QueuedSnapshot(subscriptionID: "s", epoch: 1, seq: 3, rows: [row("a")], resnapshot: true))
        #expect(enqueue(3, [changes(["b"])]) == "queued")
        #expect(enqueue(3, [changes(["c", "d"])]) == "overflowed")
        // The same hub batch then releases s's snapshot: the batch part that shows it must not reach the client,
        // which never got the chunk and would apply whatever snapshot of s it staged before. Nor may the end of a
        // hold send it, nor a snapshot pass.
        #expect(enqueue(3, [.snapshotReady(s, seq: 3)]) == "overflowed")
        outbox.enqueue(QueuedSnapshot(subscriptionID: "s", epoch: 1, seq: 3, rows: [row("a")], resnapshot: true))
        outbox.endHold()
        var heartbeat = Meridian_V1_SyncResponse()
        heartbeat.heartbeat.seq = 2
        outbox.enqueue(heartbeat)
        guard case .message(let message)? = await outbox.next() else {
            Issue.record("a batch or snapshot reached the writer after the overflow, before the re-snapshot")
            return
        }
        #expect(message.heartbeat.seq == 2)
        // The hub re-snapshots: from here on its snapshots pass and its batches are held, as after any overflow.
        _ = outbox.dropAndHold()
        #expect(outbox.isHolding)
        outbox.enqueue(QueuedSnapshot(subscriptionID: "s", epoch: 1, seq: 4, rows: [row("a")], resnapshot: true))
        #expect(enqueue(4, [.snapshotReady(s, seq: 4)]) == "queued")
        outbox.endHold()
        guard case .snapshot(let snapshot)? = await outbox.next(), case .batch(let batch)? = await outbox.next() else {
            Issue.record("the re-snapshot did not go out after the overflow")
            return
        }
        #expect(snapshot.seq == 4)
        #expect(batch.seq == 4)
    }

    @Test("a holding outbox merges batches into one, passes snapshots and messages on, and sends the batch at the end")
    func holdingOutbox() async throws {
        let outbox = ClientOutbox(limit: 1_000)
        outbox.beginHold(showing: 5)
        let row = VersionedRow(row: Row(id: "a", values: ["title": "A"]), version: 1)
        let live = BatchPart(
            subscription: WireSubscription(id: "live", epoch: 1),
            delta: SharedDelta(entered: [row], left: [], updated: []), replaced: false)
        #expect({ if case .queued = outbox.enqueueBatch(seq: 7, parts: [live]) { true } else { false } }())
        outbox.enqueue(
            QueuedSnapshot(subscriptionID: "new", epoch: 1, seq: 8, rows: [row], resnapshot: true))
        #expect(
            {
                if case .queued = outbox.enqueueBatch(
                    seq: 8, parts: [.snapshotReady(WireSubscription(id: "new", epoch: 1), seq: 8)])
                {
                    true
                } else {
                    false
                }
            }())
        // The snapshot is sent; the batches wait.
        guard case .snapshot(let snapshot)? = await outbox.next() else {
            Issue.record("the snapshot did not pass a holding outbox")
            return
        }
        #expect(snapshot.subscriptionID == "new")
        // A heartbeat meanwhile repeats the seq the client shows, not the hub's.
        outbox.heartbeatIfIdle(interval: .zero, seq: 8)
        guard case .message(let heartbeat)? = await outbox.next() else {
            Issue.record("no heartbeat")
            return
        }
        #expect(heartbeat.heartbeat.seq == 5)
        outbox.endHold()
        guard case .batch(let batch)? = await outbox.next() else {
            Issue.record("the held batch was not sent when the hold ended")
            return
        }
        let decoded = try Meridian_V1_SyncResponse(serializedBytes: batch.encoded())
        #expect(decoded.batch.seq == 8)
        #expect(decoded.batch.deltas.map(\.subscriptionID) == ["live", "new"])
        #expect(decoded.batch.deltas.map(\.snapshot) == [false, true])
        #expect(!outbox.isHolding)
    }

    @Test("while a reconnection's group is pending, heartbeats repeat the seq the client reconnected from")
    func heartbeatWhileReconnecting() async throws {
        let store = try Fixtures.store()
        for i in 0..<10 { try await commit(store, [.insert("Point", id: "p\(i)", Fixtures.point("t"))]) }
        try await store.prune(keepingLast: 2)
        var configuration = Fixtures.configuration()
        configuration.heartbeatInterval = .zero
        let hub = Hub(store: store, configuration: configuration, metrics: ServerMetrics(), logger: .init(label: "t"))
        try await hub.start()
        let outbox = ClientOutbox(limit: 1_000)
        // Nobody reads the pending subscription's base: the group stays pending.
        let jobs = ReadJobs { _ in }
        let request = try bindForTest(Fixtures.fetch("Point"), store.schema)
        // Reconnecting from seq 4, behind the pruned log: no resume, but the client shows seq 4 until it is answered.
        _ = try hub.connect(
            outbox: outbox, jobs: jobs, name: "t", resumeFrom: nil, clientSeq: 4,
            subscriptions: [.success(.init(id: "s", epoch: 1, request: request, resume: true))],
            welcome: { _ in Meridian_V1_SyncResponse() })
        #expect(outbox.isHolding)
        guard case .message? = await outbox.next() else {
            Issue.record("no Welcome")
            return
        }
        hub.heartbeat()
        guard case .message(let heartbeat)? = await outbox.next() else {
            Issue.record("no heartbeat")
            return
        }
        #expect(heartbeat.heartbeat.seq == 4)
        jobs.finish()
    }

    @Test("a snapshot answering a Replace is flagged replaced; a re-snapshot of the request in force is not")
    func snapshotsAnsweringReplaces() async throws {
        let store = try Fixtures.store()
        try await commit(store, [.insert("Point", id: "a", Fixtures.point("A", category: 1))])
        let hub = Hub(
            store: store, configuration: Fixtures.configuration(), metrics: ServerMetrics(), logger: .init(label: "t"))
        try await hub.start()
        let outbox = ClientOutbox(limit: 1_000)
        // The test reads each pending base itself, in the order the hub asks for them.
        let (pendingReads, continuation) = AsyncStream<Int>.makeStream()
        var pendings = pendingReads.makeAsyncIterator()
        let (client, _) = try hub.connect(
            outbox: outbox, jobs: ReadJobs { continuation.yield($0) }, name: "t", resumeFrom: nil,
            welcome: { _ in Meridian_V1_SyncResponse() })
        func request(_ predicate: String) throws -> BoundFetchRequest {
            try bindForTest(Fixtures.fetch("Point", predicate), store.schema)
        }
        /// Reads the next `reads` pending bases (a Replace drops the pending it supersedes: its read does nothing),
        /// then describes the next batch's delta: `snapshot`, `replaced`, both or neither.
        func answer(reads: Int = 1) async throws -> String {
            for _ in 0..<reads { await hub.read(try #require(await pendings.next())) }
            var staged: Int64?
            while true {
                guard let item = await outbox.next() else { throw CancellationError() }
                if case .snapshot(let snapshot) = item { staged = snapshot.seq }
                guard case .batch(let batch) = item else { continue }
                let delta = try #require(
                    try Meridian_V1_SyncResponse(serializedBytes: batch.encoded()).batch.deltas.first)
                // The part that shows a snapshot names the seq of the chunks just sent.
                #expect(delta.snapshotSeq == (delta.snapshot ? try #require(staged) : 0))
                return [delta.snapshot ? "snapshot" : nil, delta.replaced ? "replaced" : nil].compactMap { $0 }
                    .joined(separator: " ")
            }
        }
        hub.subscribe(client, .success(.init(id: "s", epoch: 1, request: try request("category == 1"), resume: false)))
        #expect(try await answer() == "snapshot")
        try hub.replace(client, id: "s", request: try request("category == 2"))
        #expect(try await answer() == "replaced")
        // An overflow re-snapshots the request in force: not an answer to anything.
        hub.state.withLock { hub.resnapshotAll(client, &$0) }
        #expect(try await answer() == "snapshot")
        // A Replace read while the re-snapshot is pending: the snapshot that answers it is of the new request.
        hub.state.withLock { hub.resnapshotAll(client, &$0) }
        try hub.replace(client, id: "s", request: try request("category == 3"))
        #expect(try await answer(reads: 2) == "snapshot replaced")
        // A Replace answered, its answer still queued when the client overflows: the answer is dropped with the
        // queue, so the re-snapshot (of the new request) answers it. Unflagged, the client would keep waiting and
        // show the new request's rows under the old one (found by `meridian-check soak --seed 7`).
        try hub.replace(client, id: "s", request: try request("category == 4"))
        await hub.read(try #require(await pendings.next()))
        hub.state.withLock { hub.resnapshotAll(client, &$0) }
        #expect(try await answer() == "snapshot replaced")
        continuation.finish()
    }
}
