// MARK: - Randomized: many remote transactions against a reference evaluation

import MeridianClient
import MeridianCore
import MeridianProto
import Testing

@Suite("Randomized remote transactions", .timeLimit(.minutes(5)))
struct RandomizedTests {
    @Test(
        "10,000 random transactions: every controller equals the query, every change set validates",
        arguments: [7 as UInt64])
    func randomTransactions(seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        let harness = try await Harness()
        let ids = (0..<60).map { "r\($0)" }
        func randomRow(_ id: String) -> Row {
            let lat: Double? =
                Int.random(in: 0..<6, using: &random) == 0 ? nil : Double(Int.random(in: -90...90, using: &random))
            return point(
                id, "t\(Int.random(in: 0..<12, using: &random))", Int64.random(in: 0..<6, using: &random),
                lat: lat, lon: 10, note: Bool.random(using: &random) ? "n" : nil)
        }
        harness.server.commit("Point", ids.prefix(30).map { .upsert(randomRow($0)) })

        let requests = [
            try FetchRequest(
                entity: "Point", where: "category < 3", sortedBy: "category,title", sectionKey: "category"),
            try FetchRequest(entity: "Point", where: "latitude > 0", sortedBy: "-latitude", limit: 8),
            try FetchRequest(entity: "Point", sortedBy: "title,-category", sectionKey: "title"),
        ]
        var controllers: [ResultsController<Row>] = []
        for request in requests { controllers.append(try await harness.container.controller(for: request)) }
        let narrowed = try await harness.container.controller(
            for: try FetchRequest(
                entity: "Point", where: "note != nil AND category >= 1", sortedBy: "-title", sectionKey: nil),
            as: Row.self, narrowing: controllers[2])
        controllers.append(narrowed)
        var lists = controllers.map { ChangeLog($0) }
        for log in lists { _ = try await log.next() }
        try await harness.connect()

        var transactions = 0
        while transactions < 10_000 {
            var mutations: [RowMutation] = []
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let id = ids.randomElement(using: &random)!
                mutations.append(Int.random(in: 0..<5, using: &random) == 0 ? .delete(id: id) : .upsert(randomRow(id)))
            }
            try await harness.commit(mutations)
            transactions += 1
            if transactions % 2_000 == 0 {
                // Now and then: lose the connection, change things unseen, and resnapshot on reconnection.
                await harness.disconnect()
                harness.server.silentlySet("Point", randomRow(ids.randomElement(using: &random)!))
                try await harness.connect()
                for subscription in harness.server.subscriptions.keys.sorted() {
                    for chunk in harness.server.snapshot(subscription, resnapshot: true) {
                        try await harness.deliver(chunk)
                    }
                }
            }
        }
        var finalRows: [[Row]] = []
        for (i, controller) in controllers.enumerated() {
            #expect(controller.seq == harness.server.seq)
            #expect(controller.rows == (try harness.server.evaluate(controller.request)), "controller \(i)")
            finalRows.append(controller.rows)
        }
        // Close the controllers (their streams end), then replay every change into a list model, validating each.
        for controller in controllers.reversed() { await controller.close() }
        for (i, log) in lists.enumerated() {
            try await log.drain()
            #expect(log.list.allElements == finalRows[i], "list \(i)")
        }
        #expect(await harness.context.changeSetValidationFailures.isEmpty)
        lists.removeAll()
    }
}
