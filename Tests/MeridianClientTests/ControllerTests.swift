// MARK: - Controller tests (no network: a FakeServer answers through the harness)

import MeridianClient
import MeridianCore
import MeridianProto
import Testing

@Suite("Results controllers fed protocol messages", .timeLimit(.minutes(5)))
struct ControllerTests {
    /// Checks a controller against the server's own evaluation of its request.
    func expectEqualsServer<E>(
        _ controller: ResultsController<E>, _ harness: Harness, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let expected = try harness.server.evaluate(controller.request)
        #expect(controller.rows == expected, sourceLocation: sourceLocation)
        #expect(controller.seq == harness.server.seq, sourceLocation: sourceLocation)
    }

    @Test("a snapshot in chunks, then enter, leave, move and update across sections")
    func enterLeaveMoveUpdate() async throws {
        let harness = try await Harness()
        harness.server.commit(
            "Point",
            [
                .upsert(point("a", "Alpha", 1)), .upsert(point("b", "Bravo", 1)), .upsert(point("c", "Charlie", 2)),
                .upsert(point("d", "Delta", 2)), .upsert(point("e", "Echo", 5)),
            ])
        let request = try FetchRequest(
            entity: "Point", where: "category < 3", sortedBy: "category,title", sectionKey: "category")
        let controller = try await harness.container.controller(for: request)
        let log = ChangeLog(controller)
        _ = try await log.next()  // initial: empty
        try await harness.connect()
        let snapshot = try await log.next()
        #expect(snapshot.cause == .snapshot)
        #expect(controller.sections.map(\.name) == ["1", "2"])
        #expect(controller.sections.map(\.count) == [2, 2])
        try expectEqualsServer(controller, harness)

        // Move across sections: b goes from category 1 to 2.
        try await harness.commit([.upsert(point("b", "Bravo", 2))])
        let move = try await log.next()
        #expect(move.changeSet.rowChanges.map(\.operation) == ["move"])
        #expect(move.changeSet.rowChanges.first?.oldPath == ListIndexPath(0, 1))
        #expect(move.changeSet.rowChanges.first?.newPath == ListIndexPath(1, 0))

        // Update in place: c's note changes.
        try await harness.commit([.upsert(point("c", "Charlie", 2, note: "hi"))])
        let update = try await log.next()
        #expect(update.changeSet.rowChanges.map(\.operation) == ["update"])
        #expect(update.changeSet.rowChanges.first?.changed == ["note"])

        // Enter (e moves into the predicate) and leave (a leaves it, emptying section 1) in one commit.
        try await harness.commit([.upsert(point("e", "Echo", 0)), .upsert(point("a", "Alpha", 9))])
        let both = try await log.next()
        #expect(Set(both.changeSet.rowChanges.map(\.operation)) == ["insert", "delete"])
        #expect(both.changeSet.deletedSections == [0])
        #expect(both.changeSet.insertedSections.map(\.index) == [0])
        #expect(controller.sections.map(\.name) == ["0", "2"])
        try expectEqualsServer(controller, harness)
        #expect(log.list.inconsistency(with: controller) == nil)
        #expect(await harness.context.changeSetValidationFailures.isEmpty)
    }

    @Test("the fault trap: an update brings a row into the predicate, then out of it")
    func faultTrap() async throws {
        let harness = try await Harness()
        harness.server.commit("Point", [.upsert(point("x", "Xray", 7)), .upsert(point("y", "Yankee", 1))])
        let controller = try await harness.container.controller(
            for: try FetchRequest(entity: "Point", where: "category == 1", sortedBy: "title"))
        let log = ChangeLog(controller)
        _ = try await log.next()
        try await harness.connect()
        _ = try await log.next()
        #expect(controller.rows.map(\.id) == ["y"])

        try await harness.commit([.upsert(point("x", "Xray", 1))])
        let entered = try await log.next()
        #expect(
            entered.changeSet.rowChanges == [.insert(id: "x", to: ListIndexPath(0, 0), element: point("x", "Xray", 1))])

