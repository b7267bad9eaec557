// MARK: - Map model and region mode

import MeridianClient
import MeridianCore
import MeridianProto
import Testing

@Suite("Map model", .timeLimit(.minutes(5)))
struct MapTests {
    let configuration = MapConfiguration(latitude: "latitude", longitude: "longitude", title: "title")
    /// Three placed points along a parallel: west (longitude -10), middle (0) and east (10).
    let westMiddleEast: [RowMutation] = [
        .upsert(point("w", "West", 1, lat: 10, lon: -10)), .upsert(point("m", "Middle", 1, lat: 10, lon: 0)),
        .upsert(point("e", "East", 1, lat: 10, lon: 10)),
    ]

    @Test("dependency rules: move, retitle, nothing, unplaced, and a delete in the same commit")
    func dependencyRules() async throws {
        let harness = try await Harness()
        harness.server.commit(
            "Point",
            [
                .upsert(point("a", "Alpha", 1, lat: 48.8, lon: 2.3)),
                .upsert(point("b", "Bravo", 1)),  // no coordinate
                .upsert(point("c", "Charlie", 1, lat: 95, lon: 2)),  // out of range
            ])
        let controller = try await harness.container.controller(
            for: try FetchRequest(entity: "Point", sortedBy: "title"))
        try await harness.connect()
        var changes = controller.changes().makeAsyncIterator()
        let map = MapModel(self.configuration)
        func events() async throws -> [String] {
            let change = try #require(try await changes.next())
            return map.apply(change.changeSet).map { "\($0.kind) \($0.id)" }
        }
        #expect(try await events() == ["add a", "unplaced b", "unplaced c"])
        #expect(map.unplacedIDs == ["b", "c"])

        try await harness.commit([.upsert(point("a", "Alpha", 1, lat: 48.9, lon: 2.3))])
        #expect(try await events() == ["move a"])
        try await harness.commit([.upsert(point("a", "Alpha!", 1, lat: 48.9, lon: 2.3))])
        #expect(try await events() == ["retitle a"])
        try await harness.commit([.upsert(point("a", "Alpha!", 1, lat: 48.9, lon: 2.3, note: "unrelated"))])
        #expect(try await events() == [], "an attribute the map does not show reports nothing")
        try await harness.commit([.upsert(point("b", "Bravo", 1, lat: 10, lon: 10))])
        #expect(try await events() == ["add b"])
        try await harness.commit([.upsert(point("b", "Bravo", 1, lat: 10, lon: 190))])
        #expect(try await events() == ["remove b", "unplaced b"])
        try await harness.commit([.delete(id: "a"), .upsert(point("c", "Charlie", 1, lat: 45, lon: 2))])
        #expect(try await events() == ["remove a", "add c"], "the delete removes the annotation in the same commit")
        #expect(map.annotations.keys.sorted() == ["c"])
        #expect(map.annotations(in: MapRegion(south: 40, west: 0, north: 50, east: 5)).map(\.id) == ["c"])
        #expect(map.annotations(in: MapRegion(south: 0, west: 0, north: 1, east: 1)).isEmpty)
    }

    @Test("an initial change replaces what the map showed: what it lacks is removed, the rest added or moved")
    func initialReplaces() throws {
        let map = MapModel(self.configuration)
        map.apply(
            ResultsChange(
                seq: 1,
                changeSet: ChangeSet(rowChanges: [
                    .insert(id: "a", to: ListIndexPath(0, 0), element: point("a", "Alpha", 1, lat: 1, lon: 1)),
                    .insert(id: "b", to: ListIndexPath(0, 1), element: point("b", "Bravo", 1, lat: 2, lon: 2)),
                    .insert(id: "u", to: ListIndexPath(0, 2), element: point("u", "Unplaced", 1)),
                ]), cause: .remote))
        // A restarted `follow`: the controller's whole state again, as inserts into an empty list.
        let events = map.apply(
            ResultsChange(
                seq: 2,
                changeSet: ChangeSet(rowChanges: [
                    .insert(id: "b", to: ListIndexPath(0, 0), element: point("b", "Bravo", 1, lat: 3, lon: 3)),
                    .insert(id: "c", to: ListIndexPath(0, 1), element: point("c", "Charlie", 1, lat: 4, lon: 4)),
                ]), cause: .initial))
        #expect(events.map { "\($0.kind) \($0.id)" } == ["remove a", "move b", "add c"])
        #expect(map.annotations.keys.sorted() == ["b", "c"])
        #expect(map.unplacedIDs.isEmpty)
        #expect(map.lastEvents == events)
    }

    @Test("the default configuration is the entity's derived coordinate")
    func derivedCoordinate() throws {
        let entity = try #require(testSchema.entity(named: "Point"))
        let configuration = try #require(MapConfiguration(coordinateOf: entity, title: "title"))
        #expect(configuration == self.configuration)
    }

    @Test("region mode replaces the subscription and reports only what entered or left")
    func regionMode() async throws {
        let harness = try await Harness()
        harness.server.commit("Point", self.westMiddleEast + [.upsert(point("n", "Nowhere", 1))])
        try await harness.connect()
        let map = try await harness.container.mapController(
            for: try FetchRequest(entity: "Point", sortedBy: "title"),
            region: MapRegion(south: 0, west: -15, north: 20, east: 5))
        try await harness.pump()
        var updates = map.updates().makeAsyncIterator()
        let initial = try #require(try await updates.next())
        #expect(initial.events.map { "\($0.kind) \($0.id)" }.sorted() == ["add m", "add w"])

        // Move the region east: w leaves, e enters, m stays and is not reported.
        let task = Task { try await map.setRegion(MapRegion(south: 0, west: -5, north: 20, east: 15)) }
        try await harness.pumpNext()  // waits for the Replace, answers it
        try await task.value
        let moved = try #require(try await updates.next())
        #expect(moved.cause == .replaced)
        #expect(moved.events.map { "\($0.kind) \($0.id)" }.sorted() == ["add e", "remove w"])
        let replaces = harness.server.received.filter { if case .replace = $0.kind { true } else { false } }
        #expect(replaces.count == 1)
        #expect(map.annotations.keys.sorted() == ["e", "m"])
        #expect(map.annotations(in: MapRegion(south: 0, west: 5, north: 20, east: 15)).map(\.id) == ["e"])
    }

    @Test("a region moved before its snapshot arrived ignores the old region's snapshot still on its way")
    func regionMovedBeforeSnapshot() async throws {
        let harness = try await Harness()
        harness.server.commit("Point", self.westMiddleEast)
        try await harness.connect()
        let map = try await harness.container.mapController(
            for: try FetchRequest(entity: "Point", sortedBy: "title"),
            region: MapRegion(south: 0, west: -15, north: 20, east: 5))
        let westSnapshot = try await harness.answerNextInFlight()
        #expect(!westSnapshot.isEmpty)

        // Not live yet: the move unsubscribes and subscribes again, and the west snapshot arrives after it.
        try await map.setRegion(MapRegion(south: 0, west: -5, north: 20, east: 15))
        for answer in westSnapshot { try await harness.context.receive(answer) }
        #expect(map.annotations.isEmpty, "the old region's snapshot was taken for the new one")
        try await harness.pump()
        #expect(map.annotations.keys.sorted() == ["e", "m"])

        let subscribed = harness.server.received.compactMap { message -> String? in
            if case .subscribe(let subscribe) = message.kind { subscribe.subscriptionID } else { nil }
        }
        // The id is reused; the server's epochs (1, then 2) tell the old region's snapshot from the new one's.
        #expect(subscribed.count == 2 && Set(subscribed).count == 1)
    }
}
