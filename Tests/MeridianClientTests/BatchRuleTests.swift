// MARK: - The client's one rule: a SnapshotChunk never changes what shows, a Batch does

import MeridianClient
import MeridianCore
import MeridianProto
import SwiftProtobuf
import Testing

/// The server stages snapshots and answers a reconnection's (or an overflow's) subscriptions in one Batch; the context
/// only stages chunks and applies each Batch — its deltas and the snapshots it names — as one commit at its seq, and
/// drops what carries an older epoch than the subscription's.
@Suite("Applying on Batch", .timeLimit(.minutes(5)))
struct BatchRuleTests {
    /// Two controllers on two subscriptions (categories 1 and 2), loaded; returns them and their subscription ids.
    func twoControllers(_ harness: Harness) async throws -> (
        one: ResultsController<Row>, two: ResultsController<Row>, oneID: String, twoID: String
    ) {
        harness.server.commit(
            "Point", [.upsert(point("a", "Alpha", 1)), .upsert(point("x", "Xray", 1)), .upsert(point("b", "Bravo", 2))])
        let one = try await harness.container.controller(
            for: try FetchRequest(entity: "Point", where: "category == 1", sortedBy: "title"))
        let two = try await harness.container.controller(
            for: try FetchRequest(entity: "Point", where: "category == 2", sortedBy: "title"))
        try await harness.connect()
        let oneID = try #require(harness.server.subscriptions.first { $0.value.matches(point("q", "Q", 1)) }?.key)
        let twoID = try #require(harness.server.subscriptions.first { $0.value.matches(point("q", "Q", 2)) }?.key)
        return (one, two, oneID, twoID)
    }

    /// One subscription's delta, at `epoch`.
    func delta(
        _ id: String, epoch: UInt32 = 1, entered: [Row] = [], left: [String] = [], snapshot: Bool = false
    ) -> Meridian_V1_SubscriptionDelta {
        var delta = Meridian_V1_SubscriptionDelta()
        delta.subscriptionID = id
        delta.epoch = epoch
        delta.entered = entered.map { Meridian_V1_Row($0, version: 2) }
        delta.left = left
        delta.snapshot = snapshot
        return delta
    }

    func batch(_ seq: Int64, _ deltas: Meridian_V1_SubscriptionDelta...) -> Meridian_V1_SyncResponse {
        var batch = Meridian_V1_Batch()
        batch.seq = seq
        batch.deltas = deltas
        return .with { $0.kind = .batch(batch) }
    }

    /// A whole snapshot in one chunk.
    func chunk(_ id: String, epoch: UInt32 = 1, seq: Int64, _ rows: [Row], resnapshot: Bool = true)
        -> Meridian_V1_SyncResponse
    {
        var chunk = Meridian_V1_SnapshotChunk()
        chunk.subscriptionID = id
        chunk.epoch = epoch
        chunk.seq = seq
        chunk.rows = rows.map { Meridian_V1_Row($0, version: 2) }
        chunk.last = true
        chunk.resnapshot = resnapshot
        return .with { $0.kind = .snapshotChunk(chunk) }
    }

    /// Reconnects without answering: the Hello the context sent, and the Welcome fed back.
    func reconnect(_ harness: Harness, welcomeSeq: Int64) async throws -> (
        hello: Meridian_V1_Hello, outbound: AsyncStream<Meridian_V1_SyncRequest>.Continuation
    ) {
        let (stream, continuation) = AsyncStream<Meridian_V1_SyncRequest>.makeStream()
        await harness.context.connectionOpened(outbound: continuation)
        var iterator = stream.makeAsyncIterator()
        guard case .hello(let hello)? = await iterator.next()?.kind else {
            Issue.record("the first message of a stream is not Hello")
            throw CancellationError()
        }
        var welcome = Meridian_V1_Welcome()
        welcome.seq = welcomeSeq
        welcome.resumed = true
        welcome.protocolVersion = ProtocolVersion.current
        try await harness.context.receive(.with { $0.kind = .welcome(welcome) })
        return (hello, continuation)
    }

