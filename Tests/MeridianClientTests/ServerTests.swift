// MARK: - Against a real meridian-server on loopback (enabled once the server is built)

import Foundation
import MeridianClient
import MeridianCore
import MeridianStore
import Testing

@Suite("Against a real server on loopback", .timeLimit(.minutes(5)), .serialized)
struct ServerTests {
    /// Saves the staged writes and waits for the server's commit to be applied locally.
    @discardableResult
    func save(_ container: MeridianContainer, _ stage: @Sendable (CacheContext) async throws -> Void) async throws
        -> Int64
    {
        try await stage(container.context)
        return try await container.context.save().confirmed()
    }

    /// Checks a controller against a direct query, at the same seq.
    func expectMatchesQuery(
        _ controller: ResultsController<Row>, _ container: MeridianContainer,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let (seq, rows) = try await container.query(controller.request)
        await container.context.waitUntilApplied(seq)
        #expect(controller.seq >= seq, sourceLocation: sourceLocation)
        #expect(controller.rows == rows, sourceLocation: sourceLocation)
    }

    @Test("enter, leave, move and update across sections; the fault trap; three controllers on one cache")
    func controllers() async throws {
        try await TestServer.with { port in
            try await withConnectedContainer(port: port) { writer in
                let all = try await writer.controller(for: FetchRequest(entity: "Point"))
                try await all.waitUntilLoaded()
                try await self.save(writer) { context in
                    for i in 0..<12 {
                        try await context.insert(Point(id: "p\(i)", title: "t\(i)", category: i % 4))
                    }
                }
                try await withConnectedContainer(port: port) { reader in
                    let sectioned = try await reader.controller(
                        for: try FetchRequest(
                            entity: "Point", where: "category < 2", sortedBy: "category,title", sectionKey: "category"))
                    let byTitle = try await reader.controller(
                        for: try FetchRequest(entity: "Point", sortedBy: "-title"))
                    let narrowed = try await reader.controller(
                        for: try FetchRequest(entity: "Point", where: "category == 3", sortedBy: "title"), as: Row.self,
                        narrowing: byTitle)
                    for controller in [sectioned, byTitle, narrowed] { try await controller.waitUntilLoaded() }
                    let log = ChangeLog(sectioned)
                    _ = try await log.next()

                    // Move across sections, update in place, the fault trap (in, then out), and a delete.
                    let steps: [@Sendable (CacheContext) async throws -> Void] = [
                        { try await $0.update("Point", id: "p0", values: ["category": 1]) },
                        { try await $0.update("Point", id: "p1", values: ["note": "hello"]) },
                        { try await $0.update("Point", id: "p2", values: ["category": 0]) },
                        { try await $0.update("Point", id: "p2", values: ["category": 3]) },
                        { try await $0.delete("Point", id: "p5") },
                    ]
                    var operations: [[String]] = []
                    for step in steps {
                        let seq = try await self.save(writer, step)
                        await reader.context.waitUntilApplied(seq)
                        operations.append(try await log.next().changeSet.rowChanges.map(\.operation))
                        #expect(sectioned.seq == byTitle.seq && byTitle.seq == narrowed.seq)
                    }
                    #expect(operations == [["move"], ["update"], ["insert"], ["delete"], ["delete"]])
                    for controller in [sectioned, byTitle, narrowed] {
                        try await self.expectMatchesQuery(controller, reader)
                    }
                    #expect(log.list.inconsistency(with: sectioned) == nil)
                    #expect(await reader.context.changeSetValidationFailures.isEmpty)
                }
            }
        }
    }

    @Test("a 10 MiB commit reaches a client that takes 1 MiB messages whole, as one change at its seq")
    func largeCommit() async throws {
        try await TestServer.with { port, store in
            try await withConnectedContainer(port: port, configure: { $0.maxMessageBytes = 1 << 20 }) { container in
                let all = try await container.controller(for: FetchRequest(entity: "Point"))
                let inCategory = try await container.controller(
                    for: try FetchRequest(entity: "Point", where: "category == 1", sortedBy: "id"))
                for controller in [all, inCategory] { try await controller.waitUntilLoaded() }
                let logs = [ChangeLog(all), ChangeLog(inCategory)]
                for log in logs { _ = try await log.next() }
                let title = String(repeating: "m", count: 64 << 10)
                // 160 rows of 64 KiB; 4 of them in category 1 (the second controller's).
                let operations: [WriteOperation] = (0..<160).map {
                    .insert("Point", id: "big\($0)", ["title": .string(title), "category": .int($0 % 40 == 0 ? 1 : 0)])
                }
                let seq = try await store.apply(operations).seq
                let changes = [try await logs[0].next(), try await logs[1].next()]
                #expect(changes.map(\.seq) == [seq, seq])
                #expect(changes.map { $0.changeSet.rowChanges.count } == [160, 4])
                #expect(all.rows.count == 160 && inCategory.rows.count == 4)
                #expect(all.rows.allSatisfy { $0.values["title"] == .string(title) })
                #expect(await container.context.changeSetValidationFailures.isEmpty)
            }
        }
    }

