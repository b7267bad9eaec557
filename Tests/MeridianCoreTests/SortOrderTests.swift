import MeridianCore
import MeridianStore
import Testing

@Suite struct SortOrderTests {
    static func sorted(_ rows: [Row], _ keys: String) throws -> [String] {
        let order = try RowOrder(parsing: keys).checked(against: Fixtures.point)
        return rows.sorted(by: order.areInIncreasingOrder).map(\.id)
    }

    @Test("nulls come first ascending and last descending")
    func nulls() throws {
        let rows = [Row(id: "b", values: ["latitude": 1]), Row(id: "a"), Row(id: "c", values: ["latitude": 2.5])]
        #expect(try Self.sorted(rows, "latitude") == ["a", "b", "c"])
        #expect(try Self.sorted(rows, "-latitude") == ["c", "b", "a"])
    }

    @Test("the id is the final ascending tie-break, by bytes")
    func tieBreak() throws {
        let rows = ["é", "a", "B", "e\u{301}"].map { Row(id: $0, values: ["title": "same"]) }
        #expect(try Self.sorted(rows, "-title") == ["B", "a", "e\u{301}", "é"])
        #expect(try Self.sorted(rows, "-id") == ["é", "e\u{301}", "a", "B"])
    }

    @Test("strings order by UTF-8 bytes: uppercase before lowercase, decomposed before precomposed")
    func bytes() throws {
        let rows = ["é", "a", "Z", "e\u{301}", "", "😀"].enumerated().map {
            Row(id: String($0.offset), values: ["title": .string($0.element)])
        }
        let order = try Self.sorted(rows, "title").map { rows[Int($0)!]["title"] }
        #expect(order == ["", "Z", "a", "e\u{301}", "é", "😀"])
    }

    @Test("parsing, SQL and checking")
    func parsing() throws {
        let order = try RowOrder(parsing: " title , -category ")
        #expect(order.descriptors == [SortKey("title"), SortKey("category", ascending: false)])
        #expect(order.description == "title,-category")
        #expect(order.sqlOrderBy() == #""title" ASC, "category" DESC, "id" ASC"#)
        #expect(try RowOrder(parsing: "+visible,-id").sqlOrderBy() == #""visible" ASC, "id" DESC"#)
        #expect(try RowOrder(parsing: "").sqlOrderBy() == #""id" ASC"#)

        let empty = #expect(throws: QueryError.self) { try RowOrder(parsing: "title,,x") }
        #expect(empty?.code == .syntax)
        #expect(empty?.position == 6)
        let bad = #expect(throws: QueryError.self) { try RowOrder(parsing: "ti tle") }
        #expect(bad?.message == "sort key 'ti tle' is not an attribute name")

        let unknown = #expect(throws: QueryError.self) {
            try RowOrder(parsing: "title,-rating").checked(against: Fixtures.point)
        }
        #expect(unknown?.code == .unknownAttribute)
        #expect(unknown?.position == 1)
        let section = #expect(throws: QueryError.self) {
            try RowOrder(parsing: "title,-category").checked(against: Fixtures.point, sectionKey: "category")
        }
        #expect(section?.code == .invalidSectionKey)
        #expect(
            section?.message == "the section key 'category' must be the first sort key; the first sort key is 'title'"
        )
        #expect(throws: Never.self) {
            try RowOrder(parsing: "category,title").checked(against: Fixtures.point, sectionKey: "category")
        }
    }
}

@Suite struct TypedPredicateTests {
    typealias A = Point.Attr

    static let t = Timestamp(microseconds: 1_714_566_600_250_000)

    @Test("the builder yields the same expression as the text form")
    func sameAsText() throws {
        let cases: [(TypedPredicate<Point>, String)] = [
            (
                A.category == 3 && A.title.beginsWith("w", options: .caseInsensitive),
                #"category == 3 AND title BEGINSWITH[c] "w""#
            ),
            (A.latitude.between(40.0, 41.0), "latitude BETWEEN {40.0, 41.0}"),
            (A.id.in(["a", "b"]), #"id IN {"a", "b"}"#),
            (!(A.category > 5), "NOT (category > 5)"),
            (
                A.note == nil || A.note.contains("x", options: [.caseInsensitive, .diacriticInsensitive]),
                #"note == nil OR note CONTAINS[cd] "x""#
            ),
            (
                A.visible != true && A.latitude.isNotNil && A.title.like("a*?"),
                #"visible != true AND latitude != nil AND title LIKE "a*?""#
            ),
            (A.updatedAt >= Self.t, #"updatedAt >= "2024-05-01T12:30:00.25Z""#),
            (
                A.category < 1 || A.category >= 10 && A.title.endsWith("z"),
                #"category < 1 OR category >= 10 AND title ENDSWITH "z""#
            ),
            (
                A.title.equals("É", options: .diacriticInsensitive) && A.latitude <= 2.5,
                #"title ==[d] "É" AND latitude <= 2.5"#
            ),
            (A.note.isNil, "note = NULL"),
        ]
        for (typed, text) in cases {
            let parsed = try PredicateExpression.parse(text)
            #expect(typed.expression == parsed.withoutPositions, "\(text)")
            #expect(try PredicateExpression.parse(typed.description).withoutPositions == typed.expression)
            #expect(try typed.bind(to: Fixtures.point) == parsed.bind(to: Fixtures.point), "\(text)")
        }
    }
}
