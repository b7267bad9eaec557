// MARK: - Optimistic writes and the persisted cache

import Foundation
import MeridianClient
import MeridianCore
import MeridianProto
import Testing

@Suite("Optimistic writes and the persisted cache", .timeLimit(.minutes(5)))
struct WriteTests {
    @Test("an optimistic insert shows at once, pending, and is confirmed at the server's seq")
    func pendingThenConfirmed() async throws {
        let harness = try await Harness()
        harness.server.commit("Point", [.upsert(point("a", "Alpha", 1))])
        let controller = try await harness.container.controller(
            for: FetchRequest(Point.self, sortedBy: [.ascending(Point.Attr.title)]), as: Point.self)
        try await harness.connect()
        let log = ChangeLog(controller)
        _ = try await log.next()

        try await harness.context.insert(Point(id: "b", title: "Bravo", category: 2))
        let transaction = await harness.context.save()
        let shown = try await log.next()
        #expect(shown.cause == .localWrite)
        #expect(shown.changeSet.rowChanges.map(\.operation) == ["insert"])
        #expect(controller.objects.map(\.id) == ["a", "b"])
        #expect(controller.isPending("b"))
        #expect(controller.seq == harness.server.seq)

        let sent = try #require(try await harness.sendNextTransaction())
        await harness.context.transactionAnswered(sent.id, response: sent.response)
        #expect(controller.isPending("b"), "still pending until the commit's seq is applied")
        try await harness.deliver(sent.batch)
        let confirmed = try await log.next()
        #expect(confirmed.changeSet.isEmpty, "the server's row equals the optimistic one: nothing moves")
        #expect(confirmed.pendingIDs.isEmpty)
        #expect(!controller.isPending("b"))
        #expect(try await transaction.confirmed() == harness.server.seq)
        #expect(controller.rows == (try harness.server.evaluate(controller.request)))
    }

    @Test("an optimistic write shows a double −0.0 as 0.0, as the store holds it and every other client reads it")
    func negativeZeroShownAsStored() async throws {
        let harness = try await Harness()
        let controller = try await harness.container.controller(for: FetchRequest(Point.self), as: Point.self)
        try await harness.connect()
        let log = ChangeLog(controller)
        _ = try await log.next()

        try await harness.context.insert(Point(id: "z", title: "Zero", category: 1, latitude: -0.0, longitude: 1.5))
        _ = await harness.context.save()
        _ = try await log.next()
        let latitude = try #require(controller.objects.first?.latitude)
        #expect(latitude == 0 && latitude.sign == .plus)
        #expect(controller.rows.first?["longitude"] == .double(1.5))
    }

    @Test("a rejected update is reverted with a change set and the server's typed error")
    func pendingThenReverted() async throws {
        let harness = try await Harness()
        harness.server.commit("Point", [.upsert(point("a", "Alpha", 1)), .upsert(point("b", "Bravo", 1))])
        let controller = try await harness.container.controller(
            for: FetchRequest(Point.self, sortedBy: [.ascending(Point.Attr.title)]), as: Point.self)
        try await harness.connect()
        let log = ChangeLog(controller)
        _ = try await log.next()

        try await harness.context.update(Point.self, id: "a", set: Point.Attr.title, to: "Zulu")
        let transaction = await harness.context.save()
        let shown = try await log.next()
        #expect(shown.changeSet.rowChanges.map(\.operation) == ["move"])
        #expect(controller.objects.map(\.title) == ["Bravo", "Zulu"])
        #expect(controller.pendingIDs == ["a"])

        let (id, _) = try #require(await harness.context.nextTransactionToSend())
        var detail = Meridian_V1_ErrorDetail(.conflict, "Point a changed", attributes: ["title"], currentVersion: 4)
        detail.entity = "Point"
        var response = Meridian_V1_ApplyResponse()
        response.outcome = .error(detail)
        await harness.context.transactionAnswered(id, response: response)
        let reverted = try await log.next()
        #expect(reverted.cause == .reverted)
        #expect(reverted.error?.code == .conflict)
        #expect(reverted.changeSet.rowChanges.map(\.operation) == ["move"])
        #expect(controller.objects.map(\.title) == ["Alpha", "Bravo"])
        #expect(controller.pendingIDs.isEmpty)
        do {
            try await transaction.confirmed()
            Issue.record("expected the conflict")
        } catch {
            #expect(error.code == .conflict)
            #expect(error.attributes == ["title"])
            #expect(error.currentVersion == 4)
        }
        #expect(log.list.inconsistency(with: controller) == nil)
    }

    @Test("an insert without an id gets a time-ordered UUID (version 7) from the context, later ones sorting after")
    func generatedIDs() async throws {
        let harness = try await Harness()
        var ids: [String] = []
        for i in 0..<50 {
            ids.append(try await harness.context.insert(into: "Point", values: ["title": .string("p\(i)")]))
        }
        #expect(ids == ids.sorted() && Set(ids).count == ids.count)
        #expect(
            ids.allSatisfy {
                $0.wholeMatch(of: /[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/) != nil
            })
    }

