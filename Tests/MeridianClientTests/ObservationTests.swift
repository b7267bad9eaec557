// MARK: - Observation: what SwiftUI sees
//
// SwiftUI redraws a view when an `Observable` it read during `body` notifies (it tracks the reads with
// `withObservationTracking`). These tests track the client's observable types the same way, against a real server,
// and count the notifications: one commit must notify a controller, a list model and a map model exactly once, with
// the new state, and a commit that changes nothing they show must not notify them at all.

import Foundation
import MeridianClient
import MeridianCore
import MeridianServer
import MeridianStore
import Observation
import Synchronization
import Testing

/// Records every Observation notification of what `read` reads: after each one it records `probe()` and tracks again
/// at once, so an object that notifies twice for one change is counted twice (a single `withObservationTracking` would
/// hide that: its `onChange` fires once at most).
final class ObservationLog<Value: Sendable>: Sendable {
    private let entries = Mutex<[Value]>([])
    private let read: @Sendable () -> Void
    private let probe: @Sendable () -> Value

    init(read: @escaping @Sendable () -> Void, probe: @escaping @Sendable () -> Value) {
        self.read = read
        self.probe = probe
        self.track()
    }

    /// What `probe` returned at each notification, in order.
    var values: [Value] { self.entries.withLock { $0 } }

    private func track() {
        withObservationTracking {
            self.read()
        } onChange: {
            let value = self.probe()
            self.entries.withLock { $0.append(value) }
            self.track()
        }
    }
}

@Suite("Observation (what SwiftUI sees)", .timeLimit(.minutes(3)), .serialized)
struct ObservationTests {
    /// The query under observation: categories below 3, by title.
    static let request = FetchRequest(
        Point.self, where: Point.Attr.category < 3, sortedBy: [.ascending(Point.Attr.title)])
    static let configuration = MapConfiguration(latitude: "latitude", longitude: "longitude", title: "title")

    /// What a controller showed when it notified.
    struct Shown: Sendable, Equatable {
        var seq: Int64
        var ids: [String]
    }

    /// Saves the staged writes on `writer` and waits until `reader` has applied the commit.
    @discardableResult
    static func commit(
        _ writer: MeridianContainer, reaching reader: MeridianContainer,
        _ stage: @Sendable (CacheContext) async throws -> Void
    ) async throws -> Int64 {
        try await stage(writer.context)
        let seq = try await writer.context.save().confirmed()
        await reader.context.waitUntilApplied(seq)
        return seq
    }

    /// Five points in one transaction: four in the query (three of them placed), one outside it.
    static func insertFive(_ context: CacheContext) async throws {
        try await context.insert(Point(id: "d", title: "Delta", category: 1, latitude: 38.71, longitude: -9.14))
        try await context.insert(Point(id: "a", title: "Alpha", category: 0, latitude: 38.70, longitude: -9.13))
        try await context.insert(Point(id: "c", title: "Charlie", category: 2))
        try await context.insert(Point(id: "b", title: "Bravo", category: 1, latitude: 38.72, longitude: -9.15))
        try await context.insert(Point(id: "x", title: "Xray", category: 9, latitude: 1, longitude: 1))
    }

    @Test("one commit notifies a controller's observers once, with the new state; an unrelated commit not at all")
    func controller() async throws {
        try await TestServer.with { port in
            try await withConnectedContainer(port: port) { writer in
                try await withConnectedContainer(port: port) { reader in
                    let points = try await reader.controller(for: Self.request, as: Point.self)
                    try await points.waitUntilLoaded()
                    // A view reading what a SwiftUI `List` reads; the probe runs inside `onChange`.
                    let log = ObservationLog(
                        read: {
                            _ = points.objects
                            _ = points.sections
                            _ = points.count
                            _ = points.seq
                        },
                        probe: { Shown(seq: points.seq, ids: points.objects.map(\.id)) })

                    // Four rows enter in one commit: one notification, and it already sees them.
                    let first = try await Self.commit(writer, reaching: reader, Self.insertFive)
                    #expect(log.values == [Shown(seq: first, ids: ["a", "b", "c", "d"])])

                    // A commit outside the query moves the seq but changes nothing shown: no notification.
                    let unrelated = try await Self.commit(writer, reaching: reader) { context in
                        try await context.update("Point", id: "x", values: ["title": "X-ray"])
                    }
                    #expect(points.seq >= unrelated)
                    #expect(log.values.count == 1, "a commit the query does not see notifies nobody")

                    // A delete, a move and an update in one commit: one notification.
                    let second = try await Self.commit(writer, reaching: reader) { context in
                        try await context.delete("Point", id: "a")
                        try await context.update("Point", id: "d", values: ["title": "Able"])
                        try await context.update("Point", id: "c", values: ["note": "hello"])
                    }
                    #expect(log.values.count == 2)
                    #expect(log.values.last == Shown(seq: second, ids: ["d", "b", "c"]))

                    // Closing the controller empties it: one more notification.
                    await points.close()
                    #expect(log.values.count == 3)
                    #expect(log.values.last?.ids == [])
                }
            }
        }
    }

