// A row kept compactly (values by position in a shared layout) behaves exactly as one kept in a dictionary:
// random rows and mutations applied to both forms and to a plain dictionary, compared after every step.

import Testing

@testable import MeridianCore

@Suite struct RowStorageTests {
    static let names = ["a", "b", "title", "a name longer than fifteen bytes", "é"]
    static let pool: [Value] = [
        .null, .int(1), .double(1), .double(2.5), .string("x"), .string("é"), .bool(true),
        .bytes([1, 2]), .timestamp(Timestamp(microseconds: 5)),
    ]

    /// A compact row of `values` (nulls for absent names) over `layout`.
    static func compact(_ id: String, _ values: [String: Value], layout: RowLayout) -> Row {
        Row(id: id, layout: layout, values: layout.names.map { values[$0] ?? .null })
    }

    static func nonNull(_ values: [String: Value]) -> [String: Value] {
        values.filter { !$0.value.isNull }
    }

    @Test("a row is 24 bytes inline, and an optional row too (a controller's tree keeps one for every row)")
    func inlineSize() {
        #expect(MemoryLayout<Row>.size == 24)
        #expect(MemoryLayout<Row?>.size == 24)
        #expect(MemoryLayout<Row.Storage>.size == 8)
    }

    @Test("compact and dictionary rows agree on every accessor, equality and hash through random mutations")
    func randomMutations() {
        var rng = SplitMix64(seed: 0x20_26_11_28)
        let full = RowLayout(names: Self.names)
        // A layout that lacks some names (a mutation naming one converts the row) and orders the rest otherwise.
        let partial = RowLayout(names: ["title", "a"])
        for round in 0..<400 {
            var expected: [String: Value] = [:]
            for name in (round % 2 == 0 ? full : partial).names {
                expected[name] = Self.pool.randomElement(using: &rng)!
            }
            let layout = round % 2 == 0 ? full : partial
            var compact = Self.compact("r", expected, layout: layout)
            var dictionary = Row(id: "r", values: expected)
            let shared = compact  // a copy sharing the buffer: a write to `compact` must not show here
            let sharedValues = Self.nonNull(expected)
            for _ in 0..<8 {
                Self.check(compact, dictionary, Self.nonNull(expected))
                let name = Self.names.randomElement(using: &rng)!
                let value = Self.pool.randomElement(using: &rng)!
                switch Int.random(in: 0..<3, using: &rng) {
                case 0:
                    compact[name] = value
                    dictionary[name] = value
                case 1:
                    compact.values[name] = value
                    dictionary.values[name] = value
                default:
                    var replaced = Self.nonNull(expected)
                    replaced[name] = value
                    compact.values = replaced
                    dictionary.values = replaced
                    expected = replaced
                }
                expected[name] = value
            }
            Self.check(compact, dictionary, Self.nonNull(expected))
            #expect(shared.values == sharedValues)
        }
    }

    static func check(_ compact: Row, _ dictionary: Row, _ expected: [String: Value]) {
        #expect(compact == dictionary)
        #expect(compact.hashValue == dictionary.hashValue)
        #expect(compact.values == expected)
        #expect(dictionary.values == expected)
        #expect(compact.valueCount == expected.count)
        #expect(compact.description == dictionary.description)
        #expect(RowSize.of(compact) == RowSize.of(dictionary))
        var seen: [String: Value] = [:]
        compact.forEachValue { name, value in
            #expect(seen.updateValue(value, forKey: name) == nil)
        }
        #expect(seen == expected)
        for name in Self.names + ["id", "missing"] {
            #expect(compact[name] == dictionary[name])
            #expect(compact[name].type == dictionary[name].type)
        }
        #expect(compact.changedAttributes(from: dictionary).isEmpty)
    }

    @Test("rows of two layouts, or of one layout, compare and hash by their values alone")
    func layoutsDoNotShow() {
        let first = RowLayout(names: ["x", "y"])
        let second = RowLayout(names: first.names + ["z"])
        let a = Self.compact("1", ["x": .int(1)], layout: first)
        let b = Self.compact("1", ["x": .double(1), "z": .null], layout: second)
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b, Row(id: "1", values: ["x": .int(1)])]).count == 1)
        let c = Self.compact("1", ["x": .int(1), "z": .string("s")], layout: second)
        #expect(a != c)
        #expect(c.changedAttributes(from: a) == ["z"])
        #expect(a.changedAttributes(from: c) == ["z"])
        // Same layout, one value apart: an int and an equal double are equal values, but a change.
        let d = Self.compact("1", ["x": .int(1), "y": .string("s")], layout: first)
        let e = Self.compact("1", ["x": .double(1), "y": .string("s")], layout: first)
        #expect(d == e)
        #expect(d.changedAttributes(from: e) == ["x"])
        #expect(Self.compact("2", ["x": .int(1)], layout: first) != a)
        // Two layouts of the same names (rows of two messages): compared position by position.
        let twin = RowLayout(names: ["x", "y"])
        #expect(Self.compact("1", ["x": .int(1), "y": .string("s")], layout: twin) == d)
        #expect(Self.compact("1", ["x": .int(1), "y": .string("t")], layout: twin) != d)
        #expect(Self.compact("1", ["x": .int(1)], layout: twin) != d)
    }

    @Test(
        "a layout finds a name at its hinted position, by a scan of a few names or a hash table of many",
        arguments: [3, 8, 9, 40])
    func layoutPositions(count: Int) {
        let names = (0..<count).map { "name \($0)" }
        let layout = RowLayout(names: names)
        for (i, name) in names.enumerated() {
            #expect(layout.position(of: name) == i)
            #expect(layout.position(of: name, hint: i) == i)
            #expect(layout.position(of: name, hint: (i + 1) % count) == i)
            #expect(layout.position(of: name, hint: count + 5) == i)
        }
        #expect(layout.position(of: "name \(count)") == nil)
        #expect(layout.position(of: "name \(count)", hint: 0) == nil)
        // A wide row's values by name, through the layout.
        let row = Row(id: "w", layout: layout, values: (0..<count).map { .int(Int64($0)) })
        #expect(row["name \(count - 1)"] == .int(Int64(count - 1)))
        #expect(row.values == Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, .int(Int64($0))) }))
    }
}
