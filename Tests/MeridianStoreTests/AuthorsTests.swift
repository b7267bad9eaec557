import Foundation
import MeridianCore
import MeridianStore
import Testing

/// Every transaction committed with an author records it over exactly its own log entries, also when it shares a
/// group commit with others (some failing, some without an author), and the record goes with the log when pruned.
@Suite struct AuthorsTests {
    static let authors = ["alice", "bob", "carol"]

    /// Transaction `i`: its author (`nil` for every fourth), the rows it inserts and the earlier row it renames, all
    /// with ids that start with the author's name; every 37th also inserts a row that exists, and fails.
    static func transaction(_ i: Int) -> (author: String?, operations: [WriteOperation], fails: Bool) {
        let author = i % 4 == 3 ? nil : Self.authors[i % 3]
        let prefix = author ?? "nobody"
        var operations: [WriteOperation] = [
            .insert("Tag", id: "\(prefix)-\(i)-a", ["name": .string("a")]),
            .insert("Tag", id: "\(prefix)-\(i)-b", ["name": .string("b")]),
            .update("Tag", id: "\(prefix)-seed", ["name": .string("renamed \(i)")]),
            .insert("Tag", id: "\(prefix)-\(i)-c", ["name": .string("c")]),
        ]
        if i % 37 == 0 { operations.append(.insert("Tag", id: "\(prefix)-seed", ["name": .string("again")])) }
        if i % 6 == 0 { operations.append(.delete("Tag", id: "\(prefix)-\(i)-b")) }
        return (author, operations, i % 37 == 0)
    }

    @Test("each change carries the author of its transaction, in group commits too", arguments: StoreVariant.allCases)
    func authorsOfGroupCommits(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            for name in Self.authors + ["nobody"] {
                try await store.apply(
                    [.insert("Tag", id: "\(name)-seed", ["name": .string("seed")])],
                    author: name == "nobody" ? nil : name)
            }
            let failures = await withTaskGroup(of: Bool.self) { group in
                for i in 1...3000 {
                    group.addTask {
                        let (author, operations, fails) = Self.transaction(i)
                        do {
                            try await store.apply(operations, author: author)
                            return fails
                        } catch {
                            return !fails
                        }
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(failures == 0, "transactions failed or succeeded against expectation")

            let log = try await store.authoredChanges()
            let changes = try await store.changes(after: 0)
            guard case .changes(let batch) = changes else {
                Issue.record("the log was pruned")
                return
            }
            #expect(log.map(\.seq) == batch.changes.map(\.seq), "one authored entry per logged change")
            for entry in log {
                let prefix = String(entry.id.prefix { $0 != "-" })
                #expect(entry.author == (prefix == "nobody" ? nil : prefix), "\(entry)")
            }
            #expect(Set(log.compactMap(\.author)) == Set(Self.authors))
            #expect(!log.contains { $0.id.hasSuffix("-37-a") }, "a failed transaction logged nothing")

            let bobs = try await store.authoredChanges(author: "bob")
            #expect(!bobs.isEmpty && bobs == log.filter { $0.author == "bob" })
            let tail = try await store.authoredChanges(after: log[10].seq, limit: 3)
            #expect(tail == Array(log[11..<14]))

            try await store.prune(keepingLast: 5)
            let kept = try await store.authoredChanges()
            #expect(kept == Array(log.suffix(5)))
        }
    }

    /// Without rules, the author scopes idempotency keys: one subject's key neither answers nor blocks another's.
    @Test("idempotency keys are the author's own when there are no rules", arguments: StoreVariant.allCases)
    func keysScopedByAuthor(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            let alice = try await store.apply(
                [.insert("Tag", id: "a1", ["name": .string("a")])], idempotencyKey: "k", author: "alice")
            // bob's transaction with the same key is his own: applied, not answered with alice's rows nor refused.
            let bob = try await store.apply(
                [.insert("Tag", id: "b1", ["name": .string("b")])], idempotencyKey: "k", author: "bob")
            #expect(bob.seq > alice.seq)
            #expect(bob.rows.map(\.id) == ["b1"])
            // alice's retry is answered with her first answer.
            let retry = try await store.apply(
                [.insert("Tag", id: "a1", ["name": .string("a")])], idempotencyKey: "k", author: "alice")
            #expect(retry.seq == alice.seq && retry.rows.map(\.id) == ["a1"])
        }
    }

    @Test("the log of a store file is read by path, read-only, with its authors")
    func readByPath() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        try await store.apply([.insert("Tag", id: "t1", ["name": .string("x")])], author: "alice")
        try await store.apply([.update("Tag", id: "t1", ["name": .string("y")])])
        let log = try Store.authoredChanges(path: directory.storePath)
        #expect(log.map(\.author) == ["alice", nil])
        #expect(log.map(\.kind) == [.insert, .update])
        try store.close()
        #expect(throws: StoreError.self) { try Store.authoredChanges(path: directory.path + "/missing.db") }
    }
}