    @Test("after a reconnection, a staged snapshot changes nothing; the one Batch moves every controller at once")
    func reconnection() async throws {
        let harness = try await Harness()
        let (one, two, oneID, twoID) = try await twoControllers(harness)
        let before = one.seq
        #expect(one.rows.map(\.id) == ["a", "x"] && two.rows.map(\.id) == ["b"])
        let logOne = ChangeLog(one)
        let logTwo = ChangeLog(two)
        _ = try await logOne.next()
        _ = try await logTwo.next()
        await harness.disconnect()

        // While disconnected, x moved from category 1 to 2 (seq before+1), then c joined category 1 (before+2).
        let (hello, _) = try await reconnect(harness, welcomeSeq: before + 2)
        #expect(hello.protocolVersion == ProtocolVersion.current)
        #expect(hello.resumeFromSeq == before)
        #expect(hello.subscriptions.map(\.subscriptionID).sorted() == [oneID, twoID].sorted())
        #expect(hello.subscriptions.allSatisfy { $0.resume })
        // The second subscription is re-snapshotted: its chunk is staged and changes nothing.
        try await harness.context.receive(
            chunk(twoID, seq: before + 2, [point("b", "Bravo", 2), point("x", "Xray", 2)]))
        #expect(one.rows.map(\.id) == ["a", "x"] && two.rows.map(\.id) == ["b"])
        #expect(await harness.context.seq == before)

        // One Batch: the first subscription's missed delta and the second's snapshot, applied as one commit.
        try await harness.context.receive(
            batch(
                before + 2, delta(oneID, entered: [point("c", "Charlie", 1)], left: ["x"]),
                delta(twoID, snapshot: true)))
        #expect(one.rows.map(\.id) == ["a", "c"] && two.rows.map(\.id) == ["b", "x"])
        #expect(one.seq == before + 2 && two.seq == before + 2)
        let changeOne = try await logOne.next()
        let changeTwo = try await logTwo.next()
        #expect(changeOne.seq == before + 2 && changeTwo.seq == before + 2)
        #expect(changeOne.changeSet.rowChanges.map(\.operation).sorted() == ["delete", "insert"])
        #expect(changeTwo.changeSet.rowChanges.map(\.operation) == ["insert"])
        #expect(logOne.list.inconsistency(with: one) == nil && logTwo.list.inconsistency(with: two) == nil)
    }

    @Test(
        "a Batch applies its snapshots before its deltas: an older snapshot never overwrites a shared row's newer image"
    )
    func snapshotsBeforeDeltas() async throws {
        let harness = try await Harness()
        let (one, two, oneID, twoID) = try await twoControllers(harness)
        let before = one.seq
        // A third subscription shares x with the first: every row, by title.
        let all = try await harness.container.controller(for: try FetchRequest(entity: "Point", sortedBy: "title"))
        try await harness.pump()
        let allID = try #require(harness.server.subscriptions.keys.first { $0 != oneID && $0 != twoID })
        #expect(all.rows.map(\.id) == ["a", "b", "x"])
        // The first subscription is re-snapshotted at before+1, when x was still in it as "Xray"; at before+2 x moved
        // to category 2 as "X-ray 2". One Batch at before+2 carries the second and third subscriptions' deltas for x
        // first (as a merged batch may), then the first subscription's snapshot and its delta (x left).
        try await harness.context.receive(
            chunk(oneID, seq: before + 1, [point("a", "Alpha", 1), point("x", "Xray", 1)]))
        var update = Meridian_V1_SubscriptionDelta()
        update.subscriptionID = allID
        update.epoch = 1
        update.updated = [Meridian_V1_RowUpdate(point("x", "X-ray 2", 2), version: 3, changed: ["category", "title"])]
        var twoDelta = delta(twoID, entered: [point("x", "X-ray 2", 2)])
        twoDelta.entered = [Meridian_V1_Row(point("x", "X-ray 2", 2), version: 3)]
        try await harness.context.receive(
            batch(before + 2, twoDelta, update, delta(oneID, left: ["x"], snapshot: true)))
        #expect(one.rows.map(\.id) == ["a"])
        #expect(two.rows.map(\.id) == ["b", "x"])
        #expect(all.rows.first { $0.id == "x" }?.values["title"] == "X-ray 2", "an older snapshot image won")
        #expect(two.rows.first { $0.id == "x" }?.values["title"] == "X-ray 2", "an older snapshot image won")
        #expect(await harness.context.version(of: "Point", id: "x") == 3)
    }

