import MeridianCore
import MeridianStore
import Testing

@Suite struct GroupCommitTests {
    @Test(
        "concurrent applies share commits; an invalid one fails alone with its own error", .timeLimit(.minutes(5)),
        arguments: StoreVariant.allCases)
    func concurrentApplies(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            try await store.apply([.insert("Item", id: "existing", ["title": "x"])])
            let count = 64
            let results = await withTaskGroup(of: (Int, Result<CommitResult, StoreError>).self) { group in
                for i in 0..<count {
                    group.addTask {
                        // Every 16th transaction inserts a duplicate id after a valid insert: it must fail alone.
                        var operations: [WriteOperation] = [
                            .insert("Item", id: "row-\(i)", ["title": .string("t\(i)")])
                        ]
                        if i % 16 == 5 { operations.append(.insert("Item", id: "existing", ["title": "dup"])) }
                        do {
                            return (i, .success(try await store.apply(operations)))
                        } catch {
                            return (i, .failure(error as! StoreError))
                        }
                    }
                }
                var out: [Int: Result<CommitResult, StoreError>] = [:]
                for await (i, result) in group { out[i] = result }
                return out
            }
            let failed = results.filter { if case .failure = $0.value { true } else { false } }.keys.sorted()
            #expect(failed == [5, 21, 37, 53])
            for i in failed {
                guard case .failure(let error) = results[i]! else { continue }
                #expect(error.code == .alreadyExists)
                #expect(error.operationIndex == 1)
            }
            let items = try await tableState(store, "Item")
            #expect(items.count == 1 + count - failed.count)
            for i in failed { #expect(items["row-\(i)"] == nil) }
            // Each successful transaction's seq is the last seq of its commit: at least its own change's seq.
            let batch = try await allChanges(store)
            let seqOfRow = Dictionary(uniqueKeysWithValues: batch.changes.map { ($0.id, $0.seq) })
            var commitSeqs: Set<Int64> = []
            for (i, result) in results {
                guard case .success(let commit) = result else { continue }
                #expect(commit.seq >= seqOfRow["row-\(i)"]!)
                commitSeqs.insert(commit.seq)
            }
            #expect(batch.changes.map(\.seq) == Array(1...Int64(1 + count - failed.count)))
            // Transactions arriving together were grouped: fewer distinct commit seqs than transactions.
            #expect(commitSeqs.count < count - failed.count)
        }
    }

    @Test(
        "submitted transactions commit in submission order, grouped, each with its own outcome",
        .timeLimit(.minutes(2)), arguments: StoreVariant.allCases)
    func submissionOrder(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            // Each transaction depends on the one before: inserting a row the previous one deleted, deleting the
            // row the previous one inserted. Out of order, they fail with `alreadyExists` or `notFound`.
            var pending: [PendingCommit] = []
            for i in 0..<200 {
                pending.append(
                    try store.submit([
                        i % 2 == 0
                            ? .insert("Item", id: "x", ["title": .string("t\(i)")]) : .delete("Item", id: "x")
                    ]))
            }
            // One that fails among them fails alone, and the next goes on from the state before it.
            pending.append(try store.submit([.delete("Item", id: "x")]))
            pending.append(try store.submit([.insert("Item", id: "x", ["title": "last"])]))
            // An answer may be awaited by several tasks, before and after it is set.
            async let early = pending[199].committed().seq
            async let alsoEarly = pending[199].committed().seq
            var seqs: [Int64] = []
            for (i, commit) in pending.enumerated() {
                do {
                    seqs.append(try await commit.committed().seq)
                    #expect(i != 200, "deleting a deleted row committed")
                } catch let error as StoreError {
                    #expect(i == 200 && error.code == .notFound, "transaction \(i): \(error)")
                }
            }
            #expect(seqs == seqs.sorted(), "answers out of commit order: \(seqs)")
            let (first, second) = try await (early, alsoEarly)
            #expect(first == seqs[199] && second == seqs[199])
            #expect(try await tableState(store, "Item")["x"]?.0["title"] == .string("last"))
            // The log holds the writes in submission order.
            let kinds = try await allChanges(store).changes.map { $0.kind == .delete ? "d" : "i" }
            #expect(kinds == (0..<200).map { $0 % 2 == 0 ? "i" : "d" } + ["i"])
            // Validation runs at submission: an invalid transaction queues nothing.
            #expect(throws: StoreError.self) { try store.submit([.insert("Nope", id: "y", ["title": "t"])]) }
        }
    }

    @Test("with group commit disabled every transaction commits alone")
    func groupCommitDisabled() async throws {
        var configuration = Store.Configuration()
        configuration.maxGroupCommitSize = 1
        try await withStore(.file, configuration: configuration) { store in
            let seqs = try await withThrowingTaskGroup(of: Int64.self) { group in
                for i in 0..<16 {
                    group.addTask { try await store.apply([.insert("Item", id: "r\(i)", ["title": "t"])]).seq }
                }
                return try await group.reduce(into: [Int64]()) { $0.append($1) }
            }
            #expect(seqs.sorted() == Array(1...16))
        }
    }
}
