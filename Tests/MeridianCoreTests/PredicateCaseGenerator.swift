import MeridianCore

// MARK: - Random cases

/// Generates rows, predicate text and sort orders from pools chosen to hit the hard cases: nulls, int/double
/// boundaries, precomposed and decomposed accents, case pairs outside ASCII, emoji, LIKE metacharacters.
struct CaseGenerator {
    var rng: SplitMix64

    static let strings: [String] = [
        "", "a", "A", "b", "B", "é", "e\u{301}", "É", "E\u{301}", "e", "E", "ß", "ss", "SS", "ẞ", "İ", "i", "ı", "I",
        "😀", "👍🏽", "naïve", "NAÏVE", "nai\u{308}ve", "café", "CAFÉ", "cafe\u{301}", "Cafe", "a*b", "a?b", "a\\b",
        "x_y%z", "straße", "Ωmega", "ωmega", "日本", "abc", "abd", "ab", "zz", "Z", " ", "ǅ", "ﬁ", "Å", "A\u{30A}",
        "\u{212B}",
    ]
    static let ints: [Int64] = [
        0, 1, -1, 2, 3, 5, 42, -42, 9_007_199_254_740_991, 9_007_199_254_740_992, 9_007_199_254_740_993,
        -9_007_199_254_740_993, .max, .min, .max - 1, .min + 1,
    ]
    static let doubles: [Double] = [
        0, -0.0, 0.5, 1, 1.5, 2, 3, -1.5, 2.5, 42, 9_007_199_254_740_992, 9_007_199_254_740_994,
        9_223_372_036_854_775_808, -9_223_372_036_854_775_808, 1e300, -1e300, 3.25, .infinity, -.infinity,
    ]
    static let doubleLiterals: [String] = [
        "0.0", "-0.0", "0.5", "1.0", "1.5", "2.0", "2.5", "-1.5", "42.0", "9007199254740992.0", "9007199254740993.0",
        "9.223372036854775807e18", "9.3e18", "-9.3e18", "1e300", "-1e300", "3.25", "1E2", "2.5e-1",
    ]
    static let intLiterals: [String] = [
        "0", "1", "-1", "2", "3", "5", "42", "-42", "9007199254740991", "9007199254740992", "9007199254740993",
        "9223372036854775807", "-9223372036854775808", "9223372036854775806",
    ]
    static let timestamps: [Int64] = [0, 1, -1, 1_714_566_600_000_000, 1_714_566_600_250_000, 1_714_566_600_000_001]
    static let bytes: [[UInt8]] = [[], [0], [1, 2], [255], [0, 0], [1], [1, 2, 3]]

    mutating func int(_ n: Int) -> Int { Int(self.rng.next() % UInt64(n)) }
    mutating func chance(_ percent: Int) -> Bool { self.int(100) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[self.int(items.count)] }

    mutating func string() -> String {
        (0..<(1 + self.int(3))).map { _ in self.pick(Self.strings) }.joined()
    }

    mutating func row(index: Int) -> Row {
        var row = Row(id: self.pick(Self.strings) + String(index))
        func maybe(_ make: (inout CaseGenerator) -> Value) -> Value {
            self.chance(25) ? .null : make(&self)
        }
        row.values["title"] = maybe { .string($0.string()) }
        row.values["note"] = maybe { .string($0.pick(Self.strings)) }
        row.values["n"] = maybe { $0.chance(70) ? .int($0.pick(Self.ints)) : .int(Int64($0.int(7)) - 3) }
        row.values["x"] = maybe { $0.chance(70) ? .double($0.pick(Self.doubles)) : .double(Double($0.int(13)) / 2 - 3) }
        row.values["flag"] = maybe { .bool($0.chance(50)) }
        row.values["at"] = maybe { .timestamp(Timestamp(microseconds: $0.pick(Self.timestamps))) }
        row.values["data"] = maybe { .bytes($0.pick(Self.bytes)) }
        return row
    }

    mutating func sortOrder() -> RowOrder {
        let names = ["title", "note", "n", "x", "flag", "at", "data", "id"]
        var used: Set<String> = []
        var keys: [SortKey] = []
        for _ in 0..<self.int(4) {
            let name = self.pick(names)
            if used.insert(name).inserted { keys.append(.init(name, ascending: self.chance(50))) }
        }
        return RowOrder(keys)
    }

    // MARK: Predicates

    var variables: [String: PredicateVariable] = [:]

    mutating func predicateText() -> (String, [String: PredicateVariable]) {
        self.variables = [:]
        let text = self.expression(depth: 0)
        return (text, self.variables)
    }

    mutating func keyword(_ word: String) -> String {
        switch self.int(3) {
        case 0: word.lowercased()
        case 1: word
        default: word.prefix(1).uppercased() + word.dropFirst().lowercased()
        }
    }