    @Test("a snapshot in many large chunks loads whole with no reconnection; an unobserved controller notifies once")
    func largeChunkedSnapshot() async throws {
        // Chunks of 64 KiB: about 800 of these rows each, over the size from which the connection receives a chunk
        // while it decodes the next message; the client validates change sets or not (without, a controller nobody
        // takes changes from is reset without building its change set).
        let body: @Sendable (Int, Store) async throws -> Void = { port, store in
            let count = 6_000
            for start in stride(from: 0, to: count, by: 1_000) {
                try await store.apply(
                    (start..<(start + 1_000)).map { n in
                        .insert(
                            "Point", id: "r\(n)",
                            ["title": .string("row \(count - n)"), "category": .int(Int64(n % 7))])
                    })
            }
            for validates in [false, true] {
                let configure: (inout MeridianContainer.Configuration) -> Void = { $0.validatesChangeSets = validates }
                try await withConnectedContainer(port: port, configure: configure) { container in
                    let statuses = Mutex<[ConnectionStatus]>([])
                    let watcher = Task {
                        for await status in container.connectionStatusUpdates() {
                            statuses.withLock { $0.append(status) }
                        }
                    }
                    defer { watcher.cancel() }
                    let plain = try await container.controller(for: FetchRequest(entity: "Point", sortedBy: "title"))
                    let log = ObservationLog(read: { _ = plain.rows }, probe: { plain.rows.count })
                    let observed = try await container.controller(
                        for: FetchRequest(entity: "Point", where: "category < 5", sortedBy: "-title"))
                    let changes = ChangeLog(observed)
                    try await plain.waitUntilLoaded()
                    try await observed.waitUntilLoaded()
                    for controller in [plain, observed] {
                        let (seq, rows) = try await container.query(controller.request)
                        await container.context.waitUntilApplied(seq)
                        #expect(controller.rows == rows, "validates \(validates)")
                    }
                    #expect(plain.rows.count == count)
                    #expect(log.values == [count], "one notification, with every row: validates \(validates)")
                    for _ in 0..<3 where changes.list.inconsistency(with: observed) != nil {
                        _ = try await changes.next()
                    }
                    #expect(changes.list.inconsistency(with: observed) == nil, "validates \(validates)")
                    let seen = statuses.withLock { $0 }
                    #expect(!seen.contains(.waitingToReconnect), "the stream was reconnected: \(seen)")
                }
            }
        }
        // A heartbeat a second (the client drops a stream silent for three): the test looks for a reconnection, and
        // two cores shared by every suite can leave a stream silent for 600 ms.
        try await TestServer.with(
            configure: {
                $0.snapshotChunkBytes = 64 << 10
                $0.heartbeatInterval = .seconds(1)
            }, body)
    }

