import MeridianCore
import MeridianStore
import Testing

@Suite struct StoreErrorTests {
    @Test("description names the code, the message and the cause")
    func description() {
        struct Cause: Error, CustomStringConvertible { var description: String { "disk full" } }
        let error = StoreError(.io, "cannot commit", cause: Cause())
        #expect(error.description == "io: \"cannot commit\" (cause: disk full)")
    }
}

@Suite struct StoreFetchRequestTests {
    @Test("a snapshot by fetch request equals the request evaluated in memory, with Meridian's SQL functions")
    func snapshotByRequest() async throws {
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
        let store = try Store.temporary(schema: schema)
        let titles = ["Café", "cafe", "CAFÉ au lait", "tea", "Caffè"]
        try await store.apply(
            titles.enumerated().map { i, title in
                .insert("Point", id: "p\(i)", ["title": .string(title), "category": .int(Int64(i % 2))])
            }
        )
        let request = try FetchRequest(entity: "Point", where: "title BEGINSWITH[cd] 'cafe'", sortedBy: "-title")
            .bind(to: schema)
        let snapshot = try await store.snapshot(request)
        let all = try await store.snapshot(entity: "Point").rows
        #expect(snapshot.rows.map(\.id) == request.evaluate(all).map(\.id))
        // Descending by UTF-8 bytes: "cafe" > "Café" > "CAFÉ au lait"; "Caffè" folds to "caffe".
        #expect(snapshot.rows.map(\.id) == ["p1", "p0", "p2"])
    }
}