    @Test("writes are checked against the schema as they are staged")
    func stagingValidation() async throws {
        let harness = try await Harness()
        await #expect(throws: ClientError.self) {
            try await harness.context.update("Point", id: "a", values: ["titel": "x"])
        }
        await #expect(throws: ClientError.self) {
            try await harness.context.update("Point", id: "a", values: ["category": "x"])
        }
        await #expect(throws: ClientError.self) { try await harness.context.update("Nope", id: "a", values: [:]) }
        await #expect(throws: ClientError.self) {
            try await harness.context.update("Point", id: "a", values: ["latitude": .double(.nan)])
        }
        #expect(await !harness.context.hasChanges)
    }

    @Test("a persisted cache restores controllers before any network, with its pending writes, then resumes")
    func persistedCache() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/cache.sqlite"
        let server = FakeServer(schema: testSchema)
        server.commit("Point", (0..<8).map { .upsert(point("p\($0)", "t\($0)", Int64($0 % 3))) })
        let request = try FetchRequest(
            entity: "Point", where: "category < 2", sortedBy: "category,title", sectionKey: "category")
        let before: [Row]
        do {
            let harness = try await Harness(server: server, cachePath: path)
            let controller = try await harness.container.controller(for: request)
            try await harness.connect()
            try await harness.commit([.upsert(point("p2", "t2", 0)), .delete(id: "p0")])
            before = controller.rows
            #expect(before == (try server.evaluate(request)))
            await harness.disconnect()
            // Offline write: queued and persisted.
            _ = try await harness.context.insert(into: "Point", id: "new", values: ["title": "fresh", "category": 1])
            await harness.context.save()
            await harness.context.flushToDisk()
        }
        // A new process: the same file, no network.
        let restarted = try await Harness(server: server, cachePath: path)
        let controller = try await restarted.container.controller(for: request)
        #expect(controller.isLoaded)
        #expect(controller.seq == server.seq)
        #expect(controller.rows.filter { $0.id != "new" } == before)
        #expect(controller.isPending("new"))
        #expect(await restarted.context.pendingTransactionCount == 1)
        // Then it resumes: Hello with the saved seq, the subscription re-added with resume.
        try await restarted.connect()
        let hello = try #require(server.received.reversed().first { if case .hello = $0.kind { true } else { false } })
        #expect(hello.hello.resumeFromSeq == server.seq)
        let sent = try #require(try await restarted.sendNextTransaction())
        await restarted.context.transactionAnswered(sent.id, response: sent.response)
        try await restarted.deliver(sent.batch)
        #expect(!controller.isPending("new"))
        #expect(controller.rows == (try server.evaluate(request)))
    }

    @Test("a map's own subscription is not re-added by the next process: it is dropped with the rows only it held")
    func privateSubscriptionsAreNotRestored() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/cache.sqlite"
        let server = FakeServer(schema: testSchema)
        server.commit(
            "Point",
            [
                .upsert(point("shared", "S", 1, lat: 10, lon: 10)),
                .upsert(point("mapped", "M", 2, lat: 10, lon: 10)),
            ])
        let list = try FetchRequest(entity: "Point", where: "category == 1", sortedBy: "title")
        let all = try FetchRequest(entity: "Point", sortedBy: "title")
        // Three processes in turn, each showing the list and a map of its own over the same cache file.
        for _ in 0..<3 {
            let harness = try await Harness(server: server, cachePath: path)
            let controller = try await harness.container.controller(for: list)
            let map = try await harness.container.mapController(for: all)
            try await harness.connect()
            let hello = try #require(
                server.received.reversed().first { if case .hello = $0.kind { true } else { false } })
            let ids = hello.hello.subscriptions.map(\.subscriptionID)
            #expect(ids.count == 2, "the list and this process's map: \(ids)")
            #expect(
                ids.filter { $0.hasPrefix("m-") }.count == 1,
                "this process's map region only; an earlier process's is not re-added: \(ids)")
            try await harness.pump()
            #expect(controller.rows.map(\.id) == ["shared"])
            #expect(map.controller.rows.map(\.id) == ["mapped", "shared"])
            await harness.disconnect()
            await harness.context.flushToDisk()
        }
        // Offline, the next process's cache holds the list's row only: the maps' rows went with their subscriptions.
        let restarted = try await Harness(server: server, cachePath: path)
        await restarted.context.flushToDisk()
        #expect(await restarted.context.cachedRowCount == 1)
    }

    @Test("a transaction keeps one idempotency key through retries and restarts; keys never repeat across contexts")
    func idempotencyKeys() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/cache.sqlite"
        let server = FakeServer(schema: testSchema)
        let key: String
        do {
            let harness = try await Harness(server: server, cachePath: path)
            try await harness.connect()
            _ = try await harness.context.insert(into: "Point", id: "n", values: ["title": "fresh"])
            await harness.context.save()
            let (id, first) = try #require(await harness.context.nextTransactionToSend())
            key = first.idempotencyKey
            #expect(!key.isEmpty)
            // The connection dropped before the answer: the transaction is sent again with the same key, so the
            // server answers it instead of applying it twice.
            await harness.context.transactionFailed(id, error: ClientError(.unavailable, "connection lost"))
            let (again, retry) = try #require(await harness.context.nextTransactionToSend())
            #expect(again == id)
            #expect(retry.idempotencyKey == key)
            await harness.context.transactionFailed(id, error: ClientError(.unavailable, "connection lost"))
            await harness.context.flushToDisk()
        }
        let restarted = try await Harness(server: server, cachePath: path)
        try await restarted.connect()
        let (_, restored) = try #require(await restarted.context.nextTransactionToSend())
        #expect(restored.idempotencyKey == key, "the persisted queue keeps the key")
        _ = try await restarted.context.insert(into: "Point", id: "m", values: ["title": "other"])
        await restarted.context.save()
        let other = try await Harness(server: server)
        _ = try await other.context.insert(into: "Point", id: "o", values: ["title": "other"])
        await other.context.save()
        let (_, fresh) = try #require(await other.context.nextTransactionToSend())
        #expect(fresh.idempotencyKey != key, "another context numbers its transactions under another identity")
    }
}
