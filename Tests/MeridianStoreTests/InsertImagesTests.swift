// MARK: - The rows inserts wrote, kept for the change feed

import Foundation
import MeridianCore
import Testing

@testable import MeridianStore

@Suite("Insert images")
struct InsertImagesTests {
    /// A change as text that tells every value apart, down to a double's sign bit (`-0.0 == 0.0` for `Value`).
    static func exact(_ change: Change) -> String {
        func row(_ row: Row?) -> String {
            guard let row else { return "nil" }
            var values: [String] = []
            row.forEachValue { name, value in
                if case .double(let d) = value {
                    values.append("\(name)=double:\(d.bitPattern)")
                } else {
                    values.append("\(name)=\(value)")
                }
            }
            return "\(row.id){\(values.sorted().joined(separator: ","))}"
        }
        return "\(change.seq) \(change.kind) \(change.entity) \(change.id) v\(change.version) "
            + "before \(row(change.before)) after \(row(change.after))"
    }

    /// The changes after `seq` read by the feed (taking kept images) and by the store (reading every inserted row
    /// back from its table), as exact text.
    static func bothReads(_ store: Store, _ feed: ChangeFeed, after seq: Int64 = 0) async throws -> ([String], [String])
    {
        guard case .changes(let viaFeed) = try feed.changes(after: seq),
            case .changes(let viaTable) = try await store.changes(after: seq)
        else { throw StoreError(.internalError, "a read was too old") }
        return (viaFeed.changes.map(Self.exact), viaTable.changes.map(Self.exact))
    }

    @Test(
        "the feed's inserts take the kept rows, equal bit for bit to the rows read back; defaults are read back",
        arguments: StoreVariant.allCases)
    func sameAsReadBack(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            let feed = try store.changeFeed()
            defer { feed.close() }
            feed.keepInsertImages(true)
            let doubles: [Value] = [
                .double(0), .double(1.5), .double(-2.5), .double(3), .double(1e300), .double(9_007_199_254_740_993),
                .double(4_611_686_018_427_387_904), .double(.leastNonzeroMagnitude), .null,
            ]
            let titles = ["", "plain", "Café ☕️ with a title longer than fifteen bytes", "ü-ß"]
            let data: [Value] = [.bytes([0, 255, 7]), .null]
            // Edges, one per row where they appear (nil: `qty` left out, its default filled in by SQLite, which the
            // store leaves to be read back from the table).
            let edges: [(String, Value?)] = [
                ("price", .double(-0.0)), ("price", .double(.infinity)), ("price", .double(-.infinity)),
                ("data", .bytes([])), ("qty", nil), ("title", .string("")),
            ]
            var inserts = 0
            for i in 0..<doubles.count * 4 {
                var values: [String: Value] = [
                    "title": .string(titles[i % titles.count]), "price": doubles[i % doubles.count],
                    "qty": .int(i % 2 == 0 ? Int64.min + Int64(i) : Int64.max - Int64(i)),
                    "active": i % 3 == 1 ? .null : .bool(i % 2 == 0),
                    "due": .timestamp(Timestamp(microseconds: Int64(i) * 1_000_003 - 5)),
                    "data": data[i % data.count], "note": i % 4 == 0 ? .null : .string("n\(i)"),
                ]
                if i % 3 == 0 {
                    let (name, value) = edges[(i / 3) % edges.count]
                    values[name] = value
                }
                var operations: [WriteOperation] = [.insert("Item", id: "i\(i)", values)]
                // Some rows change again in the same transaction: the insert's image is the row as inserted.
                if i % 4 == 1 { operations.append(.update("Item", id: "i\(i)", ["note": .string("again")])) }
                if i % 6 == 2 { operations.append(.delete("Item", id: "i\(i)")) }
                try await store.apply(operations)
                inserts += 1
                try await store.apply([.insert("Tag", id: "t\(i)", ["name": .string(titles[i % titles.count])])])
                inserts += 1
            }
            let (viaFeed, viaTable) = try await Self.bothReads(store, feed)
            #expect(viaFeed.count == viaTable.count)
            for (a, b) in zip(viaFeed, viaTable) { #expect(a == b) }
            // Every insert took its kept row but those leaving out an attribute with a default.
            let defaulted = (0..<doubles.count * 4).filter { $0 % 3 == 0 && edges[($0 / 3) % edges.count].1 == nil }
            let taken = store.insertImages.takenCount
            #expect(!defaulted.isEmpty && taken == inserts - defaulted.count, "\(taken) of \(inserts)")
        }
    }

    @Test("a transaction rolled back in a group commit leaves no kept rows; a retry's rows are the ones read")
    func rolledBackTransactions() async throws {
        try await withStore(.file) { store in
            let feed = try store.changeFeed()
            defer { feed.close() }
            feed.keepInsertImages(true)
            // Queued at once, so that group commits hold both: the first writes its insert's log entry before its
            // update fails (no such row), and its savepoint rolls back; the second inserts the same id.
            var pending: [PendingCommit] = []
            for i in 0..<60 {
                pending.append(
                    try store.submit([
                        .insert("Tag", id: "k\(i)", ["name": "first"]), .update("Tag", id: "missing", ["name": "x"]),
                    ]))
                pending.append(try store.submit([.insert("Tag", id: "k\(i)", ["name": .string("second \(i)")])]))
            }
            var failed = 0
            for commit in pending {
                do { _ = try await commit.committed() } catch { failed += 1 }
            }
            #expect(failed == 60)
            let (viaFeed, viaTable) = try await Self.bothReads(store, feed)
            #expect(viaFeed == viaTable)
            #expect(viaFeed.count == 60 && viaFeed.allSatisfy { $0.contains("name=\"second") })
            #expect(store.insertImages.takenCount == 60)
        }
    }

    @Test("kept rows are given only to the insert of their seq, entity and id; older ones are dropped")
    func fillMatchesSeqEntityAndID() {
        let images = InsertImages()
        let row = { (id: String) in Row(id: id, values: ["name": .string("kept \(id)")]) }
        func insert(_ seq: Int64, _ entity: String, _ id: String) -> Change {
            Change(
                seq: seq, entity: entity, id: id, kind: .insert, version: 1, before: nil, after: nil,
                changedAttributes: [], committedAt: Timestamp(microseconds: 0))
        }
        images.publish([.init(seq: 1, entity: "Tag", row: row("a"))])
        var early = [insert(1, "Tag", "a")]
        #expect(images.fill(&early) == 0, "not kept before keeping starts")
        images.keep(true)
        images.publish([
            .init(seq: 1, entity: "Tag", row: row("a")), .init(seq: 2, entity: "Tag", row: row("b")),
            .init(seq: 3, entity: "Tag", row: row("c")), .init(seq: 5, entity: "Item", row: row("e")),
            .init(seq: 6, entity: "Tag", row: row("f")),
        ])
        var changes = [
            insert(2, "Tag", "b"), insert(3, "Tag", "other"), insert(4, "Tag", "d"), insert(5, "Tag", "e"),
        ]
        #expect(images.fill(&changes) == 1)
        #expect(changes.map(\.after) == [row("b"), nil, nil, nil])
        // Seq 1 was dropped as older than what was read; seq 6 is still kept.
        var again = [insert(1, "Tag", "a"), insert(6, "Tag", "f")]
        #expect(images.fill(&again) == 1)
        #expect(again.map(\.after) == [nil, row("f")])
        images.publish([.init(seq: 7, entity: "Tag", row: row("g"))])
        images.keep(false)
        var stopped = [insert(7, "Tag", "g")]
        #expect(images.fill(&stopped) == 0)
    }
}
