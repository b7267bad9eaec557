import Foundation
import GRDB
import MeridianCore
import Synchronization
import Testing

@testable import MeridianStore

/// The change feed reads the store's own latest commits from memory (`RecentCommits`): what it gets must be what the
/// log gives, seq for seq and value for value (bit for bit for doubles).
@Suite("Recent commits handed to the change feed", .timeLimit(.minutes(3)))
struct RecentCommitsTests {
    static func same(_ a: [Change], _ b: [Change]) -> Bool {
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) {
            guard
                x.seq == y.seq, x.entity == y.entity, x.id == y.id, x.kind == y.kind, x.version == y.version,
                x.changedAttributes == y.changedAttributes, x.committedAt == y.committedAt,
                identical(x.before, y.before), identical(x.after, y.after)
            else { return false }
        }
        return true
    }

    static func values(_ g: inout SplitMix64) -> [String: Value] {
        if Int.random(in: 0..<4, using: &g) == 0 { return CaptureTests.tricky.randomElement(using: &g)! }
        var values: [String: Value] = ["title": .string("t\(Int.random(in: 0..<100, using: &g))")]
        if Bool.random(using: &g) {
            values["price"] = .double(
                [0.0, -0.0, 1.0, -3.0, 0.5, 1e300, Double.random(in: -1e6...1e6, using: &g)].randomElement(using: &g)!)
        }
        if Bool.random(using: &g) { values["qty"] = .int(Int64.random(in: -5...5, using: &g)) }
        if Bool.random(using: &g) { values["active"] = .bool(Bool.random(using: &g)) }
        if Bool.random(using: &g) { values["due"] = .timestamp(Timestamp(microseconds: .random(in: 0...9, using: &g))) }
        if Bool.random(using: &g) {
            values["data"] = .bytes((0..<Int.random(in: 0...3, using: &g)).map { _ in .random(in: 0...255, using: &g) })
        }
        if Bool.random(using: &g) { values["note"] = Bool.random(using: &g) ? .null : .string("") }
        return values
    }

    /// A transaction of one to four operations on a few ids: inserts of ids that may exist, updates and deletes of
    /// ids that may not (so that some transactions fail, alone or inside a group commit), upserts.
    static func transaction(_ g: inout SplitMix64) -> [WriteOperation] {
        (0..<Int.random(in: 1...4, using: &g)).map { _ in
            let id = "i\(Int.random(in: 0..<12, using: &g))"
            let tag = "t\(Int.random(in: 0..<6, using: &g))"
            switch Int.random(in: 0..<9, using: &g) {
            case 0, 1: return .insert("Item", id: id, Self.values(&g))
            case 2: return .update("Item", id: id, Self.values(&g).filter { _ in Bool.random(using: &g) })
            case 3: return .upsert("Item", id: id, Self.values(&g))
            case 4: return .delete("Item", id: id)
            case 5: return .insert("Tag", id: tag, ["name": .string("n\(Int.random(in: 0..<3, using: &g))")])
            case 6: return .upsert("Tag", id: tag, ["name": "u"])
            case 7: return .delete("Tag", id: tag)
            default: return .insert("Item", id: "x\(UInt32.random(in: 0...UInt32.max, using: &g))", Self.values(&g))
            }
        }
    }

    @Test(
        "the feed's changes from memory are the log's, after random transactions and group commits",
        arguments: StoreVariant.allCases)
    func randomTransactions(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            let feed = try store.changeFeed()
            defer { feed.close() }
            var g = SplitMix64(seed: variant == .file ? 17 : 23)
            var seq: Int64 = 0
            var (reads, fromMemory) = (0, 0)
            for round in 0..<150 {
                let transactions = (0..<Int.random(in: 1...4, using: &g)).map { _ in Self.transaction(&g) }
                await withTaskGroup(of: Void.self) { group in
                    for operations in transactions {
                        group.addTask { _ = try? await store.apply(operations) }
                    }
                }
                if round % 10 == 9 {
                    // A transaction repeated with its idempotency key: answered, not applied again.
                    let operations = [WriteOperation.insert("Item", id: "k\(round)", ["title": "k"])]
                    _ = try await store.apply(operations, idempotencyKey: "key\(round)")
                    _ = try await store.apply(operations, idempotencyKey: "key\(round)")
                }
                // Read every few rounds, so that some reads span several commits.
                guard round % 3 == 2 || Bool.random(using: &g) else { continue }
                let hits = store.recentCommits.hits
                try feed.withTransaction { transaction in
                    let log = try transaction.changes(after: seq, entities: nil, limit: nil, recent: false)
                    let memory = try transaction.changes(after: seq, entities: nil, limit: nil, recent: true)
                    guard case .changes(let logged) = log, case .changes(let kept) = memory else {
                        Issue.record("round \(round): \(log) / \(memory)")
                        return
                    }
                    #expect(kept.throughSeq == logged.throughSeq && !kept.hasMore && !logged.hasMore)
                    #expect(Self.same(kept.changes, logged.changes), "round \(round): \(kept) / \(logged)")
                    if logged.throughSeq > seq { reads += 1 }
                    seq = logged.throughSeq
                }
                if store.recentCommits.hits > hits { fromMemory += 1 }
            }
            // Every read of new changes came from memory: nothing here is left to the log (no other writer, no
            // value of another type than its attribute's), not even after a group commit retried with savepoints
            // for a failed transaction, whose entries go with its savepoint.
            #expect(reads > 40)
            #expect(fromMemory == reads, "\(fromMemory) of \(reads) reads from memory")
        }
    }

    /// The fan-out's read of a commit may come before the committer is back from SQLite: the poller of the file's
    /// data version sees the commit as soon as the COMMIT makes it visible, while the COMMIT still runs the WAL's
    /// checkpoint. A read made there (the committer's `afterCommit` hook, right after the COMMIT returned) must find the
    /// commit's entries in memory, whether the group commit went through in one piece or retried with savepoints.
    @Test("a feed that reads a commit the moment it is visible reads it from memory")
    func readAsSoonAsVisible() async throws {
        try await withStore(.file) { store in
            let feed = try store.changeFeed()
            defer { feed.close() }
            struct Seen {
                var seq: Int64 = 0
                var reads = 0
                var fromMemory = 0
                var failures: [String] = []
            }
            let seen = Mutex(Seen())
            store.committer.afterCommit.withLock { hook in
                hook = {
                    let hits = store.recentCommits.hits
                    let from = seen.withLock { $0.seq }
                    do {
                        let (kept, logged) = try feed.withTransaction { transaction in
                            (
                                try transaction.changes(after: from, entities: nil, limit: nil, recent: true),
                                try transaction.changes(after: from, entities: nil, limit: nil, recent: false)
                            )
                        }
                        let memory = store.recentCommits.hits > hits
                        guard case .changes(let batch) = kept, case .changes(let log) = logged else { return }
                        seen.withLock { seen in
                            if !Self.same(batch.changes, log.changes) { seen.failures.append("\(batch) / \(log)") }
                            guard batch.throughSeq > seen.seq else { return }
                            seen.reads += 1
                            if memory { seen.fromMemory += 1 }
                            seen.seq = batch.throughSeq
                        }
                    } catch {
                        seen.withLock { $0.failures.append("\(error)") }
                    }
                }
            }
            defer { store.committer.afterCommit.withLock { $0 = nil } }
            var g = SplitMix64(seed: 41)
            for _ in 0..<60 {
                let transactions = (0..<Int.random(in: 1...4, using: &g)).map { _ in Self.transaction(&g) }
                await withTaskGroup(of: Void.self) { group in
                    for operations in transactions {
                        group.addTask { _ = try? await store.apply(operations) }
                    }
                }
            }
            let result = seen.withLock { $0 }
            #expect(result.failures.isEmpty, "\(result.failures.prefix(3))")
            #expect(result.reads > 30)
            #expect(
                result.fromMemory == result.reads,
                "\(result.reads - result.fromMemory) of \(result.reads) commits read back from the log")
        }
    }

    @Test("a commit by another connection leaves a gap: the feed reads the log, and gets it")
    func otherWriters() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        let feed = try store.changeFeed()
        defer { feed.close() }
        try await store.apply([.insert("Tag", id: "a", ["name": "a"])])
        let other = try DatabaseQueue(path: directory.storePath)
        try await other.write { db in try db.execute(sql: "INSERT INTO \"Tag\" (\"id\", \"name\") VALUES ('b', 'b')") }
        try await store.apply([.insert("Tag", id: "c", ["name": "c"])])
        let hits = store.recentCommits.hits
        let changes = try feed.withTransaction { transaction -> [Change] in
            guard case .changes(let batch) = try transaction.changes(after: 0) else { return [] }
            return batch.changes
        }
        #expect(changes.map(\.id) == ["a", "b", "c"])
        #expect(changes.map { $0.after?["name"] } == ["a", "b", "c"])
        #expect(store.recentCommits.hits == hits, "read from memory across another connection's commit")
        // After the gap, the store's own commits come from memory again.
        try await store.apply([.update("Tag", id: "c", ["name": "c2"])])
        let later = try feed.withTransaction { transaction -> [Change] in
            guard case .changes(let batch) = try transaction.changes(after: 3) else { return [] }
            return batch.changes
        }
        #expect(later.map(\.kind) == [.update] && later.first?.after?["name"] == "c2")
        #expect(store.recentCommits.hits == hits + 1)
    }

    @Test("only while a feed is open, and never more than the capacity")
    func bounds() async throws {
        try await withStore(.file) { store in
            try await store.apply([.insert("Tag", id: "early", ["name": "e"])])
            #expect(!store.recentCommits.isEnabled)
            let feed = try store.changeFeed()
            #expect(store.recentCommits.isEnabled)
            let large = (0...RecentCommits.capacity).map { WriteOperation.insert("Tag", id: "l\($0)", ["name": "l"]) }
            try await store.apply(large)
            let hits = store.recentCommits.hits
            let count = try feed.withTransaction { transaction -> Int in
                guard case .changes(let batch) = try transaction.changes(after: 1) else { return 0 }
                return batch.changes.count
            }
            #expect(count == large.count)
            #expect(store.recentCommits.hits == hits, "a commit larger than the capacity was kept")
            // A reader that skips changes lets go of what was kept for them.
            try await store.apply([.insert("Tag", id: "after", ["name": "a"])])
            #expect(store.recentCommits.count == 1)
            feed.skip(through: try feed.latestSeq())
            #expect(store.recentCommits.count == 0)
            feed.close()
            #expect(!store.recentCommits.isEnabled)
        }
    }

    @Test("kept while any feed of the store is open, not only until the first one closes")
    func twoFeeds() async throws {
        try await withStore(.file) { store in
            let first = try store.changeFeed()
            let second = try store.changeFeed()
            defer { second.close() }
            first.close()
            first.close()  // a second close counts once
            #expect(store.recentCommits.isEnabled)
            try await store.apply([.insert("Tag", id: "a", ["name": "a"])])
            let hits = store.recentCommits.hits
            let changes = try second.withTransaction { transaction -> [Change] in
                guard case .changes(let batch) = try transaction.changes(after: 0) else { return [] }
                return batch.changes
            }
            #expect(changes.map(\.id) == ["a"])
            #expect(store.recentCommits.hits == hits + 1, "the open feed read the log after the other closed")
            second.close()
            #expect(!store.recentCommits.isEnabled)
        }
    }
}