        try await harness.commit([.upsert(point("x", "Xray", 3))])
        let left = try await log.next()
        #expect(left.changeSet.rowChanges == [.delete(id: "x", from: ListIndexPath(0, 0))])
        #expect(controller.rows.map(\.id) == ["y"])
        try expectEqualsServer(controller, harness)
    }

    @Test("three controllers on one cache are at the same seq, one of them narrowing another locally")
    func threeControllers() async throws {
        let harness = try await Harness()
        for i in 0..<20 { harness.server.commit("Point", [.upsert(point("p\(i)", "t\(i % 7)", Int64(i % 4)))]) }
        let all = try await harness.container.controller(for: try FetchRequest(entity: "Point", sortedBy: "title"))
        let sectioned = try await harness.container.controller(
            for: try FetchRequest(
                entity: "Point", where: "category < 2", sortedBy: "-category,title", sectionKey: "category", limit: 6))
        let narrowed = try await harness.container.controller(
            for: try FetchRequest(
                entity: "Point", where: "title BEGINSWITH \"t1\" OR category == 3", sortedBy: "category"),
            as: Row.self, narrowing: all)
        try await harness.connect()
        // Only two network subscriptions: the narrowing controller reuses its parent's.
        #expect(harness.server.subscriptions.count == 2)
        for step in 0..<30 {
            let id = "p\((step * 7) % 25)"
            if step % 5 == 4 {
                try await harness.commit([.delete(id: id)])
            } else {
                try await harness.commit([.upsert(point(id, "t\(step % 9)", Int64(step % 5)))])
            }
            #expect(all.seq == sectioned.seq && sectioned.seq == narrowed.seq)
            try expectEqualsServer(all, harness)
            try expectEqualsServer(sectioned, harness)
            try expectEqualsServer(narrowed, harness)
        }
        #expect(await harness.context.changeSetValidationFailures.isEmpty)
    }

    @Test("a resnapshot after a reconnect is an ordinary change set, not delete-all/insert-all")
    func resnapshot() async throws {
        let harness = try await Harness()
        harness.server.commit("Point", (0..<10).map { .upsert(point("r\($0)", "n\($0)", 1)) })
        let controller = try await harness.container.controller(
            for: try FetchRequest(entity: "Point", sortedBy: "title"))
        let log = ChangeLog(controller)
        _ = try await log.next()
        try await harness.connect()
        _ = try await log.next()
        await harness.disconnect()
        harness.server.silentlySet("Point", point("r3", "zz", 1))
        let subscription = try #require(harness.server.subscriptions.keys.first)
        try await harness.connect()  // resumes: the fake server sends nothing for resumed subscriptions…
        for chunk in harness.server.snapshot(subscription, resnapshot: true) {  // …so force a resnapshot
            try await harness.deliver(chunk)
        }
        let change = try await log.next()
        #expect(change.changeSet.rowChanges.map(\.operation) == ["move"])
        #expect(change.changeSet.rowChanges.first?.id == "r3")
        try expectEqualsServer(controller, harness)
        // The resumed Hello carried the applied seq, and the subscription was re-added with resume.
        let hellos = harness.server.received.compactMap { message -> Meridian_V1_Hello? in
            if case .hello(let hello)? = message.kind { return hello } else { return nil }
        }
        #expect(hellos.count == 2 && hellos[1].hasResumeFromSeq)
        // Each Hello re-adds the subscription: fresh the first time, resumed the second.
        #expect(hellos.map { $0.subscriptions.map(\.resume) } == [[false], [true]])
        #expect(hellos.allSatisfy { $0.protocolVersion == ProtocolVersion.current })
    }

    @Test("typed models: a Codable struct end to end, typed predicates and sort keys")
    func typedModels() async throws {
        let harness = try await Harness()
        harness.server.commit(
            "Point", [.upsert(point("a", "Alpha", 1, lat: 48.5, lon: 2.3)), .upsert(point("b", "Bravo", 2))])
        let request = FetchRequest(
            Point.self, where: Point.Attr.category < 3,
            sortedBy: [.descending(Point.Attr.category), .ascending(Point.Attr.title)], sectionedBy: Point.Attr.category
        )
        let points = try await harness.container.controller(for: request, as: Point.self)
        try await harness.connect()
        #expect(
            points.objects == [
                Point(id: "b", title: "Bravo", category: 2),
                Point(id: "a", title: "Alpha", category: 1, latitude: 48.5, longitude: 2.3),
            ])
        #expect(points.object(at: ListIndexPath(1, 0)).title == "Alpha")
        #expect(points.indexPath(for: "b") == ListIndexPath(0, 0))
        let row = try Point(id: "z", title: "Zulu", category: 4, note: nil).row()
        #expect(row.values["note"] == nil)
        #expect(row["note"] == .null)
        #expect(try Point(row: point("q", "Q", 3)).category == 3)
    }

    @Test(
        "a model that cannot hold every row of its entity is refused when its controller is made, naming the property")
    func modelMismatch() async throws {
        struct MissingOptional: MeridianModel {  // latitude is optional in the schema
            static let entityName = "Point"
            var id: String
            var latitude: Double
        }
        struct Narrow: MeridianModel {  // category is a 64-bit int
            static let entityName = "Point"
            var id: String
            var category: Int32
        }
        struct Unknown: MeridianModel {
            static let entityName = "Point"
            var id: String
            var colour: String
        }
        struct Fits: MeridianModel {  // a subset of the attributes, an extra optional property
            static let entityName = "Point"
            var id: String
            var title: String
            var latitude: Double?
            var nickname: String?
        }
        let harness = try await Harness()
        let cases: [(any Error, String)] = [
            (
                await #expect(throws: ClientError.self) {
                    try await harness.container.controller(for: FetchRequest(entity: "Point"), as: MissingOptional.self)
                }!, "property `latitude` (double?): the attribute is optional; make the property optional"
            ),
            (
                await #expect(throws: ClientError.self) {
                    try await harness.container.controller(for: FetchRequest(entity: "Point"), as: Narrow.self)
                }!, "property `category` (int): Int32 cannot hold every value of the attribute"
            ),
            (
                await #expect(throws: ClientError.self) {
                    try await harness.container.controller(for: FetchRequest(entity: "Point"), as: Unknown.self)
                }!, "property `colour`: the entity has no such attribute"
            ),
        ]
        for (error, message) in cases {
            let error = try #require(error as? ClientError)
            #expect(error.code == .modelMismatch)
            #expect(error.message.hasSuffix(message), "\(error.message)")
        }
        _ = try await harness.container.controller(for: FetchRequest(entity: "Point"), as: Fits.self)
    }

    @Test("a bad predicate is a typed error with its position, before any network")
    func badPredicate() async throws {
        let harness = try await Harness()
        await #expect(throws: ClientError.self) {
            _ = try await harness.container.controller(for: try FetchRequest(entity: "Point", where: "titel == 1"))
        }
        do {
            _ = try await harness.container.controller(for: try FetchRequest(entity: "Point", where: "title == 1"))
            Issue.record("expected a type error")
        } catch let error as ClientError {
            #expect(error.code == .badPredicate)
            #expect(error.position == 9, "the position of the literal that does not fit")
        }
    }
}

