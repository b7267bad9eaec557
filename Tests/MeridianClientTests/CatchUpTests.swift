// MARK: - Catching up after a reconnection or an overflow, as one commit

import MeridianClient
import MeridianCore
import MeridianProto
import SwiftProtobuf
import Testing

/// The server answers each re-added subscription on its own, at its own seq. Applied one by one, those answers would
/// show states the store never had; the context holds them until every subscription has caught up.
@Suite("Catching up", .timeLimit(.minutes(5)))
struct CatchUpTests {
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

    func batch(_ seq: Int64, _ id: String, entered: [Row] = [], left: [String] = []) -> Meridian_V1_SyncResponse {
        var delta = Meridian_V1_SubscriptionDelta()
        delta.subscriptionID = id
        delta.entered = entered.map { Meridian_V1_Row($0, version: 2) }
        delta.left = left
        var batch = Meridian_V1_Batch()
        batch.seq = seq
        batch.deltas = [delta]
        return .with { $0.kind = .batch(batch) }
    }

    @Test("after a reconnection, controllers stay at the old seq until every subscription caught up, then move once")
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
        let (_, continuation) = AsyncStream<Meridian_V1_SyncRequest>.makeStream()
        await harness.context.connectionOpened(outbound: continuation)
        var welcome = Meridian_V1_Welcome()
        welcome.seq = before + 2
        welcome.resumed = true
        try await harness.context.receive(.with { $0.kind = .welcome(welcome) })
        // The first subscription's catch-up, released at before+1 …
        try await harness.context.receive(batch(before + 1, oneID, left: ["x"]))
        // … a live batch for it …
        try await harness.context.receive(batch(before + 2, oneID, entered: [point("c", "Charlie", 1)]))
        // Held: applied alone, x would be in neither controller, a state the store never had.
        #expect(one.rows.map(\.id) == ["a", "x"] && two.rows.map(\.id) == ["b"])
        #expect(one.seq == before && two.seq == before)
        #expect(await harness.context.seq == before)

        // The second subscription's catch-up, released at before+2: everything applies as one commit.
        try await harness.context.receive(batch(before + 2, twoID, entered: [point("x", "Xray", 2)]))
        #expect(one.rows.map(\.id) == ["a", "c"] && two.rows.map(\.id) == ["b", "x"])
        #expect(one.seq == before + 2 && two.seq == before + 2)
        let changeOne = try await logOne.next()
        let changeTwo = try await logTwo.next()
        #expect(changeOne.seq == before + 2 && changeTwo.seq == before + 2)
        #expect(changeOne.changeSet.rowChanges.map(\.operation).sorted() == ["delete", "insert"])
        #expect(changeTwo.changeSet.rowChanges.map(\.operation) == ["insert"])
        #expect(logOne.list.inconsistency(with: one) == nil && logTwo.list.inconsistency(with: two) == nil)
    }

    @Test("a connection lost while catching up applies nothing held; the next Hello resumes from the old seq")
    func lostWhileCatchingUp() async throws {
        let harness = try await Harness()
        let (one, _, oneID, _) = try await twoControllers(harness)
        let before = one.seq
        await harness.disconnect()
        let (stream, continuation) = AsyncStream<Meridian_V1_SyncRequest>.makeStream()
        await harness.context.connectionOpened(outbound: continuation)
        try await harness.context.receive(batch(before + 1, oneID, left: ["x"]))
        await harness.disconnect()
        #expect(one.rows.map(\.id) == ["a", "x"])
        #expect(await harness.context.seq == before)
        continuation.finish()
        var hello: Meridian_V1_Hello?
        for await message in stream {
            if case .hello(let h) = message.kind { hello = h }
        }
        #expect(hello?.resumeFromSeq == before)
    }

    @Test("an overflow re-snapshot of every subscription is applied as one commit once the last one arrived")
    func overflowResnapshot() async throws {
        let harness = try await Harness()
        let (one, two, oneID, twoID) = try await twoControllers(harness)
        let before = one.seq
        // x moves to category 2, then the server re-snapshots both subscriptions, one at a time.
        harness.server.commit("Point", [.upsert(point("x", "Xray", 2))])
        for chunk in harness.server.snapshot(oneID, resnapshot: true) { try await harness.context.receive(chunk) }
        #expect(one.rows.map(\.id) == ["a", "x"] && two.rows.map(\.id) == ["b"], "held")
        #expect(one.seq == before)
        harness.server.commit("Point", [.upsert(point("d", "Delta", 2))])
        for chunk in harness.server.snapshot(twoID, resnapshot: true) { try await harness.context.receive(chunk) }
        // Both are complete at the last snapshot's seq? The first one's snapshot is at before+1 and nothing touched
        // category 1 since, so both show the store's state at before+2.
        #expect(one.rows.map(\.id) == ["a"] && two.rows.map(\.id) == ["b", "d", "x"])
        #expect(one.seq == harness.server.seq && two.seq == harness.server.seq)
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

    @Test("a region moved while its snapshot is held for the catch-up: that snapshot is dropped, not shown")
    func regionMovedWhileHeld() async throws {
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
        var subscribes: [Meridian_V1_Subscribe] = []
        while subscribes.count < 2, let message = await sent.next() {
            if case .subscribe(let subscribe) = message.kind { subscribes.append(subscribe) }
        }
        let resumed = try #require(subscribes.first { $0.resume })
        let middle = try #require(subscribes.first { !$0.resume })
        var welcome = Meridian_V1_Welcome()
        welcome.seq = harness.server.seq
        welcome.resumed = true
        try await harness.context.receive(.with { $0.kind = .welcome(welcome) })
        // The middle region's snapshot arrives and is held: the other subscription has not caught up yet.
        var chunk = Meridian_V1_SnapshotChunk()
        chunk.subscriptionID = middle.subscriptionID
        chunk.seq = harness.server.seq
        chunk.rows = [Meridian_V1_Row(point("m", "Middle", 2, lat: 10, lon: 0), version: 1)]
        chunk.last = true
        try await harness.context.receive(.with { $0.kind = .snapshotChunk(chunk) })
        // The region moves on before the catch-up ends: the map is subscribed again, under a new wire id.
        try await map.setRegion(MapRegion(south: 0, west: 5, north: 20, east: 15))
        var again: Meridian_V1_Subscribe?
        while again == nil, let message = await sent.next() {
            if case .subscribe(let subscribe) = message.kind { again = subscribe }
        }
        let east = try #require(again)
        #expect(east.subscriptionID != middle.subscriptionID)

        // The other subscription catches up: the held middle snapshot must not be shown for the east region.
        try await harness.context.receive(batch(harness.server.seq, resumed.subscriptionID))
        #expect(!map.annotations.keys.contains("m"), "the middle region's snapshot was shown for the east region")
        chunk.subscriptionID = east.subscriptionID
        chunk.rows = [Meridian_V1_Row(point("e", "East", 2, lat: 10, lon: 10), version: 1)]
        try await harness.context.receive(.with { $0.kind = .snapshotChunk(chunk) })
        #expect(map.annotations.keys.sorted() == ["e"])
        continuation.finish()
    }
}
