// MARK: - One-shot calls against a real server on loopback

import Foundation
import MeridianClient
import MeridianCore
import Synchronization
import Testing

@Suite("One-shot calls", .timeLimit(.minutes(2)))
struct OneShotTests {
    @Test("pipelined transactions: answered in order, sending stops at a rejection, the answers say what committed")
    func pipelined() async throws {
        try await TestServer.with { port in
            try await MeridianConnection.with(try ServerAddress(parsing: "127.0.0.1:\(port)")) { connection in
                // 20 transactions of 3 inserts; the 8th repeats an id of the 2nd.
                let transactions: [[WriteOperation]] = (0..<20).map { t in
                    (0..<3).map { r in
                        let id = t == 7 && r == 1 ? "t1-0" : "t\(t)-\(r)"
                        return .insert("Point", id: id, ["title": .string(id), "category": 1])
                    }
                }
                let order = Mutex<[Int]>([])
                let answers = try await connection.applyPipelined(transactions, window: 4) { index, _ in
                    order.withLock { $0.append(index) }
                }
                #expect(order.withLock { $0 } == Array(answers.indices))
                // Everything before the rejection committed, in order; nothing past the window was sent.
                #expect(answers.count >= 8 && answers.count <= 8 + 3, "\(answers.count) answers")
                // (Transactions that shared a group commit share its seq.)
                let seqs = try answers.prefix(7).map { try $0.get().seq }
                #expect(seqs == seqs.sorted() && seqs.allSatisfy { $0 > 0 }, "\(seqs)")
                guard case .failure(let error) = answers[7] else {
                    Issue.record("the 8th transaction was not rejected: \(answers[7])")
                    return
                }
                #expect(error.code == .alreadyExists)
                #expect(error.operationIndex == 1)
                // The store holds exactly the rows of the transactions answered with a commit.
                let committed = Set(
                    answers.indices.filter { (try? answers[$0].get()) != nil }.flatMap { t in
                        (0..<3).map { "t\(t)-\($0)" }
                    })
                let (_, rows) = try await connection.query(try FetchRequest(entity: "Point", where: "category == 1"))
                #expect(Set(rows.map(\.id)) == committed)

                // With no rejection, every transaction is answered.
                let more: [[WriteOperation]] = (0..<50).map {
                    [.insert("Point", id: "m\($0)", ["title": "m", "category": 2])]
                }
                let all = try await connection.applyPipelined(more, window: 8)
                #expect(all.count == 50)
                #expect(all.allSatisfy { (try? $0.get()) != nil })
                #expect(try await connection.applyPipelined([]).isEmpty)
            }
        }
    }

    @Test("pipelined transactions commit in the order they were sent, however many are in flight")
    func pipelinedOrder() async throws {
        try await TestServer.with { port in
            try await MeridianConnection.with(try ServerAddress(parsing: "127.0.0.1:\(port)")) { connection in
                // Each transaction undoes the one before (insert, delete, insert, … of one row): out of order, one
                // fails with `alreadyExists` or `notFound`.
                let transactions: [[WriteOperation]] = (0..<300).map { i in
                    [
                        i % 2 == 0
                            ? .insert("Point", id: "x", ["title": .string("t\(i)"), "category": 1])
                            : .delete("Point", id: "x")
                    ]
                }
                let answers = try await connection.applyPipelined(transactions, window: 64)
                #expect(answers.count == 300)
                let failures = answers.enumerated().compactMap { i, answer -> String? in
                    guard case .failure(let error) = answer else { return nil }
                    return "\(i): \(error.code)"
                }
                #expect(failures.isEmpty, "out of order: \(failures.prefix(5))")
                let seqs = answers.compactMap { try? $0.get().seq }
                #expect(seqs == seqs.sorted(), "answers out of commit order")
                let (_, rows) = try await connection.query(try FetchRequest(entity: "Point", where: "category == 1"))
                #expect(rows.isEmpty)
            }
        }
    }

