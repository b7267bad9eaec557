import MeridianCore
import MeridianStore
import Testing

@Suite struct PredicateParserTests {
    @Test(
        "valid predicates parse and render back to canonical text",
        arguments: [
            (#"category == 3 AND title BEGINSWITH[c] "w""#, #"category == 3 AND title BEGINSWITH[c] "w""#),
            ("a = 1 or b <> 2 && c >= 3", "a == 1 OR (b != 2 AND c >= 3)"),
            ("NOT a > 5 AND b < 2", "NOT a > 5 AND b < 2"),
            ("!(a > 5 || b < 2)", "NOT (a > 5 OR b < 2)"),
            ("(a > 5 OR b < 2) AND c <= 1", "(a > 5 OR b < 2) AND c <= 1"),
            ("x BETWEEN {-1.5, 2e3}", "x BETWEEN {-1.5, 2000.0}"),
            (#"id IN {"a", 'b', nil}"#, #"id IN {"a", "b", nil}"#),
            (#"name == 'it\'s \u{e9}\n'"#, "name == \"it's \u{e9}\\n\""),
            ("truepredicate and FalsePredicate", "TRUEPREDICATE AND FALSEPREDICATE"),
            ("n == -9223372036854775808", "n == -9223372036854775808"),
            (#"title like[cd] "a\\*""#, #"title LIKE[cd] "a\\*""#),
            ("r between $region", "r BETWEEN $region"),
            ("flag == TRUE and x == NULL", "flag == true AND x == nil"),
            ("a IN {}", "a IN {}"),
            ("title contains[DC] 'x'", #"title CONTAINS[cd] "x""#),
        ]
    )
    func valid(text: String, rendered: String) throws {
        let expression = try PredicateExpression.parse(text)
        #expect(expression.description == rendered)
        let reparsed = try PredicateExpression.parse(expression.description)
        #expect(reparsed.withoutPositions == expression.withoutPositions)
    }

    @Test("precedence: NOT binds tighter than AND, AND tighter than OR; chains are n-ary")
    func precedence() throws {
        let e = try PredicateExpression.parse("a == 1 OR NOT b == 2 AND c == 3 OR d == 4").withoutPositions
        func cmp(_ name: String, _ v: Value) -> PredicateExpression {
            .comparison(PredicateComparison(attribute: name, op: .equal, operand: .value(v, .none)))
        }
        let expected: PredicateExpression = .disjunction([
            cmp("a", 1),
            .conjunction([.negation(cmp("b", 2), .none), cmp("c", 3)]),
            cmp("d", 4),
        ])
        #expect(e == expected)
    }

    @Test("source positions count characters (graphemes), not bytes")
    func positions() throws {
        let e = try PredicateExpression.parse(#"  title  ==[c]  "é👍🏽""#)
        guard case .comparison(let c) = e else {
            Issue.record("not a comparison: \(e)")
            return
        }
        #expect(c.attributeRange == SourceRange(position: 2, length: 5))
        #expect(c.opRange == SourceRange(position: 9, length: 5))
        #expect(c.operand.range == SourceRange(position: 16, length: 4))
        let error = #expect(throws: QueryError.self) { try PredicateExpression.parse(#"title == "👍🏽" AND zz"#) }
        #expect(error?.position == 19)
    }

    static let invalidCases: [(String, QueryError.Code, Int, String)] = [
        ("", .syntax, 0, "empty predicate (use TRUEPREDICATE to match everything)"),
        ("   ", .syntax, 3, "empty predicate (use TRUEPREDICATE to match everything)"),
        (
            "3 == n", .syntax, 0,
            "the left side of a comparison must be an attribute name, not the number 3; write the attribute first"
        ),
        (
            #""a" == title"#, .syntax, 0,
            #"the left side of a comparison must be an attribute name, not the string "a"; write the attribute first"#
        ),
        ("{1} == n", .syntax, 0, "the left side of a comparison must be an attribute name, not a list"),
        ("title ==", .syntax, 8, "expected a value after '==', found the end of the text"),
        ("(n > 1", .syntax, 6, "expected ')' to close the '(' at position 0, found the end of the text"),
        ("n > 1)", .syntax, 5, "unexpected ')' after a complete predicate"),
        (#"title == "abc"#, .syntax, 9, "unterminated string"),
        (#"title == "a\qb""#, .syntax, 11, #"unknown escape "\\q" (use \" \' \\ \n \t \r \u{hex})"#),
        (#"title == "\u{110000}""#, .invalidValue, 10, #"\u{110000} is not a Unicode scalar value"#),
        ("n > 99999999999999999999", .invalidValue, 4, "integer 99999999999999999999 is out of the 64-bit range"),
        ("x > 1e999", .invalidValue, 4, "number 1e999 is out of range"),
        ("n > 3e", .syntax, 4, "malformed number"),
        (#"title ==[x] "a""#, .syntax, 9, #"unknown modifier "x" (use [c], [d] or [cd])"#),
        (#"title ==[] "a""#, .syntax, 8, "empty modifier (use [c], [d] or [cd])"),
        ("n # 3", .syntax, 2, ##"unexpected character "#""##),
        ("n > 3 AND", .syntax, 9, "expected a comparison, found the end of the text"),
        (
            "title == other", .syntax, 9,
            "expected a value, found the attribute 'other' (comparing two attributes is not supported)"
        ),
        ("n IN {1, {2}}", .syntax, 9, "lists cannot be nested"),
        ("n IN {1 2}", .syntax, 8, "expected ',' or '}' in the list, found the number 2"),
        ("n 3", .syntax, 2, "expected an operator after 'n', found the number 3"),
        ("AND n > 3", .syntax, 0, "expected an attribute name, '(' or NOT, found 'AND'"),
        ("$ == 3", .syntax, 0, "expected a variable name after '$'"),
        ("n == $x == 3", .syntax, 8, "unexpected '==' after a complete predicate"),
        (
            String(repeating: "(", count: 65) + "TRUEPREDICATE" + String(repeating: ")", count: 65), .tooDeep, 64,
            "parentheses and NOT nested deeper than 64"
        ),
        (String(repeating: "NOT ", count: 70) + "a == 1", .tooDeep, 256, "parentheses and NOT nested deeper than 64"),
    ]

    @Test("malformed text gives its exact code, position and message", arguments: Self.invalidCases)
    func invalid(text: String, code: QueryError.Code, position: Int, message: String) {
        let error = #expect(throws: QueryError.self) { try PredicateExpression.parse(text) }
        #expect(error?.code == code)
        #expect(error?.position == position)
        #expect(error?.message == message)
    }

    @Test("the error description and caret diagram point at the problem")
    func caret() throws {
        let text = "title BEGINSWITH 3"
        let error = #expect(throws: QueryError.self) {
            try PredicateExpression.parse(text).bind(to: Fixtures.point)
        }
        #expect(error?.description == "position 17: typeMismatch: 'title' is string but 3 is int")
        #expect(error?.caretDiagram(for: text) == "title BEGINSWITH 3\n                 ^")
        let open = #expect(throws: QueryError.self) { try PredicateExpression.parse("title\n== \"abc") }
        #expect(open?.caretDiagram(for: "title\n== \"abc") == "title == \"abc\n         ^^^^")
    }

    @Test("20,000 random byte strings and token soups never crash the parser and errors stay within the text")
    func fuzz() {
        let seed = SplitMix64.seedFromEnvironment()
        var rng = SplitMix64(seed: seed)
        let pieces = [
            "title", "category", "latitude", "note", "visible", "updatedAt", "id", "==", "=", "!=", "<>", "<", "<=",
            ">", ">=", "AND", "or", "&&", "||", "NOT", "!", "(", ")", "{", "}", ",", "BETWEEN", "IN", "BEGINSWITH",
            "endswith", "CONTAINS", "LIKE", "[c]", "[d]", "[cd]", "[", "]", "\"a\"", "'é'", "\"", "'", "\\", "\\u{",
            "3", "-2.5", "1e9", "-", ".", "nil", "true", "$v", "$", "TRUEPREDICATE", "falsepredicate", " ", "\u{301}",
            "👍🏽", "\n", "\0", "\"2024-05-01T00:00:00Z\"", "9223372036854775808",
        ]
        var parsed = 0
        for i in 0..<20_000 {
            let text: String
            if i % 2 == 0 {
                let bytes = (0..<Int(rng.next() % 40)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                text = String(decoding: bytes, as: UTF8.self)
            } else {
                // Mostly well-formed comparisons joined by connectives, with one random piece spliced in half the time.
                var words: [String] = []
                for k in 0..<Int(1 + rng.next() % 4) {
                    if k > 0 { words.append(["AND", "or", "&&", "||"][Int(rng.next() % 4)]) }
                    if rng.next() % 4 == 0 { words.append("NOT") }
                    words += ["title", "==", "\"a\""].indices.map { _ in pieces[Int(rng.next() % UInt64(pieces.count))]
                    }
                    words[words.count - 3] = ["title", "category", "latitude", "visible", "id"][Int(rng.next() % 5)]
                    words[words.count - 2] =
                        ["==", "<", "BETWEEN", "IN", "BEGINSWITH[c]", "LIKE", "!="][Int(rng.next() % 7)]
                    if rng.next() % 2 == 0 {
                        words[words.count - 1] =
                            ["3", "\"w*\"", "{1, 2}", "nil", "true", "$v", "2.5"][Int(rng.next() % 7)]
                    }
                }
                if rng.next() % 2 == 0 {
                    let at = Int(rng.next() % UInt64(words.count + 1))
                    words.insert(pieces[Int(rng.next() % UInt64(pieces.count))], at: at)
                }
                text = words.joined(separator: rng.next() % 4 == 0 ? "" : " ")
            }
            do {
                let expression = try PredicateExpression.parse(text)
                parsed += 1
                if let predicate = try? expression.bind(to: Fixtures.point, variables: ["v": 1]) {
                    _ = predicate.evaluate(Row(id: "x"))
                    _ = predicate.sql()
                }
            } catch {
                let count = text.count
                if error.position < 0 || error.position > count || error.length < 0 {
                    Issue.record(
                        "seed \(seed): position \(error.position) outside 0...\(count) for \(Value.quote(text))")
                    return
                }
            }
        }
        #expect(parsed > 1_000, "seed \(seed): the token soup should parse sometimes")
    }
}
