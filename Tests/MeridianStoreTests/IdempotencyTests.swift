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

    @Test("a key reused by a different request is refused, never answered", arguments: StoreVariant.allCases)
    func reusedKey(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            let insert: [WriteOperation] = [.insert("Tag", id: "a", ["name": "Pen"])]
            let first = try await store.apply(insert, idempotencyKey: "k")
            let others: [(operations: [WriteOperation], policy: ConflictPolicy)] = [
                ([.insert("Tag", id: "b", ["name": "Pen"])], .storeWins),
                ([.insert("Tag", id: "a", ["name": "Ink"])], .storeWins),
                (insert, .clientWins),
                (insert + [.insert("Tag", id: "c", ["name": "Cap"])], .storeWins),
            ]
            for (operations, policy) in others {
                let error = await #expect(throws: StoreError.self) {
                    try await store.apply(operations, policy: policy, idempotencyKey: "k")
                }
                #expect(error?.code == .alreadyExists)
                #expect(error?.message.contains("idempotency key \"k\" belongs to another transaction") == true)
            }
            #expect(try await tableState(store, "Tag").keys.sorted() == ["a"])
            // The same request is still answered with the first commit.
            #expect(try await store.apply(insert, idempotencyKey: "k") == first)
            // An insert without an id: its retry matches although the store chose the id.
            let generated: [WriteOperation] = [.insert("Item", ["title": "Gen", "price": 1.0])]
            let made = try await store.apply(generated, idempotencyKey: "g")
            #expect(try await store.apply(generated, idempotencyKey: "g") == made)
        }
    }

    @Test("two requests with one key at once: one is applied, the other refused")
    func reusedKeyAtOnce() async throws {
        try await withStore(.file) { store in
            for round in 0..<20 {
                let results = await withTaskGroup(of: Result<CommitResult, StoreError>.self) { group in
                    for name in ["x", "y"] {
                        group.addTask {
                            do {
                                return .success(
                                    try await store.apply(
                                        [.insert("Tag", id: "\(round)-\(name)", ["name": .string(name)])],
                                        idempotencyKey: "once:\(round)"))
                            } catch {
                                return .failure(error as! StoreError)
                            }
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                let refused = results.compactMap { result -> StoreError? in
                    if case .failure(let error) = result { return error }
                    return nil
                }
                #expect(refused.map(\.code) == [.alreadyExists], "round \(round)")
            }
            let rows = try await tableState(store, "Tag")
            #expect(rows.count == 20)
        }
    }

    @Test("a file whose key table predates digests gets the column; its old keys answer any request")
    func olderTable() async throws {
        let directory = try TemporaryDirectory()
        var store: Store? = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        let first = try await store!.apply([.insert("Tag", id: "a", ["name": "Pen"])], idempotencyKey: "old")
        try store!.close()
        store = nil
        try ChildProcess.sqlite3(
            directory.storePath,
            """
            CREATE TABLE applied_copy AS SELECT key, seq, rows FROM meridian_applied;
            DROP TABLE meridian_applied;
            CREATE TABLE meridian_applied (key TEXT PRIMARY KEY NOT NULL, seq INTEGER NOT NULL, rows TEXT NOT NULL)
                WITHOUT ROWID;
            INSERT INTO meridian_applied SELECT * FROM applied_copy;
            DROP TABLE applied_copy;
            """)
        let reopened = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        #expect(
            try await reopened.apply([.insert("Tag", id: "b", ["name": "Ink"])], idempotencyKey: "old") == first)
        let fresh = try await reopened.apply([.insert("Tag", id: "c", ["name": "Cap"])], idempotencyKey: "new")
        let error = await #expect(throws: StoreError.self) {
            try await reopened.apply([.insert("Tag", id: "d", ["name": "Cap"])], idempotencyKey: "new")
        }
        #expect(error?.code == .alreadyExists)
        #expect(fresh.seq > first.seq)
        try reopened.close()
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

    @Test(
        "a retry of a transaction of a group commit, in the same group or later, is answered with the first answer",
        arguments: [false, true])
    func groupCommit(withFailure: Bool) async throws {
        try await withStore(.file) { store in
            try await store.apply([.insert("Item", id: "existing", ["title": "x"])])
            // Rounds of 16 keyed transactions, each sent twice at once, until a round shares a commit between
            // transactions of different keys (the first round does, on any machine seen so far). With `withFailure`,
            // key 5 also inserts an existing id: its group is committed again with savepoints, and its key, rolled
            // back with it, is not recorded.
            var grouped = false
            for round in 0..<10 where !grouped {
                let operations = { @Sendable (n: Int) -> [WriteOperation] in
                    var operations: [WriteOperation] = [
                        .insert("Item", id: "i\(round)-\(n)", ["title": .string("T\(n)"), "price": 1.0])
                    ]
                    if withFailure, n == 5 { operations.append(.insert("Item", id: "existing", ["title": "dup"])) }
                    return operations
                }
                let results = await withTaskGroup(of: (Int, Result<CommitResult, StoreError>).self) { group in
                    for i in 0..<32 {
                        group.addTask {
                            let n = i % 16
                            do {
                                let result = try await store.apply(operations(n), idempotencyKey: "g:\(round):\(n)")
                                return (i, .success(result))
                            } catch {
                                return (i, .failure(error as! StoreError))
                            }
                        }
                    }
                    return await group.reduce(into: [Int: Result<CommitResult, StoreError>]()) { $0[$1.0] = $1.1 }
                }
                let latest = try await store.latestSeq()
                var firsts: [Int: CommitResult] = [:]
                for n in 0..<16 {
                    if withFailure, n == 5 {
                        for i in [n, n + 16] {
                            guard case .failure(let error) = try #require(results[i]) else {
                                Issue.record("transaction \(i) of round \(round) committed")
                                continue
                            }
                            #expect(error.code == .alreadyExists)
                        }
                        continue
                    }
                    let first = try #require(results[n]).get()
                    // Both answers of the pair are the same commit's: one applied it, the other was answered.
                    #expect(try #require(results[n + 16]).get() == first)
                    #expect(first.rows.map(\.id) == ["i\(round)-\(n)"])
                    let retry = try await store.apply(operations(n), idempotencyKey: "g:\(round):\(n)")
                    #expect(retry == first)
                    firsts[n] = first
                }
                #expect(try await store.latestSeq() == latest)
                if withFailure {
                    // The rejected transaction's key was not recorded: without its failing operation it applies.
                    let again = try await store.apply([operations(5)[0]], idempotencyKey: "g:\(round):5")
                    #expect(again.rows.map(\.kind) == [.insert])
                }
                grouped = Set(firsts.values.map(\.seq)).count < firsts.count
            }
            #expect(grouped, "no round of 32 concurrent transactions was group-committed")
        }
    }

    @Test(
        "keys are compared by their bytes, in one group commit as across commits: a precomposed and a decomposed é are two keys"
    )
    func keysByBytes() async throws {
        try await withStore(.file) { store in
            // Rounds of 16 pairs of keys that Swift's `==` takes for one string and SQLite for two, each pair's two
            // transactions different, all 32 sent at once, until a pair shares a group commit.
            var grouped = false
            for round in 0..<10 where !grouped {
                let key = { @Sendable (i: Int) -> String in
                    (i < 16 ? "caf\u{E9}" : "cafe\u{301}") + ":\(round):\(i % 16)"
                }
                let id = { @Sendable (i: Int) -> String in "\(i < 16 ? "p" : "d")\(round)-\(i % 16)" }
                let insert = { @Sendable (i: Int) -> [WriteOperation] in
                    [.insert("Tag", id: id(i), ["name": .string("\(i)")])]
                }
                let results = await withTaskGroup(of: (Int, Result<CommitResult, StoreError>).self) { group in
                    for i in 0..<32 {
                        group.addTask {
                            do {
                                return (i, .success(try await store.apply(insert(i), idempotencyKey: key(i))))
                            } catch {
                                return (i, .failure(error as! StoreError))
                            }
                        }
                    }
                    return await group.reduce(into: [Int: Result<CommitResult, StoreError>]()) { $0[$1.0] = $1.1 }
                }
                var seqs: [Int: Int64] = [:]
                for i in 0..<32 {
                    let result = try #require(results[i]).get()
                    #expect(result.rows.map(\.id) == [id(i)], "transaction \(i) of round \(round)")
                    // Its retry is answered with its own commit, not its twin's.
                    #expect(try await store.apply(insert(i), idempotencyKey: key(i)) == result)
                    seqs[i] = result.seq
                }
                grouped = (0..<16).contains { seqs[$0] == seqs[$0 + 16] }
            }
            #expect(grouped, "no round put a pair of keys in one group commit")
            #expect(try await tableState(store, "Tag").count >= 32)
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