    @Test("an update naming no attribute (only the row's version moved) keeps the new version and notifies no one")
    func versionOnlyUpdate() async throws {
        let harness = try await Harness()
        let (one, _, oneID, _) = try await twoControllers(harness)
        let log = ObservationLog(read: { _ = one.rows }, probe: { one.rows.map(\.id) })
        let before = one.seq
        var update = Meridian_V1_SubscriptionDelta()
        update.subscriptionID = oneID
        update.epoch = 1
        update.updated = [Meridian_V1_RowUpdate(point("x", "Xray", 1), version: 9, changed: [])]
        try await harness.context.receive(batch(before + 1, update))
        #expect(one.seq == before + 1)
        #expect(one.rows.map(\.id) == ["a", "x"])
        #expect(await harness.context.version(of: "Point", id: "x") == 9)
        #expect(log.values.isEmpty, "a version-only update notified: \(log.values)")
    }

    @Test("a snapshot older than what the client shows (streamed while Batches went on) never puts an older image back")
    func streamedSnapshotOlderThanShown() async throws {
        let harness = try await Harness()
        let (one, _, oneID, twoID) = try await twoControllers(harness)
        let before = one.seq
        let all = try await harness.container.controller(for: try FetchRequest(entity: "Point", sortedBy: "title"))
        try await harness.pump()
        let allID = try #require(harness.server.subscriptions.keys.first { $0 != oneID && $0 != twoID })
        // At before+1, x moves to category 2 as "X-ray 2": the stream's Batch tells "all" (and the second).
        var update = Meridian_V1_SubscriptionDelta()
        update.subscriptionID = allID
        update.epoch = 1
        update.updated = [Meridian_V1_RowUpdate(point("x", "X-ray 2", 2), version: 3, changed: ["category", "title"])]
        var twoDelta = delta(twoID)
        twoDelta.entered = [Meridian_V1_Row(point("x", "X-ray 2", 2), version: 3)]
        try await harness.context.receive(batch(before + 1, update, twoDelta))
        #expect(all.rows.first { $0.id == "x" }?.values["title"] == "X-ray 2")
        // Then the first subscription's re-snapshot arrives, read at `before` (a streamed snapshot is at the seq its
        // read began), x still in it as "Xray"; the Batch that applies it says x left since.
        try await harness.context.receive(chunk(oneID, seq: before, [point("a", "Alpha", 1), point("x", "Xray", 1)]))
        try await harness.context.receive(batch(before + 2, delta(oneID, left: ["x"], snapshot: true)))
        #expect(one.rows.map(\.id) == ["a"])
        #expect(all.rows.first { $0.id == "x" }?.values["title"] == "X-ray 2", "the older snapshot's image came back")
        #expect(await harness.context.version(of: "Point", id: "x") == 3)
    }