    @Test("map dependency rules and a region move")
    func map() async throws {
        try await TestServer.with { port in
            try await withConnectedContainer(port: port) { writer in
                let all = try await writer.controller(for: FetchRequest(entity: "Point"))
                try await all.waitUntilLoaded()
                try await self.save(writer) { context in
                    try await context.insert(Point(id: "w", title: "West", category: 1, latitude: 10, longitude: -10))
                    try await context.insert(Point(id: "e", title: "East", category: 1, latitude: 10, longitude: 10))
                    try await context.insert(Point(id: "u", title: "Unplaced", category: 1))
                }
                try await withConnectedContainer(port: port) { reader in
                    let map = try await reader.mapController(
                        for: FetchRequest(entity: "Point"),
                        configuration: MapConfiguration(latitude: "latitude", longitude: "longitude", title: "title"),
                        region: MapRegion(south: 0, west: -20, north: 20, east: 5))
                    try await map.controller.waitUntilLoaded()
                    var updates = map.updates().makeAsyncIterator()
                    #expect(try await updates.next()?.events.map { "\($0.kind) \($0.id)" } == ["add w"])

                    let moveSeq = try await self.save(writer) {
                        try await $0.update("Point", id: "w", values: ["latitude": 11.0])
                    }
                    await reader.context.waitUntilApplied(moveSeq)
                    #expect(try await updates.next()?.events.map { "\($0.kind) \($0.id)" } == ["move w"])
                    _ = try await self.save(writer) {
                        try await $0.update("Point", id: "w", values: ["note": "unrelated"])
                    }
                    let retitle = try await self.save(writer) {
                        try await $0.update("Point", id: "w", values: ["title": "Far West"])
                    }
                    await reader.context.waitUntilApplied(retitle)
                    #expect(try await updates.next()?.events.map { "\($0.kind) \($0.id)" } == ["retitle w"])

                    try await map.setRegion(MapRegion(south: 0, west: -5, north: 20, east: 20))
                    let moved = try #require(try await updates.next())
                    #expect(moved.events.map { "\($0.kind) \($0.id)" }.sorted() == ["add e", "remove w"])
                    #expect(map.annotations.keys.sorted() == ["e"])
                }
            }
        }
    }

    @Test("an optimistic write confirmed, one rejected and reverted")
    func optimisticWrites() async throws {
        try await TestServer.with { port in
            try await withConnectedContainer(port: port) { client in
                let points = try await client.controller(
                    for: FetchRequest(Point.self, sortedBy: [.ascending(Point.Attr.title)]), as: Point.self)
                try await points.waitUntilLoaded()
                let log = ChangeLog(points)
                _ = try await log.next()

                // The insert shows at once, pending, then is confirmed at the server's commit: nothing moves.
                try await client.context.insert(Point(id: "a", title: "Alpha", category: 1))
                let first = await client.context.save()
                let shown = try await log.next()
                #expect(shown.cause == .localWrite)
                #expect(shown.changeSet.rowChanges.map(\.operation) == ["insert"])
                #expect(shown.pendingIDs == ["a"])
                let seq = try await first.confirmed()
                let confirmed = try await log.next()
                #expect(confirmed.changeSet.isEmpty)
                #expect(confirmed.pendingIDs.isEmpty)
                #expect(points.seq >= seq && !points.isPending("a"))

                // The update shows at once, pending; the server rejects it and it is reverted with a change set.
                try await client.context.update("Point", id: "a", values: ["title": "Zulu"], expectedVersion: 99)
                let rejected = await client.context.save()
                let optimistic = try await log.next()
                #expect(optimistic.cause == .localWrite)
                #expect(optimistic.changeSet.rowChanges.map(\.operation) == ["update"])
                #expect(optimistic.pendingIDs == ["a"])
                #expect(log.list.allElements.map(\.title) == ["Zulu"])
                do {
                    try await rejected.confirmed()
                    Issue.record("a stale expected version must be rejected")
                } catch let error as ClientError {
                    #expect(error.code == .conflict)
                }
                let reverted = try await log.next()
                #expect(reverted.cause == .reverted)
                #expect(reverted.error?.code == .conflict)
                #expect(reverted.changeSet.rowChanges.map(\.operation) == ["update"])
                #expect(reverted.pendingIDs.isEmpty)
                #expect(log.list.allElements.map(\.title) == ["Alpha"])
                #expect(points.objects.map(\.title) == ["Alpha"])
                #expect(log.list.inconsistency(with: points) == nil)
            }
        }
    }

