import MeridianCore
import MeridianStore
import Testing

@Suite struct FetchRequestTests {
    static let schema = try! Schema.parse(
        yaml: """
            version: 1
            entities:
              Point:
                attributes:
                  title: string
                  category: { type: int, default: 0 }
                  latitude: double?
            """,
        file: "test.yaml"
    )

    @Test("binding checks the entity, predicate, sort and section key together")
    func binding() throws {
        let request = try FetchRequest(
            entity: "Point",
            where: "category == $c AND title BEGINSWITH[c] 'w'",
            variables: ["c": 3],
            sortedBy: "category,-title",
            sectionKey: "category",
            limit: 2
        )
        let bound = try request.bind(to: Self.schema)
        #expect(bound.order.sqlOrderBy() == #""category" ASC, "title" DESC, "id" ASC"#)
        let rows = [
            Row(id: "a", values: ["title": "Wine", "category": 3]),
            Row(id: "b", values: ["title": "water", "category": 3]),
            Row(id: "c", values: ["title": "Wharf", "category": 3]),
            Row(id: "d", values: ["title": "wine", "category": 4]),
        ]
        // Descending by UTF-8 bytes: "water" (0x77…) > "Wine" > "Wharf"; the limit keeps two.
        #expect(bound.evaluate(rows).map(\.id) == ["b", "a"])
        #expect(bound.matches(rows[0]))
        #expect(!bound.matches(rows[3]))
    }

    @Test("an empty predicate matches everything and an empty sort orders by id")
    func defaults() throws {
        let bound = try FetchRequest(entity: "Point", where: "  ").bind(to: Self.schema)
        #expect(bound.evaluate([Row(id: "b"), Row(id: "a")]).map(\.id) == ["a", "b"])
        #expect(bound.order.sqlOrderBy() == #""id" ASC"#)
    }

    @Test("errors name what is wrong")
    func errors() throws {
        #expect(throws: SchemaError.self) { try FetchRequest(entity: "Nope").bind(to: Self.schema) }
        let sectionError = #expect(throws: QueryError.self) {
            try FetchRequest(entity: "Point", sortedBy: "title", sectionKey: "category").bind(to: Self.schema)
        }
        #expect(sectionError?.code == .invalidSectionKey)
        let unbound = #expect(throws: QueryError.self) {
            try FetchRequest(entity: "Point", where: "category == $c").bind(to: Self.schema)
        }
        #expect(unbound?.code == .unboundVariable)
        #expect(unbound?.position == 12)
        #expect(throws: QueryError.self) {
            try FetchRequest(entity: "Point", limit: -1).bind(to: Self.schema)
        }
    }

    @Test("the predicate text round-trips through the request")
    func text() throws {
        let request = try FetchRequest(entity: "Point", where: "NOT (category > 5) OR title == nil")
        let again = try FetchRequest(entity: "Point", where: request.predicateText)
        #expect(again.predicate.withoutPositions == request.predicate.withoutPositions)
    }
}
