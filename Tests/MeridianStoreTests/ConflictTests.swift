import MeridianCore
import MeridianStore
import Testing

@Suite struct ConflictTests {
    /// Item "a" at version 1, then another writer changes `price` (version 2) and `note` (version 3).
    func prepare(_ store: Store) async throws {
        try await store.apply([.insert("Item", id: "a", ["title": "Pen", "price": 1.0])])
        try await store.apply([.update("Item", id: "a", ["price": 2.0])])
        try await store.apply([.update("Item", id: "a", ["note": "restocked"])])
    }

    @Test("store wins rejects an update of an attribute changed since the expected version, listing it", arguments: StoreVariant.allCases)
    func storeWinsConflict(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            try await prepare(store)
            let error = await #expect(throws: StoreError.self) {
                try await store.apply([.update("Item", id: "a", ["price": 9.0, "title": "Big pen"], expectedVersion: 1)])
            }
            #expect(error?.code == .conflict)
            #expect(error?.operationIndex == 0)
            #expect(error?.attributes == ["price"])
            #expect(error?.message == "operation 0 (update Item 'a'): expected version 1, the row is at version 3; changed since: price")
            #expect(try await tableState(store, "Item")["a"]?.0["price"] == .double(2))
        }
    }

    @Test("store wins merges an update of attributes nobody else changed (both edits survive)", arguments: StoreVariant.allCases)
    func propertyLevelMerge(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            try await prepare(store)
            let result = try await store.apply([.update("Item", id: "a", ["title": "Big pen"], expectedVersion: 1)])
            #expect(result.rows.first?.version == 4)
            let row = try #require(try await tableState(store, "Item")["a"])
            #expect(row.0 == Row(id: "a", values: ["title": "Big pen", "price": 2.0, "qty": 0, "note": "restocked"]))
            #expect(row.1 == 4)
        }
    }

    @Test("client wins applies a conflicting update")
    func clientWins() async throws {
        try await withStore(.file) { store in
            try await prepare(store)
            try await store.apply([.update("Item", id: "a", ["price": 9.0], expectedVersion: 1)], policy: .clientWins)
            #expect(try await tableState(store, "Item")["a"]?.0["price"] == .double(9))
        }
    }

    @Test("a delete with a stale version conflicts under store wins and applies under client wins")
    func staleDelete() async throws {
        try await withStore(.inMemory) { store in
            try await prepare(store)
            let error = await #expect(throws: StoreError.self) {
                try await store.apply([.delete("Item", id: "a", expectedVersion: 2)])
            }
            #expect(error?.code == .conflict)
            #expect(error?.attributes == ["note"])
            try await store.apply([.delete("Item", id: "a", expectedVersion: 3)])
            try await store.apply([.insert("Item", id: "b", ["title": "x"])])
            try await store.apply([.update("Item", id: "b", ["title": "y"])])
            try await store.apply([.delete("Item", id: "b", expectedVersion: 1)], policy: .clientWins)
            #expect(try await tableState(store, "Item").isEmpty)
        }
    }

    @Test("when the log no longer covers the expected version, every attribute the operation sets conflicts")
    func prunedLogConflictsEverything() async throws {
        try await withStore(.file) { store in
            try await prepare(store)
            try await store.prune(keepingLast: 1)
            let error = await #expect(throws: StoreError.self) {
                try await store.apply([.update("Item", id: "a", ["title": "t", "qty": 3], expectedVersion: 1)])
            }
            #expect(error?.attributes == ["qty", "title"])
        }
    }

    @Test("a current expected version never conflicts")
    func currentVersion() async throws {
        try await withStore(.inMemory) { store in
            try await prepare(store)
            let result = try await store.apply([.update("Item", id: "a", ["price": 5.0], expectedVersion: 3)])
            #expect(result.rows.first?.version == 4)
        }
    }
}