    @Test("a connection: the schema, a transaction and its retry, a typed rejection, queries")
    func connection() async throws {
        try await TestServer.with { port in
            try await MeridianConnection.with(try ServerAddress(parsing: "127.0.0.1:\(port)")) { connection in
                let (schema, fingerprint) = try await connection.schema()
                #expect(schema.entity(named: "Point") != nil)
                #expect(fingerprint == schema.fingerprint)

                let operations: [WriteOperation] = [
                    .insert("Point", id: "a", ["title": "Alpha", "category": 1]),
                    .insert("Point", id: "b", ["title": "Bravo", "category": 2, "note": .null]),
                ]
                let result = try await connection.apply(operations, idempotencyKey: "one-shot:1")
                #expect(result.seq > 0)
                #expect(result.rows.map(\.id) == ["a", "b"])
                #expect(result.rows.map(\.kind) == [.insert, .insert])
                // A retry after a lost answer is answered with the first commit, not applied again.
                #expect(try await connection.apply(operations, idempotencyKey: "one-shot:1") == result)

                do {
                    _ = try await connection.apply([
                        .update("Point", id: "a", ["title": "Zulu"]), .delete("Point", id: "missing"),
                    ])
                    Issue.record("a delete of a missing row must be rejected")
                } catch let error as ClientError {
                    #expect(error.code == .notFound)
                    #expect(error.operationIndex == 1)
                    #expect(error.id == "missing")
                }

                let (seq, rows) = try await connection.query(
                    try FetchRequest(entity: "Point", where: "category >= 1", sortedBy: "-title"))
                #expect(seq == result.seq)
                #expect(rows.map(\.id) == ["b", "a"])
                #expect(rows[0] == Row(id: "b", values: ["title": "Bravo", "category": 2]))

                let streamed = ChunkCounter()
                let streamedSeq = try await connection.query(try FetchRequest(entity: "Point")) { rows in
                    streamed.add(rows.count)
                }
                #expect(streamedSeq == seq)
                #expect(streamed.total == 2)

                do {
                    _ = try await connection.query(try FetchRequest(entity: "Planet"))
                    Issue.record("an unknown entity must be refused")
                } catch let error as ClientError {
                    #expect(error.code == .unknownEntity)
                }
            }
        }
    }

    @Test("what a query's body throws comes back as it is")
    func bodyError() async throws {
        struct Stop: Error {}
        try await TestServer.with { port in
            try await MeridianConnection.with(try ServerAddress(parsing: "127.0.0.1:\(port)")) { connection in
                _ = try await connection.apply([.insert("Point", id: "a", ["title": "A"])])
                await #expect(throws: Stop.self) {
                    _ = try await connection.query(try FetchRequest(entity: "Point")) { _ in throw Stop() }
                }
            }
        }
    }

    @Test("a server that cannot be reached: unavailable, at once")
    func unreachable() async throws {
        do {
            try await MeridianConnection.with(try ServerAddress(parsing: "127.0.0.1:1")) { connection in
                _ = try await connection.schema()
            }
            Issue.record("port 1 must not answer")
        } catch let error as ClientError {
            #expect(error.code == .unavailable)
        }
    }

    @Test("the container's one-shot write reaches its own subscriptions like anyone else's")
    func containerApply() async throws {
        try await TestServer.with { port in
            try await withConnectedContainer(port: port) { container in
                let points = try await container.controller(
                    for: try FetchRequest(entity: "Point", where: "category == 3"))
                try await points.waitUntilLoaded()
                let result = try await container.apply([.insert("Point", id: "c", ["title": "Charlie", "category": 3])])
                await container.context.waitUntilApplied(result.seq)
                #expect(points.rows.map(\.id) == ["c"])
                #expect(!points.isPending("c"))
            }
        }
    }
}

/// Counts rows handed to a query's body.
private final class ChunkCounter: @unchecked Sendable {
    private var count = 0
    private let lock = NSLock()
    func add(_ n: Int) { self.lock.withLock { self.count += n } }
    var total: Int { self.lock.withLock { self.count } }
}
