// MARK: - WriteQueue, alone
//
// The write queue is a value on Core types: these tests stage, save, send, confirm and revert transactions and read
// the overlay, with no server and no actor.

import MeridianCore
import MeridianProto
import Testing

@testable import MeridianClient

@Suite("Write queue")
struct WriteQueueTests {
    let a = RowKey(entity: "Point", id: "a")

    func queue(_ operations: [WriteOperation]...) throws -> WriteQueue {
        var queue = WriteQueue(identity: 0xabc)
        for transaction in operations {
            for operation in transaction { try queue.stage(operation, schema: testSchema) }
            _ = queue.save(policy: .storeWins)
        }
        return queue
    }

    @Test("a save queues the staged operations under a key of the queue's identity, shown through the overlay")
    func save() throws {
        var queue = WriteQueue(identity: 0xabc)
        let empty = queue.save(policy: .storeWins)
        #expect(empty == nil, "nothing staged, nothing saved")
        try queue.stage(.insert("Point", id: "a", ["title": "Alpha"]), schema: testSchema)
        #expect(queue.hasStaged)
        #expect(!queue.isPending(self.a), "staged is not shown")
        let saved = queue.save(policy: .clientWins)
        let transaction = try #require(saved)
        #expect(transaction.id == 1)
        #expect(transaction.idempotencyKey == "abc:1")
        #expect(transaction.policy == .clientWins)
        #expect(!queue.hasStaged)
        #expect(queue.isPending(self.a))
        #expect(
            queue.pendingRow(self.a, over: nil, entity: testSchema.entity(named: "Point"))
                == Row(id: "a", values: ["title": "Alpha", "category": 0]), "an insert starts from the defaults")
        let changes = queue.takeChanges()
        #expect(changes.keys.sorted() == [1])

        queue.rollback()
        try queue.stage(.delete("Point", id: "a"), schema: testSchema)
        queue.rollback()
        #expect(!queue.hasStaged)
    }

    @Test("staging refuses what the schema refuses, and stages nothing")
    func stageValidates() throws {
        var queue = WriteQueue()
        #expect(throws: ClientError.self) {
            try queue.stage(.insert("Point", id: "a", ["nope": 1]), schema: testSchema)
        }
        #expect(throws: ClientError.self) {
            try queue.stage(.update("Nowhere", id: "a", ["title": "x"]), schema: testSchema)
        }
        #expect(!queue.hasStaged)
        try queue.stage(.update("Nowhere", id: "a", ["title": "x"]), schema: nil)
        #expect(queue.hasStaged, "without a schema the server decides")
    }

    @Test("transactions are sent one at a time, in save order, and go back to the queue when sending fails")
    func sending() throws {
        var queue = try self.queue(
            [.insert("Point", id: "a", ["title": "A"])], [.update("Point", id: "a", ["title": "B"])])
        let first = queue.nextToSend()
        #expect(first?.id == 1)
        let second = queue.nextToSend()
        #expect(second == nil, "one in flight")
        queue.requeue(1)
        let retried = queue.nextToSend()
        #expect(retried?.id == 1)
        queue.requeueInFlight()
        let resent = queue.nextToSend()
        #expect(resent?.id == 1)
        let isHeld = queue.committed(1, at: 7)
        #expect(isHeld)
        let next = queue.nextToSend()
        #expect(next?.id == 2)
        let isHeldUnknown = queue.committed(9, at: 7)
        #expect(!isHeldUnknown)
    }

    @Test("a committed transaction is confirmed once its seq is applied, and leaves the overlay")
    func confirm() throws {
        var queue = try self.queue([.insert("Point", id: "a", ["title": "A"])])
        _ = queue.nextToSend()
        queue.committed(1, at: 7)
        _ = queue.takeChanges()
        let early = queue.confirm(upTo: 6)
        #expect(early.confirmed.isEmpty)
        #expect(queue.isPending(self.a))
        let confirmed = queue.confirm(upTo: 7)
        #expect(confirmed.confirmed.map { $0.id } == [1])
        #expect(confirmed.confirmed.map { $0.seq } == [7])
        #expect(confirmed.rows == [self.a])
        #expect(!queue.isPending(self.a))
        #expect(queue.transactions.isEmpty)
        let removal = queue.takeChanges()
        #expect(removal[1].map { $0 == nil } == true, "recorded as removed")
    }

    @Test("a rejected transaction leaves the overlay; a later one on the same row stays")
    func reject() throws {
        var queue = try self.queue(
            [.update("Point", id: "a", ["title": "B"])], [.update("Point", id: "a", ["note": "n"])])
        let server = point("a", "A", 1)
        let entity = testSchema.entity(named: "Point")
        #expect(queue.pendingRow(self.a, over: server, entity: entity) == point("a", "B", 1, note: "n"))
        let revertedRows = queue.reject(1)
        #expect(revertedRows == [self.a])
        let revertedAgain = queue.reject(1)
        #expect(revertedAgain == nil)
        #expect(queue.pendingRow(self.a, over: server, entity: entity) == point("a", "A", 1, note: "n"))
        #expect(queue.transactions.map(\.id) == [2])
    }

    @Test("the overlay folds operations in save order: upsert, clear, delete")
    func overlay() throws {
        let entity = testSchema.entity(named: "Point")
        let server = point("a", "A", 1, note: "n")
        var queue = try self.queue([.upsert("Point", id: "a", ["category": 5])])
        #expect(queue.pendingRow(self.a, over: server, entity: entity) == point("a", "A", 5, note: "n"))
        try queue.stage(.update("Point", id: "a", ["note": .null]), schema: testSchema)
        _ = queue.save(policy: .storeWins)
        #expect(queue.pendingRow(self.a, over: server, entity: entity) == point("a", "A", 5), "null clears")
        try queue.stage(.delete("Point", id: "a"), schema: testSchema)
        _ = queue.save(policy: .storeWins)
        #expect(queue.pendingRow(self.a, over: server, entity: entity) == nil)
        #expect(queue.pendingRow(RowKey(entity: "Point", id: "b"), over: server, entity: entity) == server)
    }

    @Test("a transaction's Apply restores to the same transaction, key and commit seq included")
    func wireRoundTrip() throws {
        var queue = try self.queue(
            [.insert("Point", id: "a", ["title": "A", "latitude": 1.5]), .delete("Point", id: "b")])
        let sent = queue.nextToSend()
        let transaction = try #require(sent)
        let request = Meridian_V1_ApplyRequest(transaction)
        #expect(request.clientTag == "1")
        #expect(request.idempotencyKey == "abc:1")
        let restored = try QueuedTransaction(id: 1, request: request, commitSeq: 12)
        #expect(restored.operations == transaction.operations)
        #expect(restored.policy == transaction.policy)
        #expect(restored.idempotencyKey == transaction.idempotencyKey)
        #expect(restored.phase == .committed(12))

        var other = WriteQueue(identity: 1)
        other.enqueue(restored)
        #expect(other.isPending(self.a))
        let nothing = other.save(policy: .storeWins)
        #expect(nothing == nil)
        try other.stage(.delete("Point", id: "a"), schema: testSchema)
        let fresh = other.save(policy: .storeWins)
        #expect(fresh?.id == 2, "numbers continue after restored transactions")
    }
}
