import MeridianCore
import MeridianStore
import Testing

/// The README's "Using the core from Swift" example, kept compiling and passing.
@Suite struct ReadmeExampleTests {
    @Test("the README example runs as written")
    func readmeExample() async throws {
        // The example returns early on `.tooOld` (a log pruned past its snapshot), which a fresh store never is: that
        // it ran to its end is checked.
        var ranToEnd = false
        let example = { () async throws -> Void in
            // README example begins
            let schema = try Schema.parse(
                yaml: """
                    version: 1
                    entities:
                      Point:
                        attributes:
                          title: string
                          category: { type: int, default: 0 }
                    """
            )
            let store = try Store.temporary(schema: schema)  // or Store.open(path:schema:)

            // A query: predicate, sort, section key; checked against the schema.
            let request = try FetchRequest(
                entity: "Point", where: "title BEGINSWITH[c] 'caf'", sortedBy: "category,title", sectionKey: "category"
            ).bind(to: schema)

            // A live result, reset from a snapshot that is consistent with a seq.
            let snapshot = try await store.snapshot(request)
            var results = try LiveResults(request)
            results.reset(rows: snapshot.rows)

            // A transaction (atomic; group-committed with concurrent ones); the store captures it in its log.
            try await store.apply([
                .insert("Point", id: "a", ["title": "Café Aurora", "category": 1]),
                .insert("Point", id: "b", ["title": "Tasca Bica", "category": 1]),
            ])

            // Follow the log: each batch ends at a commit boundary; each change set is exact.
            guard case .changes(let batch) = try await store.changes(after: snapshot.seq) else { return }
            let changes = results.apply(batch.changes.map { $0.after.map(RowMutation.upsert) ?? .delete(id: $0.id) })
            print(changes.insertedSections.map(\.name))  // ["1"]
            print(changes.rowChanges.map(\.operation))  // ["insert"]
            // README example ends
            #expect(changes.insertedSections.map(\.name) == ["1"])
            #expect(changes.rowChanges.map(\.operation) == ["insert"])
            #expect(results.indexPath(for: "a") == ListIndexPath(section: 0, row: 0))
            ranToEnd = true
        }
        try await example()
        #expect(ranToEnd, "the README example returned before its end")
    }
}
