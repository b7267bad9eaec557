import MeridianCore
import MeridianStore
import Testing

/// A transaction retried with its idempotency key (its first answer was lost) is answered, not applied twice.
@Suite struct IdempotencyTests {
    @Test("a repeated key answers with the first commit's result and writes nothing", arguments: StoreVariant.allCases)
    func repeatedKey(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            let insert: [WriteOperation] = [.insert("Item", id: "a", ["title": "Pen", "price": 1.0])]
            let first = try await store.apply(insert, idempotencyKey: "client-1:1")
            try await store.apply([.update("Item", id: "a", ["price": 2.0])])
            let latest = try await store.latestSeq()

            // Applied again, the insert would fail (the id exists); with its key it is the first commit's answer.
            let retry = try await store.apply(insert, idempotencyKey: "client-1:1")
            #expect(retry == first)
            #expect(try await store.latestSeq() == latest)
            #expect(try await tableState(store, "Item")["a"]?.0["price"] == .double(2))

            // Without the key, or with another one, it is a new transaction.
            let error = await #expect(throws: StoreError.self) { try await store.apply(insert) }
            #expect(error?.code == .alreadyExists)
            let update: [WriteOperation] = [.update("Item", id: "a", ["price": 3.0], expectedVersion: 2)]
            let second = try await store.apply(update, idempotencyKey: "client-1:2")
            #expect(second.seq > latest)
            #expect(try await store.apply(update, idempotencyKey: "client-1:2") == second)
        }
    }

    @Test("a rejected transaction records no key: its retry runs again")
    func rejectedKeepsNoKey() async throws {
        try await withStore(.file) { store in
            let update: [WriteOperation] = [.update("Item", id: "a", ["price": 2.0])]
            let error = await #expect(throws: StoreError.self) {
                try await store.apply(update, idempotencyKey: "k")
            }
            #expect(error?.code == .notFound)
            try await store.apply([.insert("Item", id: "a", ["title": "Pen", "price": 1.0])])
            let result = try await store.apply(update, idempotencyKey: "k")
            #expect(result.rows.map(\.version) == [2])
        }
    }

    @Test("keys of concurrent transactions in one group commit each answer their own transaction")
    func groupCommit() async throws {
        try await withStore(.file) { store in
            let results = try await withThrowingTaskGroup(of: (Int, CommitResult).self) { group in
                for i in 0..<16 {
                    group.addTask {
                        let op: WriteOperation = .insert("Item", id: "i\(i)", ["title": .string("T\(i)"), "price": 1.0])
                        return (i, try await store.apply([op], idempotencyKey: "g:\(i)"))
                    }
                }
                return try await group.reduce(into: [Int: CommitResult]()) { $0[$1.0] = $1.1 }
            }
            for i in 0..<16 {
                let op: WriteOperation = .insert("Item", id: "i\(i)", ["title": .string("T\(i)"), "price": 1.0])
                let retry = try await store.apply([op], idempotencyKey: "g:\(i)")
                #expect(retry.rows == results[i]?.rows)
                #expect(retry.seq <= results[i]!.seq)
            }
        }
    }

    @Test("a key longer than 128 bytes is a validation error; pruning the commit forgets its key")
    func limitsAndPruning() async throws {
        try await withStore(.file) { store in
            let long = String(repeating: "k", count: 129)
            let error = await #expect(throws: StoreError.self) {
                try await store.apply([.insert("Item", id: "a", ["title": "Pen", "price": 1.0])], idempotencyKey: long)
            }
            #expect(error?.code == .validation)
            #expect(error?.message.contains("129 bytes") == true)

            let insert: [WriteOperation] = [.insert("Item", id: "a", ["title": "Pen", "price": 1.0])]
            try await store.apply(insert, idempotencyKey: "p")
            try await store.apply([.delete("Item", id: "a")])
            try await store.prune(keepingLast: 0)
            // The key is gone with its commit: the same request is a new transaction again.
            let again = try await store.apply(insert, idempotencyKey: "p")
            #expect(again.rows.map(\.kind) == [.insert])
        }
    }
}
