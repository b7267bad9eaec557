import MeridianCore
import MeridianStore
import Testing

@Suite struct PredicateBindingTests {
    static let bindErrors: [(String, QueryError.Code, Int, String)] = [
        (
            #"titel == "a""#, .unknownAttribute, 0,
            "unknown attribute 'titel' (Point has: id, title, category, latitude, longitude, updatedAt, visible, note)"
        ),
        ("title == 3", .typeMismatch, 9, "'title' is string but 3 is int"),
        (#"category == "3""#, .typeMismatch, 12, #"'category' is int but "3" is string"#),
        (#"category BEGINSWITH "a""#, .typeMismatch, 9, "BEGINSWITH applies only to strings; 'category' is int"),
        ("category ==[c] 3", .typeMismatch, 9, "the modifier [c] applies only to strings; 'category' is int"),
        ("visible > true", .typeMismatch, 8, "> does not apply to the bool attribute 'visible' (use == or !=)"),
        ("visible == 1", .typeMismatch, 11, "'visible' is bool but 1 is int"),
        ("category > nil", .invalidValue, 11, "> cannot compare with nil (only == nil and != nil can)"),
        ("latitude BETWEEN {1}", .invalidValue, 17, "BETWEEN takes exactly two values {low, high}, found 1"),
        ("latitude BETWEEN {1, nil}", .invalidValue, 21, "BETWEEN cannot take nil as a bound"),
        ("category == $c", .unboundVariable, 12, "variable $c has no value (given: $list, $nan, $one)"),
        (
            #"updatedAt > "yesterday""#, .invalidValue, 12,
            #""yesterday" is not an ISO-8601 timestamp such as "2024-05-01T12:30:00Z""#
        ),
        ("category IN 3", .typeMismatch, 12, "IN takes a list in braces, such as {1, 2}"),
        ("category == {1, 2}", .typeMismatch, 12, "== takes one value, not a list (use IN)"),
        ("category == $list", .typeMismatch, 12, "== takes one value, not a list (use IN)"),
        ("category IN {$list}", .typeMismatch, 13, "variable $list holds a list, which cannot be an element of a list"),
        (
            #"title LIKE "ab\\""#, .invalidValue, 11,
            #"the LIKE pattern ends with an unpaired '\' (write \\ for a backslash)"#
        ),
        ("latitude == $nan", .invalidValue, 12, "NaN is not a valid value"),
        ("title CONTAINS nil", .invalidValue, 15, "CONTAINS cannot match nil"),
    ]

    @Test("type and name errors carry their code, position and message", arguments: Self.bindErrors)
    func bindError(text: String, code: QueryError.Code, position: Int, message: String) throws {
        let expression = try PredicateExpression.parse(text)
        let variables: [String: PredicateVariable] = ["one": 1, "list": [1, 2], "nan": .value(.double(.nan))]
        let error = #expect(throws: QueryError.self) {
            try expression.bind(to: Fixtures.point, variables: variables)
        }
        #expect(error?.code == code)
        #expect(error?.position == position)
        #expect(error?.message == message)
    }

    static func row(_ id: String, _ values: [String: Value]) -> Row { Row(id: id, values: values) }

    @Test("only a predicate every row matches unevaluated says so: TRUEPREDICATE, not what merely happens to be true")
    func matchesEveryRow() throws {
        #expect(RowPredicate.all.matchesEveryRow)
        #expect(try PredicateExpression.parse("TRUEPREDICATE").bind(to: Fixtures.point).matchesEveryRow)
        for text in ["FALSEPREDICATE", "NOT FALSEPREDICATE AND category > 1", "category == nil OR category != nil"] {
            #expect(try !PredicateExpression.parse(text).bind(to: Fixtures.point).matchesEveryRow, "\(text)")
        }
    }

    @Test("null rules: comparisons with null are false, NOT is two-valued, == nil tests for null")
    func nulls() throws {
        let empty = Self.row("a", [:])
        let five = Self.row("b", ["latitude": 5])
        func eval(_ text: String, _ row: Row) throws -> Bool {
            try PredicateExpression.parse(text).bind(to: Fixtures.point).evaluate(row)
        }
        #expect(try !eval("latitude > 3", empty))
        #expect(try !eval("latitude <= 3", empty))
        #expect(try !eval("latitude != 3", empty))
        #expect(try eval("NOT (latitude > 3)", empty))
        #expect(try eval("NOT (latitude != 3)", empty))
        #expect(try eval("latitude == nil", empty))
        #expect(try !eval("latitude != nil", empty))
        #expect(try eval("latitude != nil", five))
        #expect(try !eval("latitude IN {nil, 1}", empty))
        #expect(try eval("latitude IN {nil, 5}", five))
        #expect(try !eval("latitude IN {}", five))
        #expect(try eval("latitude BETWEEN {4.5, 5}", five))
        #expect(try eval("latitude == 5", five))  // a double attribute against an int literal
    }

    @Test("numbers compare exactly across int and double, near 2^53 and 2^63")
    func numbers() throws {
        func eval(_ text: String, _ value: Value) throws -> Bool {
            try PredicateExpression.parse(text).bind(to: Fixtures.point).evaluate(Self.row("a", ["category": value]))
        }
        #expect(try eval("category > 9007199254740992.0", .int(9_007_199_254_740_993)))
        #expect(try !eval("category == 9007199254740992.0", .int(9_007_199_254_740_993)))
        #expect(try eval("category < 9.3e18", .int(.max)))
        #expect(try eval("category > 2.5", 3))
        #expect(try !eval("category == 2.5", 2))
    }

    @Test("timestamps accept ISO-8601 literals; variables may hold values and lists")
    func timestampsAndVariables() throws {
        let t = try #require(Timestamp(iso8601: "2024-05-01T12:30:00Z"))
        let row = Self.row("a", ["updatedAt": .timestamp(t), "category": 2, "title": "Wien"])
        let p = try PredicateExpression.parse(
            #"updatedAt >= "2024-05-01T14:30:00+02:00" AND category IN $kinds AND title BEGINSWITH[c] $prefix"#
        ).bind(to: Fixtures.point, variables: ["kinds": [1, 2], "prefix": "w"])
        #expect(p.evaluate(row))
        #expect(p.referencedAttributes == ["updatedAt", "category", "title"])
        let later = try PredicateExpression.parse("updatedAt > $t").bind(
            to: Fixtures.point,
            variables: ["t": .value(.timestamp(Timestamp(microseconds: t.microseconds + 1)))]
        )
        #expect(!later.evaluate(row))
    }

    @Test("the compiled SQL binds values, wraps comparisons under NOT, and calls Meridian's functions")
    func sql() throws {
        let p = try PredicateExpression.parse(#"category == 3 AND title BEGINSWITH[c] "W""#).bind(to: Fixtures.point)
        #expect(
            p.sql()
                == SQLFragment(
                    #"("category" = ? AND meridian_match('beginswith', 1, "title", ?))"#, arguments: [3, "w"]))
        #expect(p.usesMeridianFunctions)
        let n = try PredicateExpression.parse(#"NOT (latitude > 3 OR note ==[cd] "É") AND visible == true"#)
            .bind(to: Fixtures.point)
        #expect(
            n.sql()
                == SQLFragment(
                    #"(NOT ((("latitude" > ?) IS 1 OR (meridian_fold("note", 3) = ?) IS 1)) AND "visible" = ?)"#,
                    arguments: [3, "e", 1]
                )
        )
        let t = try PredicateExpression.parse(#"updatedAt < "1970-01-01T00:00:01Z" OR id IN {} OR note == nil"#)
            .bind(to: Fixtures.point)
        #expect(t.sql() == SQLFragment(#"("updatedAt" < ? OR 0 OR "note" IS NULL)"#, arguments: [1_000_000]))
        #expect(!t.usesMeridianFunctions)
    }
}

@Suite struct FoldingTests {
    @Test("precomposed and decomposed forms fold equal under [c] and [d]")
    func canonical() {
        let cd: StringOptions = [.caseInsensitive, .diacriticInsensitive]
        #expect(Folding.fold("É", .caseInsensitive).utf8Equals(Folding.fold("e\u{301}", .caseInsensitive)))
        #expect(Folding.fold("é", .diacriticInsensitive).utf8Equals("e"))
        #expect(Folding.fold("É", .diacriticInsensitive).utf8Equals("E"))
        #expect(Folding.fold("Crème Brûlée", cd).utf8Equals("creme brulee"))
        #expect(Folding.fold("Å", .caseInsensitive).utf8Equals(Folding.fold("\u{212B}", .caseInsensitive)))
        #expect(Folding.fold("İ", .caseInsensitive).utf8Equals("i\u{307}"))
        #expect(Folding.fold("İ", cd).utf8Equals("i"))
        #expect(Folding.fold("ß", .caseInsensitive).utf8Equals("ß"))
        #expect(Folding.fold("ẞ", .caseInsensitive).utf8Equals("ß"))
        #expect(Folding.fold("ΟΔΟΣ", .caseInsensitive).utf8Equals(Folding.fold("οδος", .caseInsensitive)))
        #expect(Folding.fold("ς\u{301}", .caseInsensitive).utf8Equals("σ\u{301}"))
        #expect(Folding.fold("e\u{301}", []).utf8Equals("e\u{301}"))  // no options: bytes untouched
        #expect(Folding.fold("ABC", .diacriticInsensitive).utf8Equals("ABC"))
        #expect(Folding.fold("👍🏽", cd).utf8Equals("👍🏽"))
    }

    @Test(
        "LIKE: * any run, ? exactly one scalar, \\ escapes",
        arguments: [
            ("a*", "abc", true), ("a?c", "abc", true), ("a?c", "ac", false), ("\\*", "*", true), ("\\*", "a", false),
            ("?", "e\u{301}", false), ("??", "e\u{301}", true), ("*", "", true), ("", "", true), ("", "a", false),
            ("*b*", "abc", true), ("*c", "abcbc", true), ("a\\\\b", "a\\b", true), ("a\\?", "a?", true),
            ("a\\?", "ab", false), ("%", "x", false), ("_", "x", false), ("*a*a*a", "aaa", true),
            ("*a*a*a", "aa", false),
        ]
    )
    func like(pattern: String, value: String, matches: Bool) {
        #expect(StringMatcher.matches(.like, options: [], value: value, foldedPattern: pattern) == matches)
    }

    @Test("BEGINSWITH, ENDSWITH and CONTAINS match bytes, after folding the value")
    func matching() {
        #expect(StringMatcher.matches(.beginsWith, options: [], value: "abc", foldedPattern: "ab"))
        #expect(!StringMatcher.matches(.beginsWith, options: [], value: "é", foldedPattern: "e"))
        #expect(StringMatcher.matches(.beginsWith, options: .diacriticInsensitive, value: "é", foldedPattern: "e"))
        #expect(StringMatcher.matches(.endsWith, options: .caseInsensitive, value: "CAFÉ", foldedPattern: "e\u{301}"))
        #expect(StringMatcher.matches(.contains, options: [], value: "abc", foldedPattern: ""))
        #expect(!StringMatcher.matches(.contains, options: [], value: "", foldedPattern: "a"))
        #expect(StringMatcher.matches(.contains, options: [], value: "xxabyab", foldedPattern: "aby"))
    }
}
