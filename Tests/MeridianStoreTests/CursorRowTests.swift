// MARK: - A snapshot's rows read in place from the cursor

import Foundation
import GRDB
import MeridianCore
import Synchronization
import Testing

@testable import MeridianStore

@Suite("Cursor rows")
struct CursorRowTests {
    /// What one read gave: each row's id, version and values, and what a `CursorRow` of it gave.
    private struct Read: Equatable {
        var id: String
        var version: Int64
        var values: [String: Value]
    }

    @Test("a cursor row holds the values a snapshot's row holds: every type, nulls, misfits and invalid UTF-8 alike")
    func sameAsRows() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        try await store.apply([
            .insert(
                "Item", id: "a",
                [
                    "title": "Café ☕️", "price": .double(-2.5), "qty": .int(Int64.min), "active": .bool(true),
                    "due": .timestamp(Timestamp(microseconds: 1_700_000_000_000_000)), "data": .bytes([0, 255, 7]),
                    "note": "",
                ]),
            .insert(
                "Item", id: "b", ["title": "", "qty": .int(Int64.max), "active": .bool(false), "data": .bytes([])]),
            .insert("Item", id: "ü-ß", ["title": "plain", "price": .double(3)]),
        ])
        // Values that do not fit their attributes, written behind the store's back: given as stored.
        let queue = try DatabaseQueue(path: directory.storePath)
        try await queue.write { db in
            try db.execute(
                sql: """
                    UPDATE "Item" SET "qty" = 'seven', "price" = x'01', "active" = 2, "due" = 1.5,
                        "note" = CAST(x'41ff42' AS TEXT), "data" = 'text'
                    WHERE "id" = 'b'
                    """)
            try db.execute(sql: #"UPDATE "Item" SET "qty" = 4.0, "active" = 1.0, "price" = 9 WHERE "id" = 'ü-ß'"#)
        }
        try queue.close()

        let rows = Mutex<[Read]>([])
        _ = try await store.streamSnapshot(entity: "Item") { _, event in
            if case .row(let row, let version) = event {
                var values: [String: Value] = [:]
                row.forEachValue { values[$0] = $1 }
                rows.withLock { $0.append(Read(id: row.id, version: version, values: values)) }
            }
            return true
        }
        let cursorRows = Mutex<[Read]>([])
        let ended = Mutex(false)
        _ = try await store.streamSnapshotColumns(entity: "Item") { _, row in
            guard let row else {
                ended.withLock { $0 = true }
                return true
            }
            var values: [String: Value] = [:]
            row.forEachValue { values[$0] = $1.value }
            cursorRows.withLock { $0.append(Read(id: row.id, version: row.version, values: values)) }
            return true
        }
        #expect(ended.withLock { $0 })
        let expected = rows.withLock { $0 }
        #expect(expected.count == 3)
        #expect(cursorRows.withLock { $0 } == expected)
        // The misfits are there as stored, and the invalid byte replaced as a String read replaces it.
        let b = try #require(expected.first { $0.id == "b" })
        #expect(b.values["qty"] == .string("seven"))
        #expect(b.values["price"] == .bytes([1]))
        #expect(b.values["active"] == .int(2))
        #expect(b.values["due"] == .double(1.5))
        #expect(b.values["note"] == .string("A\u{FFFD}B"))
        #expect(b.values["data"] == .string("text"))
        let converted = try #require(expected.first { $0.id == "ü-ß" })
        #expect(converted.values["qty"] == .int(4))
        #expect(converted.values["active"] == .bool(true))
        #expect(converted.values["price"] == .double(9))
    }
}