    @Test("a connection lost with a snapshot staged applies nothing; the next Hello resumes from the old seq")
    func lostWhileStaged() async throws {
        let harness = try await Harness()
        let (one, two, _, twoID) = try await twoControllers(harness)
        let before = one.seq
        await harness.disconnect()
        _ = try await reconnect(harness, welcomeSeq: before + 1)
        try await harness.context.receive(chunk(twoID, seq: before + 1, [point("x", "Xray", 2)]))
        await harness.disconnect()
        #expect(one.rows.map(\.id) == ["a", "x"] && two.rows.map(\.id) == ["b"])
        #expect(await harness.context.seq == before)
        let (hello, continuation) = try await reconnect(harness, welcomeSeq: before + 1)
        #expect(hello.resumeFromSeq == before)
        // The staged chunk died with its stream: a Batch naming the snapshot without a new chunk breaks the protocol.
        await #expect(throws: ClientError.self) {
            try await harness.context.receive(batch(before + 1, delta(twoID, snapshot: true)))
        }
        #expect(two.rows.map(\.id) == ["b"])
        continuation.finish()
    }

    @Test("an overflow re-snapshot of every subscription: chunks staged, one Batch applies them all")
    func overflowResnapshot() async throws {
        let harness = try await Harness()
        let (one, two, oneID, twoID) = try await twoControllers(harness)
        let before = one.seq
        // x moves to category 2 and d joins it; the server re-snapshots both subscriptions and answers them together.
        harness.server.commit("Point", [.upsert(point("x", "Xray", 2))])
        harness.server.commit("Point", [.upsert(point("d", "Delta", 2))])
        for chunk in harness.server.chunks(oneID, resnapshot: true) { try await harness.context.receive(chunk) }
        #expect(one.rows.map(\.id) == ["a", "x"] && two.rows.map(\.id) == ["b"], "staged")
        for chunk in harness.server.chunks(twoID, resnapshot: true) { try await harness.context.receive(chunk) }
        #expect(one.rows.map(\.id) == ["a", "x"] && two.rows.map(\.id) == ["b"], "staged")
        #expect(one.seq == before)
        try await harness.context.receive(
            batch(harness.server.seq, delta(oneID, snapshot: true), delta(twoID, snapshot: true)))
        #expect(one.rows.map(\.id) == ["a"] && two.rows.map(\.id) == ["b", "d", "x"])
        #expect(one.seq == harness.server.seq && two.seq == harness.server.seq)
    }

    @Test("a re-snapshot of a controller nobody takes changes from notifies observers only when what it shows changed")
    func resnapshotWithoutChangeObservers() async throws {
        // Without change-set validation and without a change stream or delegate, a reset builds no change set: whether
        // the rows changed is what decides the notification.
        let harness = try await Harness(validatesChangeSets: false)
        let (_, two, _, twoID) = try await twoControllers(harness)
        let log = ObservationLog(read: { _ = two.rows }, probe: { two.rows.map(\.id) })

        // A commit outside the second subscription, then its re-snapshot: the same rows, no notification.
        harness.server.commit("Point", [.upsert(point("a", "Able", 1))])
        for chunk in harness.server.chunks(twoID, resnapshot: true) { try await harness.context.receive(chunk) }
        try await harness.context.receive(batch(harness.server.seq, delta(twoID, snapshot: true)))
        #expect(two.seq == harness.server.seq)
        #expect(log.values.isEmpty, "an unchanged re-snapshot notified: \(log.values)")

        // A row joins it and another changes in place: one notification, with the new rows.
        harness.server.commit("Point", [.upsert(point("d", "Delta", 2)), .upsert(point("b", "Bravo!", 2))])
        for chunk in harness.server.chunks(twoID, resnapshot: true) { try await harness.context.receive(chunk) }
        try await harness.context.receive(batch(harness.server.seq, delta(twoID, snapshot: true)))
        #expect(log.values == [["b", "d"]])
        #expect(two.rows.map { $0["title"] } == [.string("Bravo!"), .string("Delta")])
    }

    @Test("a map region moved offline shows its cached annotations as provisional until the server answers")
    func provisionalRegion() async throws {
        let harness = try await Harness()
        harness.server.commit(
            "Point", [.upsert(point("a", "A", 1, lat: 1, lon: 1)), .upsert(point("b", "B", 1, lat: 5, lon: 5))])
        let map = try await harness.container.mapController(
            for: FetchRequest(entity: "Point"),
            configuration: MapConfiguration(latitude: "latitude", longitude: "longitude"),
            region: MapRegion(south: 0, west: 0, north: 2, east: 2))
        var updates = map.updates().makeAsyncIterator()
        try await harness.connect()
        var update = try #require(try await updates.next())
        while !update.events.contains(where: { $0.id == "a" }) { update = try #require(try await updates.next()) }
        #expect(!update.isProvisional)

        await harness.disconnect()
        try await map.setRegion(MapRegion(south: 0, west: 0, north: 6, east: 6))
        // Offline: only what the cache holds (a) can show; b is unknown here, so this is no state of the store.
        let offline = try #require(try await updates.next())
        #expect(offline.isProvisional)
        #expect(map.annotations.keys.sorted() == ["a"])

        try await harness.connect()
        let answered = try #require(try await updates.next())
        #expect(!answered.isProvisional)
        #expect(answered.events.map { "\($0.kind) \($0.id)" } == ["add b"])
        #expect(map.annotations.keys.sorted() == ["a", "b"])
    }

    @Test("a region moved while its snapshot is staged: what carries the old epoch is dropped, not shown")
    func regionMovedWhileStaged() async throws {
        let harness = try await Harness()
        harness.server.commit(
            "Point",
            [
                .upsert(point("a", "Alpha", 1)), .upsert(point("w", "West", 2, lat: 10, lon: -10)),
                .upsert(point("m", "Middle", 2, lat: 10, lon: 0)), .upsert(point("e", "East", 2, lat: 10, lon: 10)),
            ])
        let one = try await harness.container.controller(
            for: try FetchRequest(entity: "Point", where: "category == 1", sortedBy: "title"))
        let map = try await harness.container.mapController(
            for: try FetchRequest(entity: "Point", sortedBy: "title"),
            region: MapRegion(south: 0, west: -15, north: 20, east: -5))
        try await harness.connect()
        #expect(one.rows.map(\.id) == ["a"] && map.annotations.keys.sorted() == ["w"])
        await harness.disconnect()
        // Offline: the middle region is subscribed afresh on the next connection.
        try await map.setRegion(MapRegion(south: 0, west: -5, north: 20, east: 5))

        let (stream, continuation) = AsyncStream<Meridian_V1_SyncRequest>.makeStream()
        var sent = stream.makeAsyncIterator()
        await harness.context.connectionOpened(outbound: continuation)
        guard case .hello(let hello)? = await sent.next()?.kind else {
            Issue.record("the first message of a stream is not Hello")
            return
        }
        let resumed = try #require(hello.subscriptions.first { $0.resume })
        let middle = try #require(hello.subscriptions.first { !$0.resume })
        var welcome = Meridian_V1_Welcome()
        welcome.seq = harness.server.seq
        welcome.resumed = true
        try await harness.context.receive(.with { $0.kind = .welcome(welcome) })
        // The middle region's snapshot arrives and is staged.
        let seq = harness.server.seq
        try await harness.context.receive(
            chunk(middle.subscriptionID, seq: seq, [point("m", "Middle", 2, lat: 10, lon: 0)], resnapshot: false))
        // The region moves on before a Batch names it: the map is subscribed again under the same id, epoch 2.
        try await map.setRegion(MapRegion(south: 0, west: 5, north: 20, east: 15))
        var again: Meridian_V1_Subscribe?
        while again == nil, let message = await sent.next() {
            if case .subscribe(let subscribe) = message.kind { again = subscribe }
        }
        let east = try #require(again)
        #expect(east.subscriptionID == middle.subscriptionID)

        // The server's group Batch was on its way: it names the middle snapshot at epoch 1, which must not be shown
        // for the east region.
        try await harness.context.receive(
            batch(seq, delta(resumed.subscriptionID), delta(middle.subscriptionID, epoch: 1, snapshot: true)))
        #expect(map.annotations.isEmpty, "the middle region's snapshot was shown for the east region")
        try await harness.context.receive(
            chunk(east.subscriptionID, epoch: 2, seq: seq, [point("e", "East", 2, lat: 10, lon: 10)], resnapshot: false)
        )
        #expect(map.annotations.isEmpty, "a chunk alone changed what shows")
        try await harness.context.receive(batch(seq, delta(east.subscriptionID, epoch: 2, snapshot: true)))
        #expect(map.annotations.keys.sorted() == ["e"])
        continuation.finish()
    }
}
