import Foundation
import MeridianCore
import MeridianStore
import Testing

/// Strict equality: same value type and, for doubles, the same bits.
func identical(_ a: Value, _ b: Value) -> Bool {
    switch (a, b) {
    case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
    default: return a.type == b.type && a == b
    }
}

func identical(_ a: Row?, _ b: Row?) -> Bool {
    guard let a, let b else { return a == nil && b == nil }
    return a.id == b.id && a.values.count == b.values.count
        && a.values.allSatisfy { name, value in b.values[name].map { identical(value, $0) } ?? false }
}

@Suite struct CaptureTests {
    static let tricky: [[String: Value]] = [
        [
            "title": "plain", "price": 0.1, "qty": .int(.max), "active": true,
            "due": .timestamp(Timestamp(microseconds: -1)),
            "data": .bytes([0, 255, 1, 0x7f]), "note": "é\"\\\n\u{1}😀 'quote'",
        ],
        [
            "title": "", "price": .double(1.0 / 3), "qty": .int(.min), "active": false,
            "due": .timestamp(Timestamp(microseconds: 1_700_000_000_123_456)),
            "data": .bytes([]),
        ],
        ["title": "inf", "price": .double(.infinity), "qty": 0],
        ["title": "-inf", "price": .double(-.infinity), "qty": 0],
        ["title": "tiny", "price": .double(.leastNonzeroMagnitude), "qty": 0],
        ["title": "huge", "price": .double(.greatestFiniteMagnitude), "qty": 0],
        ["title": "big", "price": .double(Double(bitPattern: 0x4340_0000_0000_0001)), "qty": 0],
        ["title": "negzero-ish", "price": -123456.789e-7, "qty": 0],
    ]