    @Test("a list model and a map model notify once per applied change, and its change set is exact")
    func models() async throws {
        try await TestServer.with { port in
            try await withConnectedContainer(port: port) { writer in
                try await withConnectedContainer(port: port) { reader in
                    let points = try await reader.controller(for: Self.request, as: Point.self)
                    try await points.waitUntilLoaded()
                    var changes = points.changes().makeAsyncIterator()
                    // Only this test's task touches the models; `onChange` runs synchronously inside `apply`, on it.
                    nonisolated(unsafe) let list = ListModel(for: points)
                    nonisolated(unsafe) let map = MapModel(Self.configuration)
                    let initial = try #require(try await changes.next())
                    try list.apply(initial)
                    map.apply(initial)
                    let listLog = ObservationLog(read: { _ = list.allElements }, probe: {})
                    let mapLog = ObservationLog(read: { _ = map.annotations }, probe: {})

                    // Four rows enter in one commit: one change, one notification each, right after which the models
                    // show the controller's state; the change set is the inserts at their new paths, nothing else.
                    let first = try await Self.commit(writer, reaching: reader, Self.insertFive)
                    let change = try #require(try await changes.next())
                    let old = list.list
                    try list.apply(change)
                    let events = map.apply(change)
                    #expect(change.seq == first)
                    #expect(listLog.values.count == 1)
                    #expect(mapLog.values.count == 1)
                    #expect(
                        change.changeSet.rowChanges.map(\.description) == [
                            "insert a to [0,0]", "insert b to [0,1]", "insert c to [0,2]", "insert d to [0,3]",
                        ])
                    let smallest = try ChangeSet.between(old: old, new: list.list)
                    #expect(change.changeSet == smallest)
                    #expect(list.lastChangeSet == change.changeSet)
                    #expect(list.allElements == points.objects)
                    #expect(list.seq == first)
                    #expect(events.map { "\($0.kind) \($0.id)" } == ["add a", "add b", "unplaced c", "add d"])
                    #expect(map.annotations.keys.sorted() == ["a", "b", "d"])
                    #expect(map.lastEvents == events)

                    // An attribute the map does not show: the list hears it, the map does not.
                    try await Self.commit(writer, reaching: reader) { context in
                        try await context.update("Point", id: "b", values: ["note": "hello"])
                    }
                    let note = try #require(try await changes.next())
                    try list.apply(note)
                    #expect(map.apply(note).isEmpty)
                    #expect(
                        note.changeSet.rowChanges.map(\.description) == [
                            #"update b from [0,1] to [0,1] changed ["note"]"#
                        ])
                    #expect(listLog.values.count == 2)
                    #expect(mapLog.values.count == 1, "a change the map does not show notifies nobody")

                    // A delete and a coordinate move in one commit: one notification each.
                    try await Self.commit(writer, reaching: reader) { context in
                        try await context.delete("Point", id: "a")
                        try await context.update("Point", id: "d", values: ["latitude": 38.73])
                    }
                    let moved = try #require(try await changes.next())
                    try list.apply(moved)
                    #expect(map.apply(moved).map { "\($0.kind) \($0.id)" } == ["remove a", "move d"])
                    #expect(moved.changeSet.rowChanges.map(\.operation).sorted() == ["delete", "update"])
                    #expect(listLog.values.count == 3)
                    #expect(mapLog.values.count == 2)
                    #expect(list.allElements == points.objects)
                    #expect(map.annotations.keys.sorted() == ["b", "d"])
                    #expect(map.annotations["d"]?.coordinate == Coordinate(latitude: 38.73, longitude: -9.14))
                }
            }
        }
    }

    @Test("a list model follows a controller on the main actor, as a SwiftUI view's task would, with each change set")
    func follow() async throws {
        try await TestServer.with { port in
            try await withConnectedContainer(port: port) { writer in
                try await withConnectedContainer(port: port) { @MainActor reader in
                    let points = try await reader.controller(for: Self.request, as: Point.self)
                    try await points.waitUntilLoaded()
                    let list = ListModel(for: points)
                    let (applied, continuation) = AsyncStream.makeStream(of: ResultsChange<Point>.self)
                    let following = Task { @MainActor in
                        try await list.follow(points) { change in
                            MainActor.preconditionIsolated("follow applies on its caller's actor")
                            continuation.yield(change)
                        }
                    }
                    var changes = applied.makeAsyncIterator()
                    #expect(await changes.next()?.cause == .initial)
                    // The list changes on the main actor only (inside `follow`), where `onChange` runs and re-reads.
                    nonisolated(unsafe) let observed = list
                    let log = ObservationLog(read: { _ = observed.allElements }, probe: {})

                    let seq = try await Self.commit(writer, reaching: reader, Self.insertFive)
                    let change = try #require(await changes.next())
                    #expect(change.seq == seq)
                    #expect(change.changeSet.rowChanges.map(\.operation) == ["insert", "insert", "insert", "insert"])
                    #expect(list.lastChangeSet == change.changeSet)
                    #expect(list.allElements == points.objects)
                    #expect(log.values.count == 1)

                    // Cancelling the task (the view went away) ends the loop without an error.
                    following.cancel()
                    try await following.value
                }
            }
        }
    }
}