    @Test("a burst of saves is pipelined and committed in save order; a rejected one among them is reverted alone")
    func burstOfSaves() async throws {
        try await TestServer.with { port in
            try await withConnectedContainer(port: port) { client in
                let points = try await client.controller(for: FetchRequest(entity: "Point", sortedBy: "title"))
                try await points.waitUntilLoaded()
                // 200 transactions saved without waiting, each depending on the one before: insert, delete, insert…
                // of one row; out of order, one would fail with `alreadyExists` or `notFound`. One more, saved after
                // the 101st, expects a version the row never has: rejected, and the next ones go on.
                var saved: [PendingTransaction] = []
                for i in 0..<200 {
                    if i % 2 == 0 {
                        try await client.context.insert(
                            into: "Point", id: "x", values: ["title": .string("t\(i)"), "category": 1])
                    } else {
                        try await client.context.delete("Point", id: "x")
                    }
                    saved.append(await client.context.save())
                    if i == 100 {
                        try await client.context.update(
                            "Point", id: "x", values: ["note": "stale"], expectedVersion: 999)
                        saved.append(await client.context.save())
                    }
                }
                var failures: [String] = []
                var seqs: [Int64] = []
                for (i, transaction) in saved.enumerated() {
                    do throws(ClientError) {
                        seqs.append(try await transaction.confirmed())
                    } catch {
                        failures.append("\(i): \(error.code)")
                    }
                }
                #expect(failures == ["101: conflict"])
                #expect(seqs == seqs.sorted(), "confirmed out of save order")
                // The last one (199) deleted the row; 198 inserted it: the table ends empty.
                try await self.expectMatchesQuery(points, client)
                #expect(points.rows.isEmpty)
                #expect(await client.context.pendingTransactionCount == 0)
            }
        }
    }

    @Test("a restart from a persisted cache shows the cached state at once, then resumes")
    func restartFromCache() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = MeridianContainer.CacheLocation.file(directory + "/cache.sqlite")
        let request = try FetchRequest(entity: "Point", sortedBy: "title")
        try await TestServer.with { port in
            try await withConnectedContainer(port: port) { writer in
                let all = try await writer.controller(for: request)
                try await all.waitUntilLoaded()
                try await self.save(writer) { context in
                    for i in 0..<5 { try await context.insert(Point(id: "c\(i)", title: "c\(i)", category: 0)) }
                }
                let cached: [Row] = try await withConnectedContainer(port: port, cache: cache) { first in
                    let controller = try await first.controller(for: request)
                    try await controller.waitUntilLoaded()
                    try await self.expectMatchesQuery(controller, first)
                    return controller.rows
                }
                let seq = try await self.save(writer) { try await $0.delete("Point", id: "c0") }
                // No network yet: the cached state at once.
                let offline = try await MeridianContainer(.init(server: "127.0.0.1:\(port)", cache: cache))
                let restored = try await offline.controller(for: request)
                #expect(restored.isLoaded && restored.rows == cached)
                // Then resume and catch up.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await offline.run() }
                    await offline.context.waitUntilApplied(seq)
                    try await self.expectMatchesQuery(restored, offline)
                    group.cancelAll()
                }
            }
        }
    }

    @Test("10,000 random remote transactions: every controller equals a direct query, every change set validates")
    func randomized() async throws {
        try await TestServer.with { port in
            try await withConnectedContainer(port: port) { reader in
                let requests = [
                    try FetchRequest(
                        entity: "Point", where: "category < 3", sortedBy: "category,title", sectionKey: "category"),
                    try FetchRequest(entity: "Point", where: "latitude > 0", sortedBy: "-latitude", limit: 8),
                    try FetchRequest(entity: "Point", sortedBy: "title"),
                ]
                var controllers: [ResultsController<Row>] = []
                for request in requests { controllers.append(try await reader.controller(for: request)) }
                for controller in controllers { try await controller.waitUntilLoaded() }
                // Four writers, 2,500 transactions each, on their own rows (the server group-commits them).
                let lastSeqs = try await withThrowingTaskGroup(of: Int64.self) { group in
                    for writerIndex in 0..<4 {
                        group.addTask {
                            try await withConnectedContainer(port: port) { writer in
                                let all = try await writer.controller(for: FetchRequest(entity: "Point"))
                                try await all.waitUntilLoaded()
                                var random = SplitMix64(seed: UInt64(11 + writerIndex))
                                var exists = Set<String>()
                                var last = PendingTransaction?.none
                                for _ in 0..<2_500 {
                                    let id = "r\(writerIndex)-\(Int.random(in: 0..<20, using: &random))"
                                    if exists.contains(id), Int.random(in: 0..<5, using: &random) == 0 {
                                        try await writer.context.delete("Point", id: id)
                                        exists.remove(id)
                                    } else {
                                        let values: [String: Value] = [
                                            "title": .string("t\(Int.random(in: 0..<12, using: &random))"),
                                            "category": .int(Int64.random(in: 0..<6, using: &random)),
                                            "latitude": .double(Double(Int.random(in: -90...90, using: &random))),
                                        ]
                                        try await writer.context.upsert("Point", id: id, values: values)
                                        exists.insert(id)
                                    }
                                    last = await writer.context.save()
                                }
                                return try await #require(last).confirmed()
                            }
                        }
                    }
                    return try await group.reduce(into: [Int64]()) { $0.append($1) }
                }
                await reader.context.waitUntilApplied(lastSeqs.max() ?? 0)
                for controller in controllers { try await self.expectMatchesQuery(controller, reader) }
                #expect(await reader.context.changeSetValidationFailures.isEmpty)
            }
        }
    }
}