    @Test("row images round-trip every value exactly", arguments: StoreVariant.allCases)
    func imagesRoundTrip(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            let operations = Self.tricky.enumerated().map {
                WriteOperation.insert("Item", id: "r\($0.offset)", $0.element)
            }
            try await store.apply(operations)
            let batch = try await allChanges(store)
            #expect(batch.changes.count == Self.tricky.count)
            #expect(!batch.hasMore && batch.throughSeq == Int64(Self.tricky.count))
            for (i, change) in batch.changes.enumerated() {
                #expect(
                    change.kind == .insert && change.version == 1 && change.before == nil && change.entity == "Item")
                #expect(
                    identical(change.after, Row(id: "r\(i)", values: Self.tricky[i])),
                    "\(String(describing: change.after))")
            }
            let table = try await tableState(store, "Item")
            for (i, values) in Self.tricky.enumerated() {
                #expect(identical(table["r\(i)"]?.0, Row(id: "r\(i)", values: values)))
            }
        }
    }

    @Test("random doubles of every magnitude round-trip through the log bit for bit")
    func randomDoubles() async throws {
        try await withStore(.file) { store in
            var generator = SystemRandomNumberGenerator()
            var doubles: [Double] = []
            while doubles.count < 3_000 {
                let d = Double(bitPattern: generator.next())
                if !d.isNaN { doubles.append(d) }
            }
            try await store.apply(
                doubles.enumerated().map {
                    .insert("Item", id: "d\($0.offset)", ["title": "x", "price": .double($0.element)])
                })
            let changes = try await allChanges(store).changes
            #expect(changes.count == doubles.count)
            for (change, d) in zip(changes, doubles) {
                guard case .double(let logged)? = change.after?["price"] else {
                    Issue.record("no double for \(d)")
                    continue
                }
                #expect(logged.bitPattern == d.bitPattern || (d == 0 && logged == 0), "\(d) logged as \(logged)")
            }
        }
    }

    @Test(
        "updates log before and after images, the changed attributes, and bump the version",
        arguments: StoreVariant.allCases)
    func updateImages(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            try await store.apply([.insert("Item", id: "a", ["title": "Pen", "price": 1.5])])
            try await store.apply([.update("Item", id: "a", ["price": 2.5, "title": "Pen"])])
            try await store.apply([.update("Item", id: "a", [:])])
            try await store.apply([.delete("Item", id: "a")])
            let changes = try await allChanges(store, after: 1).changes
            #expect(changes.map(\.kind) == [.update, .update, .delete])
            #expect(changes.map(\.version) == [2, 3, 4])
            #expect(changes[0].changedAttributes == ["price"])
            #expect(changes[0].before?["price"] == 1.5 && changes[0].after?["price"] == 2.5)
            #expect(changes[1].changedAttributes == [])
            #expect(changes[2].after == nil && changes[2].before?["title"] == "Pen")
        }
    }

    @Test("writes through a plain SQLite connection in another process are captured with the right images")
    func rawConnection() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        try await store.apply([.insert("Item", id: "a", ["title": "Pen", "price": 1.5])])
        try ChildProcess.rawSQL(
            directory.storePath,
            """
            INSERT INTO Item (id, title, price, data) VALUES ('b', 'Raw', 0.1, x'00ff');
            UPDATE Item SET price = 2.25, note = 'raw note' WHERE id = 'a';
            UPDATE Item SET id = 'c' WHERE id = 'b';
            DELETE FROM Item WHERE id = 'a';
            """)
        let changes = try await allChanges(store, after: 1).changes
        #expect(changes.map(\.kind) == [.insert, .update, .delete, .insert, .delete])
        #expect(changes.map(\.id) == ["b", "a", "b", "c", "a"])
        #expect(changes.map(\.version) == [1, 2, 2, 2, 3])
        #expect(
            identical(
                changes[0].after,
                Row(id: "b", values: ["title": "Raw", "price": 0.1, "qty": 0, "data": .bytes([0, 255])])))
        #expect(changes[1].changedAttributes == ["note", "price"])
        #expect(
            identical(
                changes[1].after, Row(id: "a", values: ["title": "Pen", "price": 2.25, "qty": 0, "note": "raw note"])))
        #expect(
            identical(
                changes[3].after,
                Row(id: "c", values: ["title": "Raw", "price": 0.1, "qty": 0, "data": .bytes([0, 255])])))
        let table = try await tableState(store, "Item")
        #expect(table.keys.sorted() == ["c"])
        #expect(table["c"]?.1 == 2)
        try store.close()
    }

    @Test("writes through the sqlite3 shell are captured, and values of the wrong type are passed on, not a crash")
    func sqlite3Shell() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        try ChildProcess.sqlite3(
            directory.storePath,
            """
            INSERT INTO Item (id, title, qty, price, due, active) VALUES ('s', 'Shell', 7, 3, 1700000000000000, 1);
            UPDATE Item SET qty = qty + 1 WHERE id = 's';
            INSERT INTO Item (id, title, qty, active) VALUES ('odd', 'Odd', 'many', 7);
            """)
        let changes = try await allChanges(store).changes
        #expect(changes.map(\.kind) == [.insert, .update, .insert])
        #expect(changes.map(\.version) == [1, 2, 1])
        #expect(
            identical(
                changes[1].after,
                Row(
                    id: "s",
                    values: [
                        "title": "Shell", "qty": 8, "price": 3.0, "active": true,
                        "due": .timestamp(Timestamp(microseconds: 1_700_000_000_000_000)),
                    ])))
        #expect(changes[1].changedAttributes == ["qty"])
        #expect(changes[2].after?["qty"] == "many")
        #expect(changes[2].after?["active"] == .int(7))
        let odd = try PredicateExpression.parse(#"id == "odd""#).bind(to: Fixtures.schema().entity(named: "Item")!)
        let snapshot = try await store.snapshot(entity: "Item", where: odd)
        #expect(snapshot.rows.first?["qty"] == "many")
        #expect(snapshot.versions == [1])
        try store.close()
    }

    /// The store's connections run with triggers off and log Meridian's writes themselves; these entries must be
    /// exactly what the capture triggers write for the same changes. Each row `m…` is written through the store, and
    /// its twin `tm…` through the `sqlite3` shell (which runs the triggers) by copying `m…`'s columns after each
    /// step: their entries must agree byte for byte.
    @Test("Meridian's own log entries are exactly what the capture triggers write for the same changes")
    func ownEntriesEqualTriggerEntries() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        let columns = Fixtures.itemAttributes.map { "\"\($0.name)\"" }.joined(separator: ", ")
        let count = Self.tricky.count
        let ids = (0..<count).map { "m\($0)" }
        // Inserts (in one transaction, so that the store writes their entries in runs), then the shell's copies.
        try await store.apply(ids.enumerated().map { .insert("Item", id: $0.element, Self.tricky[$0.offset]) })
        try ChildProcess.sqlite3(
            directory.storePath,
            "INSERT INTO Item (id, \(columns)) SELECT 't' || id, \(columns) FROM Item WHERE id GLOB 'm*' ORDER BY id;")
        // Updates of some attributes (the store), then of every column to the same values (the shell).
        for (i, id) in ids.enumerated() {
            let next = Self.tricky[(i + 3) % count].filter { $0.key != "title" && $0.key != "qty" }
            try await store.apply([.update("Item", id: id, next)])
        }
        try await store.apply([.update("Item", id: "m0", [:])])
        try ChildProcess.sqlite3(
            directory.storePath,
            """
            UPDATE Item SET (\(columns)) = (SELECT \(columns) FROM Item AS m WHERE m.id = substr(Item.id, 2))
            WHERE id GLOB 'tm*';
            UPDATE Item SET title = title WHERE id = 'tm0';
            """)
        // Deletes, a few in one transaction.
        try await store.apply(ids.prefix(3).map { .delete("Item", id: $0) })
        for id in ids.dropFirst(3) { try await store.apply([.delete("Item", id: id)]) }
        try ChildProcess.sqlite3(directory.storePath, "DELETE FROM Item WHERE id GLOB 'tm*';")

        let log = try ChildProcess.sqlite3Output(
            directory.storePath,
            "SELECT row_id, kind, version, quote(before), quote(after) FROM meridian_changes ORDER BY seq;"
        ).split(separator: "\n").map { $0.split(separator: "|", maxSplits: 1).map(String.init) }
        let own = log.filter { $0[0].hasPrefix("m") }.map { $0[0] + "|" + $0[1] }
        let triggered = log.filter { $0[0].hasPrefix("tm") }.map { String($0[0].dropFirst()) + "|" + $0[1] }
        #expect(own.count == 3 * count + 1, "one entry per write, none from a trigger: \(own.count)")
        let sortedOwn = own.sorted()
        let sortedTriggered = triggered.sorted()
        #expect(sortedOwn.count == sortedTriggered.count)
        for (a, b) in zip(sortedOwn, sortedTriggered) { #expect(a == b) }
        try store.close()
    }

    /// Text is bound from its bytes in place (`TransactionExecutor.bindText`); the empty string has no bytes to point
    /// at and must still be text, not NULL.
    @Test("empty text is stored and logged as empty text, not NULL", arguments: StoreVariant.allCases)
    func emptyText(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            try await store.apply([
                .insert("Item", id: "empty", ["title": "", "note": ""]),
                .insert("Item", id: "plain", ["title": "é\u{1}", "note": "x"]),
            ])
            try await store.apply([.update("Item", id: "plain", ["note": ""])])
            let table = try await tableState(store, "Item")
            #expect(table["empty"]?.0["title"] == "" && table["empty"]?.0["note"] == "")
            #expect(table["plain"]?.0["title"] == "é\u{1}" && table["plain"]?.0["note"] == "")
            let changes = try await allChanges(store).changes
            #expect(changes.last?.after?["note"] == "" && changes.last?.before?["note"] == "x")
            #expect(changes.first?.after?["note"] == "")
        }
    }

    /// SQLite fires no delete trigger for the row a `REPLACE` conflict removes unless the writing connection has
    /// `recursive_triggers` on (docs/store.md, "Triggers"): with it on, a raw `INSERT OR REPLACE` of an existing id
    /// is logged as the delete of the old row and the insert of the new one; an upsert is an update.
    @Test("a raw REPLACE with recursive_triggers on logs a delete and an insert; a raw upsert logs an update")
    func rawReplaceAndUpsert() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        try await store.apply([
            .insert("Item", id: "a", ["title": "Old", "price": 1.5]), .insert("Item", id: "b", ["title": "B"]),
        ])
        try ChildProcess.sqlite3(
            directory.storePath,
            """
            PRAGMA recursive_triggers = ON;
            INSERT OR REPLACE INTO Item (id, title) VALUES ('a', 'New');
            INSERT INTO Item (id, title) VALUES ('b', 'B2') ON CONFLICT (id) DO UPDATE SET title = excluded.title;
            """)
        let changes = try await allChanges(store, after: 2).changes
        #expect(changes.map(\.kind) == [.delete, .insert, .update])
        #expect(changes.map(\.id) == ["a", "a", "b"])
        #expect(changes.map(\.version) == [2, 1, 2])
        #expect(changes[0].before?["title"] == "Old" && changes[0].before?["price"] == 1.5)
        #expect(identical(changes[1].after, Row(id: "a", values: ["title": "New", "qty": 0])))
        #expect(changes[2].changedAttributes == ["title"])
        try store.close()
    }
}
