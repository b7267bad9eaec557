import GRDB
import MeridianCore
import Testing

@testable import MeridianStore

@Suite struct RetentionTests {
    @Test(
        "pruning by count answers too-old before the pruned point and changes after it",
        arguments: StoreVariant.allCases)
    func pruneByCount(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            for i in 0..<10 { try await store.apply([.insert("Tag", id: "t\(i)", ["name": "n"])]) }
            let pruned = try await store.prune(keepingLast: 4)
            #expect(pruned == PruneResult(prunedThrough: 6, removed: 6))
            #expect(try await store.changes(after: 5) == .tooOld(prunedThrough: 6))
            #expect(try await store.changes(after: 0) == .tooOld(prunedThrough: 6))
            let batch = try await allChanges(store, after: 6)
            #expect(batch.changes.map(\.seq) == [7, 8, 9, 10])
            // Pruning again with a larger count removes nothing and never goes back.
            #expect(try await store.prune(keepingLast: 8) == PruneResult(prunedThrough: 6, removed: 0))
        }
    }

    @Test(
        "pruning by age removes what is older; seqs are never reused after pruning everything",
        arguments: StoreVariant.allCases)
    func pruneByAge(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            for i in 0..<5 { try await store.apply([.insert("Tag", id: "t\(i)", ["name": "n"])]) }
            #expect(try await store.prune(olderThan: .seconds(3600)).removed == 0)
            let all = try await store.prune(olderThan: .zero)
            #expect(all == PruneResult(prunedThrough: 5, removed: 5))
            #expect(try await store.latestSeq() == 5)
            let empty = try await allChanges(store, after: 5)
            #expect(empty.changes.isEmpty && empty.throughSeq == 5 && !empty.hasMore)
            let next = try await store.apply([.update("Tag", id: "t1", ["name": "m"])])
            #expect(next.seq == 6)
        }
    }

    @Test("the pruned point survives reopening the file")
    func prunedPointPersists() async throws {
        let directory = try TemporaryDirectory()
        do {
            let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
            for i in 0..<3 { try await store.apply([.insert("Tag", id: "t\(i)", ["name": "n"])]) }
            try await store.prune(keepingLast: 1)
            try store.close()
        }
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        #expect(try await store.changes(after: 1) == .tooOld(prunedThrough: 2))
        #expect(try await store.latestSeq() == 3)
        try store.close()
    }

    @Test("changes can be limited and filtered by entity; a cut batch says so", arguments: StoreVariant.allCases)
    func limitAndFilter(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            try await store.apply([
                .insert("Tag", id: "t1", ["name": "a"]), .insert("Item", id: "i1", ["title": "x"]),
                .insert("Tag", id: "t2", ["name": "b"]), .insert("Item", id: "i2", ["title": "y"]),
            ])
            let first = try await allChanges(store, after: 0).changes
            #expect(first.count == 4)
            let cut = try await allChanges(store, after: 0, entities: nil)
            #expect(!cut.hasMore && cut.throughSeq == 4)
            guard case .changes(let limited) = try await store.changes(after: 0, limit: 3) else {
                Issue.record("expected changes")
                return
            }
            #expect(limited.hasMore && limited.throughSeq == 3 && limited.changes.count == 3)
            let tags = try await allChanges(store, after: 0, entities: ["Tag"])
            #expect(tags.changes.map(\.id) == ["t1", "t2"] && tags.throughSeq == 4 && !tags.hasMore)
            // Other limits reuse the cached statement with their own bound value.
            guard case .changes(let one) = try await store.changes(after: 1, limit: 1) else {
                Issue.record("expected changes")
                return
            }
            #expect(one.changes.map(\.seq) == [2] && one.hasMore && one.throughSeq == 2)
        }
    }

    @Test(
        "a feed transaction whose body throws is ended: the feed's next reads see later commits",
        arguments: StoreVariant.allCases)
    func feedTransactionThatThrows(variant: StoreVariant) async throws {
        struct Stop: Error {}
        try await withStore(variant) { store in
            let feed = try store.changeFeed()
            defer { feed.close() }
            try await store.apply([.insert("Tag", id: "a", ["name": "x"])])
            for round in 0..<2 {
                #expect(throws: StoreError.self) {  // the body's error, wrapped as the feed wraps its reads' errors
                    try feed.withTransaction { transaction in
                        _ = try transaction.changes(after: 0)
                        throw Stop()
                    }
                }
                // Not left inside the read transaction (whose snapshot would hide every later commit).
                if let queue = feed.connection as? DatabaseQueue {
                    #expect(queue.inDatabase { $0.isInsideTransaction } == false)
                }
                let seq = try await store.apply([.insert("Tag", id: "b\(round)", ["name": "y"])]).seq
                #expect(try feed.latestSeq() == seq)
                let seen = try feed.withTransaction { transaction in try transaction.changes(after: seq - 1) }
                guard case .changes(let batch) = seen else {
                    Issue.record("the feed does not see a later commit: \(seen)")
                    return
                }
                #expect(batch.throughSeq == seq)
            }
        }
    }

    @Test("the change feed answers exactly as changes does, too-old included", arguments: StoreVariant.allCases)
    func changeFeed(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            let feed = try store.changeFeed()
            defer { feed.close() }
            for i in 0..<6 { try await store.apply([.insert("Tag", id: "t\(i)", ["name": .string("n\(i)")])]) }
            try await store.apply([.update("Tag", id: "t1", ["name": "m"]), .insert("Item", id: "i", ["title": "x"])])
            try await store.prune(keepingLast: 5)
            for (after, entities, limit) in [
                (Int64(0), Set<String>?.none, Int?.none), (2, nil, nil), (3, nil, nil), (3, ["Tag"], nil),
                (3, nil, 2), (4, ["Item"], 1), (99, nil, nil),
            ] {
                let async = try await store.changes(after: after, entities: entities, limit: limit)
                let now = try feed.changes(after: after, entities: entities, limit: limit)
                #expect(
                    async == now,
                    "after \(after), entities \(String(describing: entities)), limit \(String(describing: limit))")
            }
            #expect(try feed.changes(after: 0) == .tooOld(prunedThrough: 3))
            #expect(try feed.latestSeq() == (try await store.latestSeq()))
            // A commit after the feed opened is seen by its next read.
            let seq = try await store.apply([.insert("Tag", id: "late", ["name": "n"])]).seq
            guard case .changes(let batch) = try feed.changes(after: seq - 1) else {
                Issue.record("the feed does not see a later commit")
                return
            }
            #expect(batch.changes.map(\.id) == ["late"])
        }
    }

    @Test("a seq beyond the store's latest (another store file) is answered too-old")
    func futureSeq() async throws {
        try await withStore(.inMemory) { store in
            let result = try await store.changes(after: 99)
            #expect(result == .tooOld(prunedThrough: 0))
        }
    }
}
