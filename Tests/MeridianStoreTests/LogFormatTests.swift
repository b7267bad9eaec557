import Foundation
import MeridianCore
import MeridianStore
import Testing

/// The change log's format: inserts are logged without an after-image (format 2) and read back with one; files of
/// format 1, whose inserts carry their image, still read correctly and get the new triggers.
@Suite struct LogFormatTests {
    /// Pages through the log with `limit`, as a reader that catches up in steps does.
    func paged(_ store: Store, limit: Int, entities: Set<String>? = nil) async throws -> [Change] {
        var changes: [Change] = []
        var seq: Int64 = 0
        while true {
            guard case .changes(let batch) = try await store.changes(after: seq, entities: entities, limit: limit)
            else {
                Issue.record("expected changes after \(seq)")
                return changes
            }
            changes += batch.changes
            seq = batch.throughSeq
            if !batch.hasMore { return changes }
        }
    }

    @Test(
        "an insert reads as the row after the insert (changed, deleted or re-created since), wherever a limit cuts the log",
        arguments: StoreVariant.allCases)
    func insertImages(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            try await store.apply([.insert("Tag", id: "a", ["name": "a1"]), .insert("Tag", id: "b", ["name": "b1"])])
            try await store.apply([.update("Tag", id: "a", ["name": "a2"])])
            try await store.apply([.insert("Tag", id: "c", ["name": "c1"]), .delete("Tag", id: "b")])
            try await store.apply([
                .insert("Tag", id: "b", ["name": "b2"]), .update("Tag", id: "a", ["name": "a3"]),
            ])
            try await store.apply([
                .insert("Item", id: "i", ["title": "Pen", "price": 0.1, "data": .bytes([1, 2])]),
                .update("Item", id: "i", ["price": 0.2]),
            ])
            try await store.apply([.delete("Tag", id: "c"), .upsert("Tag", id: "d", ["name": "d1"])])
            let all = try await allChanges(store).changes
            let inserts = all.filter { $0.kind == .insert }
            #expect(inserts.map(\.id) == ["a", "b", "c", "b", "i", "d"])
            #expect(
                inserts.map { $0.after?[$0.entity == "Item" ? "title" : "name"] }
                    == ["a1", "b1", "c1", "b2", "Pen", "d1"])
            #expect(
                identical(
                    inserts[4].after,
                    Row(id: "i", values: ["title": "Pen", "price": 0.1, "qty": 0, "data": .bytes([1, 2])])))
            #expect(all.allSatisfy { $0.kind == .delete || $0.after?.id == $0.id })
            for limit in 1...all.count {
                #expect(try await self.paged(store, limit: limit) == all, "limit \(limit)")
                #expect(
                    try await self.paged(store, limit: limit, entities: ["Tag"]) == all.filter { $0.entity == "Tag" },
                    "limit \(limit), Tag only")
            }
        }
    }

    @Test("a file of the previous format reads its old entries as logged, and gets the new triggers when opened")
    func previousFormat() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.storePath
        try Store.open(path: path, schema: Fixtures.schema()).close()
        // Make the file what the previous version wrote: format 1, Tag's insert trigger (as it created it) logging
        // the after-image, no index of the log by row.
        try ChildProcess.sqlite3(
            path,
            """
            DROP INDEX meridian_changes_row;
            UPDATE meridian_meta SET value = '1' WHERE key = 'format';
            DROP TRIGGER "meridian_Tag_insert";
            CREATE TRIGGER "meridian_Tag_insert" AFTER INSERT ON "Tag" BEGIN
            INSERT INTO meridian_changes (entity, row_id, kind, version, before, after, committed_at) VALUES ('Tag', \
            NEW."id", 1, NEW."_version", NULL, json_object('name', CASE typeof(NEW."name") WHEN 'real' THEN \
            json(CASE WHEN NEW."name" > 1.7976931348623157e308 THEN '1e999' WHEN NEW."name" < \
            -1.7976931348623157e308 THEN '-1e999' ELSE printf('%!.19g', NEW."name") END) WHEN 'blob' THEN \
            json_object('$blob', hex(NEW."name")) ELSE NEW."name" END), \
            CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER));
            END;
            INSERT INTO Tag (id, name) VALUES ('t1', 'one'), ('t2', 'two');
            UPDATE Tag SET name = 'deux' WHERE id = 't2';
            """)
        #expect(
            try ChildProcess.sqlite3Output(path, "SELECT count(*) FROM meridian_changes WHERE after IS NULL") == "0")
        // An old entry's image is read as logged, not rebuilt from the row: make t1's differ from its row.
        try ChildProcess.sqlite3(path, "UPDATE meridian_changes SET after = '{\"name\":\"uno\"}' WHERE row_id = 't1'")

        let store = try Store.open(path: path, schema: Fixtures.schema())
        try await store.apply([.insert("Tag", id: "t3", ["name": "three"])])
        try ChildProcess.sqlite3(path, "INSERT INTO Tag (id, name) VALUES ('t4', 'four')")
        let changes = try await allChanges(store).changes
        #expect(changes.map(\.id) == ["t1", "t2", "t2", "t3", "t4"])
        #expect(changes.map { $0.after?["name"] } == ["uno", "two", "deux", "three", "four"])
        #expect(changes[2].before?["name"] == "two" && changes[2].changedAttributes == ["name"])
        // New inserts, by the store and by the shell, are logged in the new format.
        #expect(
            try ChildProcess.sqlite3Output(path, "SELECT row_id FROM meridian_changes WHERE after IS NULL ORDER BY seq")
                == "t3\nt4")
        #expect(try ChildProcess.sqlite3Output(path, "SELECT value FROM meridian_meta WHERE key = 'format'") == "2")
        #expect(
            try ChildProcess.sqlite3Output(
                path, "SELECT count(*) FROM sqlite_master WHERE name = 'meridian_changes_row'") == "1")
        try store.close()
    }
}
