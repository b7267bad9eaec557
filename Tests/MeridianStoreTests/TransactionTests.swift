import Foundation
import MeridianCore
import MeridianStore
import Testing

@Suite struct TransactionTests {
    @Test("insert, update, upsert and delete return the commit seq and row versions", arguments: StoreVariant.allCases)
    func basicOperations(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            let first = try await store.apply([
                .insert("Item", id: "a", ["title": "Pen", "price": 2.5]),
                .insert("Tag", id: "t1", ["name": "office"]),
            ])
            #expect(first.seq == 2)
            #expect(first.rows.map(\.version) == [1, 1])
            let second = try await store.apply([
                .update("Item", id: "a", ["price": 3.0]),
                .upsert("Item", id: "b", ["title": "Ink"]),
                .upsert("Item", id: "a", ["qty": 5]),
                .delete("Tag", id: "t1"),
            ])
            #expect(second.seq == 6)
            #expect(second.rows.map(\.kind) == [.update, .insert, .update, .delete])
            #expect(second.rows.map(\.version) == [2, 1, 3, 2])
            let items = try await tableState(store, "Item")
            #expect(items["a"]?.0 == Row(id: "a", values: ["title": "Pen", "price": 3.0, "qty": 5]))
            #expect(items["a"]?.1 == 3)
            #expect(items["b"]?.0 == Row(id: "b", values: ["title": "Ink", "qty": 0]))
            #expect(try await tableState(store, "Tag").isEmpty)
            #expect(try await store.latestSeq() == 6)
        }
    }

    @Test("an insert without an id gets a generated one on an auto-id entity", arguments: StoreVariant.allCases)
    func generatedID(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            let result = try await store.apply([.insert("Item", ["title": "Pen"]), .insert("Item", ["title": "Cap"])])
            let ids = result.rows.map(\.id)
            #expect(ids.count == 2 && Set(ids).count == 2 && ids.allSatisfy { $0.count == 36 })
            let error = await #expect(throws: StoreError.self) {
                try await store.apply([.insert("Tag", ["name": "x"])])
            }
            #expect(error?.code == .validation)
            #expect(error?.message == "operation 0 (insert Tag): an id is required (Tag's id policy is 'client')")
        }
    }

    @Test("generated ids are version 7 UUIDs that sort in the order they were made, with the current time in them")
    func generatedIDsAreTimeOrdered() async throws {
        try await withStore(.inMemory) { store in
            let before = UInt64(Date().timeIntervalSince1970 * 1000)
            // More ids than one millisecond's counter holds (4,096), so that the timestamp carries over too.
            let result = try await store.apply((0..<5_000).map { .insert("Item", ["title": .string("item \($0)")]) })
            let after = UInt64(Date().timeIntervalSince1970 * 1000)
            let ids = result.rows.map(\.id)
            #expect(ids == ids.sorted() && Set(ids).count == ids.count)
            let uuid = /[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/
            #expect(ids.allSatisfy { $0.wholeMatch(of: uuid) != nil })
            // The first 48 bits are Unix time in milliseconds (a burst of more than 2,048 ids in one millisecond runs ahead, by at most one millisecond per 2,048).
            let millis = UInt64(ids[0].replacingOccurrences(of: "-", with: "").prefix(12), radix: 16)!
            #expect(millis >= before && millis <= after + 3)
            // Later inserts sort after these, in another transaction too.
            let next = try await store.apply([.insert("Item", ["title": "later"])]).rows[0].id
            #expect(next > ids.last!)
        }
    }

    @Test("a file store flushes every commit to the disk by default (synchronous=FULL), at checkpoints when normal")
    func durability() throws {
        let full = try Store.temporary(schema: Fixtures.schema())
        #expect(try full.writerSynchronous() == 2)
        var configuration = Store.Configuration()
        configuration.durability = .normal
        let normal = try Store.temporary(schema: Fixtures.schema(), configuration: configuration)
        #expect(try normal.writerSynchronous() == 1)
    }

    @Test("an int given for a double attribute is converted")
    func intToDouble() async throws {
        try await withStore(.inMemory) { store in
            try await store.apply([.insert("Item", id: "a", ["title": "Pen", "price": 3])])
            let row = try await tableState(store, "Item")["a"]?.0
            #expect(row?["price"].type == .double)
            #expect(row?["price"] == .double(3))
        }
    }

    @Test("a double −0.0 is stored, logged and read as 0.0 (as SQLite would read it back anyway)")
    func negativeZeroIsStoredAsZero() async throws {
        func isPlusZero(_ value: Value?) -> Bool {
            if case .double(let d) = value { d == 0 && d.sign == .plus } else { false }
        }
        try await withStore(.file) { store in
            try await store.apply([
                .insert(
                    "Item", id: "a",
                    [
                        "title": "a", "price": .double(-0.0), "qty": 1, "active": true,
                        "due": .timestamp(Timestamp(microseconds: 0)),
                        "data": .bytes([1]), "note": "n",
                    ]),
                .insert("Item", id: "b", ["title": "b", "price": .double(-0.0)]),
            ])
            try await store.apply([.upsert("Item", id: "c", ["title": "c", "price": .double(-0.0)])])
            let rows = try await tableState(store, "Item")
            for id in ["a", "b", "c"] {
                #expect(isPlusZero(rows[id]?.0["price"]), "\(id): \(String(describing: rows[id]?.0["price"]))")
            }
            let changes = try await allChanges(store).changes
            #expect(changes.count == 3)
            #expect(changes.allSatisfy { isPlusZero($0.after?["price"]) })
        }
    }

    static let invalid: [(WriteOperation, String, [String])] = [
        (
            .insert("Nope", id: "x", [:]),
            "operation 1 (insert Nope 'x'): unknown entity 'Nope'", []
        ),
        (
            .insert("Item", id: "x", ["title": "a", "colour": "red"]),
            "operation 1 (insert Item 'x'): unknown attribute 'colour'", ["colour"]
        ),
        (
            .update("Item", id: "x", ["price": "cheap"]),
            "operation 1 (update Item 'x'): attribute 'price' is double, got string \"cheap\"", ["price"]
        ),
        (
            .update("Item", id: "x", ["qty": 1.5]),
            "operation 1 (update Item 'x'): attribute 'qty' is int, got double 1.5", ["qty"]
        ),
        (
            .update("Item", id: "x", ["price": .double(.nan)]),
            "operation 1 (update Item 'x'): attribute 'price' is NaN", ["price"]
        ),
        (
            .update("Item", id: "x", ["title": .string("a\u{0}b")]),
            "operation 1 (update Item 'x'): attribute 'title' contains a NUL character (U+0000), which strings may not hold",
            ["title"]
        ),
        (
            .insert("Item", id: "x\u{0}", ["title": "a"]),
            "operation 1 (insert Item 'x\u{0}'): the id contains a NUL character (U+0000), which ids may not hold",
            ["id"]
        ),
        (
            // "é" as an e and a combining accent: canonically equivalent to the precomposed "é", which Swift's
            // strings, and so every client's cache, would take for the same id.
            .insert("Item", id: "cafe\u{301}", ["title": "a"]),
            "operation 1 (insert Item 'cafe\u{301}'): the id is not in Unicode normalization form C (NFC): Swift compares strings by canonical equivalence, so ids that differ only in normalization would be one row to every client; write its NFC form",
            ["id"]
        ),
        (
            .update("Item", id: "x", ["title": nil]),
            "operation 1 (update Item 'x'): attribute 'title' is required and cannot be nil", ["title"]
        ),
        (
            .insert("Item", id: "x", ["price": 1.0]),
            "operation 1 (insert Item 'x'): required attribute 'title' missing", ["title"]
        ),
        (
            .insert("Item", id: "x", ["id": "y", "title": "a"]),
            "operation 1 (insert Item 'x'): 'id' is not an attribute: set the operation's id instead", ["id"]
        ),
    ]

    @Test("validation errors name the operation index and the attribute, and nothing is written", arguments: invalid)
    func validation(operation: WriteOperation, message: String, attributes: [String]) async throws {
        try await withStore(.inMemory) { store in
            let error = await #expect(throws: StoreError.self) {
                try await store.apply([.insert("Item", id: "ok", ["title": "fine"]), operation])
            }
            #expect(error?.code == .validation)
            #expect(error?.operationIndex == 1)
            #expect(error?.message == message)
            #expect(error?.attributes == attributes)
            let seq = try await store.latestSeq()
            #expect(seq == 0)
        }
    }

    @Test("an id in normalization form C is taken whatever its characters; its decomposed twin is refused, not stored")
    func normalizedIDs() async throws {
        try await withStore(.inMemory) { store in
            try await store.apply([
                .insert("Item", id: "caf\u{E9}", ["title": "a"]), .insert("Item", id: "東京", ["title": "b"]),
            ])
            let seq = try await store.latestSeq()
            // SQLite would keep it as a second row; Swift's strings, and every client, would take it for the first.
            let error = await #expect(throws: StoreError.self) {
                try await store.apply([.insert("Item", id: "cafe\u{301}", ["title": "c"])])
            }
            #expect(error?.code == .validation)
            #expect(try await store.latestSeq() == seq)
            #expect(try await store.snapshot(entity: "Item").rows.count == 2)
        }
    }

    @Test(
        "update or delete of a missing row is notFound; insert of an existing id is alreadyExists; the transaction is rolled back",
        arguments: StoreVariant.allCases)
    func notFoundAndAlreadyExists(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            try await store.apply([.insert("Item", id: "a", ["title": "Pen"])])
            for operation in [WriteOperation.update("Item", id: "zz", ["qty": 1]), .delete("Item", id: "zz")] {
                let error = await #expect(throws: StoreError.self) {
                    try await store.apply([.insert("Item", id: "b", ["title": "Cap"]), operation])
                }
                #expect(error?.code == .notFound)
                #expect(error?.operationIndex == 1)
            }
            let error = await #expect(throws: StoreError.self) {
                try await store.apply([
                    .insert("Item", id: "c", ["title": "Cap"]), .insert("Item", id: "a", ["title": "Dup"]),
                ])
            }
            #expect(error?.code == .alreadyExists)
            #expect(error?.message == "operation 1 (insert Item 'a'): a row with this id already exists")
            #expect(try await store.latestSeq() == 1)
            #expect(try await tableState(store, "Item").keys.sorted() == ["a"])
        }
    }

    /// The store runs its inserts and updates straight through SQLite (`TransactionExecutor.stepToEnd`): a constraint
    /// SQLite enforces must still come back as the operation's error with SQLite's message, roll the transaction
    /// back, and leave the statements usable for the next one.
    @Test("a unique index violated by an insert or an update is a validation error with SQLite's message")
    func uniqueIndex() async throws {
        let schema = Fixtures.schema(
            version: 1,
            [
                EntitySchema(
                    name: "Tag", attributes: [Attribute(name: "name", type: .string)],
                    indexes: [Index(attributes: ["name"], isUnique: true)], idPolicy: .client)
            ])
        for variant in StoreVariant.allCases {
            try await withStore(variant, schema: schema) { store in
                try await store.apply([
                    .insert("Tag", id: "a", ["name": "red"]), .insert("Tag", id: "b", ["name": "blue"]),
                ])
                let inserted = await #expect(throws: StoreError.self) {
                    try await store.apply([
                        .insert("Tag", id: "c", ["name": "green"]), .insert("Tag", id: "d", ["name": "red"]),
                    ])
                }
                #expect(inserted?.code == .validation && inserted?.operationIndex == 1)
                #expect(inserted?.message == "operation 1 (insert Tag 'd'): UNIQUE constraint failed: Tag.name")
                let updated = await #expect(throws: StoreError.self) {
                    try await store.apply([.update("Tag", id: "b", ["name": "red"])])
                }
                #expect(updated?.code == .validation && updated?.operationIndex == 0)
                #expect(updated?.message == "operation 0 (update Tag 'b'): UNIQUE constraint failed: Tag.name")
                // Nothing of the failed transactions stayed, and the same statements work again.
                try await store.apply([
                    .insert("Tag", id: "c", ["name": "green"]), .update("Tag", id: "b", ["name": "navy"]),
                ])
                let names = try await tableState(store, "Tag").mapValues { $0.0["name"] }
                #expect(names == ["a": "red", "b": "navy", "c": "green"])
                #expect(try await allChanges(store).changes.map(\.id) == ["a", "b", "c", "b"])
            }
        }
    }
}