    mutating func expression(depth: Int) -> String {
        let roll = self.int(100)
        if depth >= 3 || roll < 45 { return self.comparison() }
        if roll < 60 {
            let inner = self.expression(depth: depth + 1)
            return self.chance(50) ? "\(self.keyword("NOT")) (\(inner))" : "!(\(inner))"
        }
        if roll < 62 { return self.chance(50) ? "TRUEPREDICATE" : self.keyword("FALSEPREDICATE") }
        let lhs = self.expression(depth: depth + 1)
        let rhs = self.expression(depth: depth + 1)
        let op =
            self.chance(50)
            ? (self.chance(50) ? self.keyword("AND") : "&&") : (self.chance(50) ? self.keyword("OR") : "||")
        return "(\(lhs) \(op) \(rhs))"
    }

    mutating func variable(_ value: PredicateVariable) -> String {
        let name = "v\(self.variables.count)"
        self.variables[name] = value
        return "$" + name
    }

    mutating func modifier() -> String {
        self.pick(["", "", "[c]", "[d]", "[cd]", "[C]", "[dc]"])
    }

    mutating func numberLiteral(preferInt: Bool) -> String {
        if self.chance(preferInt ? 70 : 30) {
            return self.chance(80) ? self.pick(Self.intLiterals) : String(self.int(7) - 3)
        }
        return self.pick(Self.doubleLiterals)
    }

    mutating func likePattern() -> String {
        var pattern = ""
        for _ in 0..<(1 + self.int(4)) {
            switch self.int(8) {
            case 0: pattern += "*"
            case 1: pattern += "?"
            case 2: pattern += self.pick(["\\*", "\\?", "\\\\", "\\a"])
            default: pattern += self.pick(Self.strings)
            }
        }
        return pattern
    }

    mutating func comparison() -> String {
        let attribute = self.pick(["title", "note", "id", "n", "x", "flag", "at", "data", "title", "n"])
        let ordered = ["==", "=", "!=", "<>", "<", "<=", ">", ">="]
        switch attribute {
        case "title", "note", "id":
            let m = self.modifier()
            switch self.int(10) {
            case 0: return "\(attribute) \(self.pick(["==", "!="])) \(self.pick(["nil", "NULL"]))"
            case 1:
                let a = self.string()
                let b = self.string()
                return "\(attribute) \(self.keyword("BETWEEN"))\(m) {\(Value.quote(a)), \(Value.quote(b))}"
            case 2:
                let items = (0..<self.int(4)).map { _ in self.chance(15) ? "nil" : Value.quote(self.string()) }
                if self.chance(30) {
                    let values: [Value] = (0..<self.int(4)).map { _ in .string(self.string()) }
                    return "\(attribute) IN\(m) \(self.variable(.list(values)))"
                }
                return "\(attribute) \(self.keyword("IN"))\(m) {\(items.joined(separator: ", "))}"
            case 3, 4, 5:
                let op = self.pick(["BEGINSWITH", "ENDSWITH", "CONTAINS"])
                let s = self.chance(80) ? self.pick(Self.strings) : self.string()
                return "\(attribute) \(self.keyword(op))\(m) \(Value.quote(s))"
            case 6, 7:
                return "\(attribute) \(self.keyword("LIKE"))\(m) \(Value.quote(self.likePattern()))"
            default:
                let s = self.chance(70) ? self.pick(Self.strings) : self.string()
                let literal = self.chance(15) ? self.variable(.value(.string(s))) : Value.quote(s)
                return "\(attribute) \(self.pick(ordered))\(m) \(literal)"
            }
        case "n", "x":
            let preferInt = attribute == "n"
            switch self.int(8) {
            case 0: return "\(attribute) \(self.pick(["==", "!="])) nil"
            case 1:
                let lo = self.numberLiteral(preferInt: preferInt)
                let hi = self.numberLiteral(preferInt: preferInt)
                return "\(attribute) BETWEEN {\(lo), \(hi)}"
            case 2:
                let items = (0..<self.int(4)).map { _ in
                    self.chance(15) ? "nil" : self.numberLiteral(preferInt: preferInt)
                }
                return "\(attribute) IN {\(items.joined(separator: ", "))}"
            case 3:
                let v: Value = self.chance(50) ? .int(self.pick(Self.ints)) : .double(self.pick(Self.doubles))
                return "\(attribute) \(self.pick(ordered)) \(self.variable(.value(v)))"
            default:
                return "\(attribute) \(self.pick(ordered)) \(self.numberLiteral(preferInt: preferInt))"
            }
        case "flag":
            return "flag \(self.pick(["==", "!=", "="])) \(self.pick(["true", "false", "nil", "TRUE"]))"
        case "at":
            let t = { (g: inout CaseGenerator) in Value.quote(Timestamp(microseconds: g.pick(Self.timestamps)).iso8601)
            }
            switch self.int(5) {
            case 0: return "at \(self.pick(["==", "!="])) nil"
            case 1: return "at BETWEEN {\(t(&self)), \(t(&self))}"
            case 2: return "at IN {\(t(&self)), \(t(&self))}"
            default: return "at \(self.pick(ordered)) \(t(&self))"
            }
        default:
            let op = self.pick(ordered + ["IN"])
            if op == "IN" {
                return "data IN \(self.variable(.list([.bytes(self.pick(Self.bytes)), .bytes(self.pick(Self.bytes))])))"
            }
            return "data \(op) \(self.variable(.value(.bytes(self.pick(Self.bytes)))))"
        }
    }
}