/// A main-actor delegate recording the brackets it sees.
@MainActor
final class RecordingDelegate: ResultsControllerDelegate {
    typealias Element = Row
    var calls: [String] = []
    var seenCounts: [Int] = []
    var onChange: (() -> Void)?

    func controllerWillChangeContent(_ controller: ResultsController<Row>) { self.calls.append("will") }
    func controller(_ controller: ResultsController<Row>, didChange change: ResultsChange<Row>) {
        self.calls.append(change.changeSet.rowChanges.map(\.operation).joined(separator: ","))
    }
    func controllerDidChangeContent(_ controller: ResultsController<Row>) {
        self.calls.append("did")
        self.onChange?()
    }
}

@Suite("Delegate delivery", .timeLimit(.minutes(5)))
struct DelegateTests {
    @Test("a main-actor delegate gets will-change, the change set and did-change for each commit, in order")
    @MainActor
    func delegateBrackets() async throws {
        let harness = try await Harness()
        let controller = try await harness.container.controller(
            for: try FetchRequest(entity: "Point", sortedBy: "title"))
        let delegate = RecordingDelegate()
        controller.delegate = delegate
        try await harness.connect()
        try await harness.commit([.upsert(point("a", "A", 1))])
        try await harness.commit([.upsert(point("b", "B", 1))])
        // Delivery hops to the main actor; wait for the second did-change.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            if delegate.calls.count >= 6 {
                done.resume()
            } else {
                delegate.onChange = {
                    guard delegate.calls.count >= 6 else { return }
                    delegate.onChange = nil
                    done.resume()
                }
            }
        }
        #expect(delegate.calls == ["will", "insert", "did", "will", "insert", "did"])
        await controller.close()
    }

    @Test("a wait for a seq not yet applied ends when its task is cancelled; a wait for an applied one returns at once")
    func waitUntilAppliedCancelled() async throws {
        let harness = try await Harness()
        let context = harness.context
        let waiter = Task {
            await context.waitUntilApplied(1_000)
            return await context.seq
        }
        try await Task.sleep(for: .milliseconds(100))
        waiter.cancel()
        // Without the cancellation handler this waits for ever (the suite's time limit cannot end it).
        #expect(await waiter.value < 1_000)
        // Cancelled before it waits: returns at once too.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await context.waitUntilApplied(2_000)
        }
        await early.value
        await context.waitUntilApplied(0)
    }
}
