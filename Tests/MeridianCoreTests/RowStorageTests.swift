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
            var layout = round % 2 == 0 ? full : partial
            // Every other pair of rounds, a shaped layout: of this row's own kinds (it keeps payloads only until a
            // mutation changes a kind), or of random ones (the row says its kinds itself).
            if round % 4 >= 2 {
                let like =
                    round % 8 >= 4
                    ? layout.names.map { expected[$0] ?? .null }
                    : layout.names.map { _ in Self.pool.randomElement(using: &rng)! }
                layout = layout.shaped(like: like)
            }
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

    @Test("a row of a shaped layout's kinds keeps its payloads only, at the layout's offsets")
    func shapedPayloads() {
        let layout = RowLayout(names: ["title", "stamp", "qty", "gone", "on"])
        let values: [Value] = [.string("row 1"), .int(7), .double(2.5), .null, .bool(true)]
        let shaped = layout.shaped(like: values)
        #expect(shaped.words == 5)  // a string's two words, an int's, a double's and a boolean's; none for null
        #expect(shaped.offsets == [0, 2, 3, 4, 4])
        // A boolean is one kind whatever its value: the rows of a boolean column fit one shaped layout.
        let off = Row(id: "f", layout: shaped, values: [.string("row 2"), .int(8), .double(1), .null, .bool(false)])
        #expect(off.withCompactValues { kept, _ in kept === shaped } == true)
        #expect(off["on"] == .bool(false))
        let row = Row(id: "r", layout: shaped, values: values)
        #expect(row.withCompactValues { kept, _ in kept === shaped } == true)
        // Other kinds, with the same layout: the row keeps its kinds itself, under the layout of names only.
        let other = Row(id: "r", layout: shaped, values: [.int(1), .int(7), .double(2.5), .string("x"), .null])
        #expect(other.withCompactValues { kept, _ in kept === layout } == true)
        #expect(other["title"] == .int(1))
        #expect(other["gone"] == .string("x"))
        #expect(other.values.count == 4)
        // Shaping a shaped layout shapes its names again.
        #expect(shaped.shaped(like: values).unshaped === layout)
    }

    @Test("a compact row's strings and bytes are released with it, and when a value replaces them")
    func payloadsReleased() {
        var bytes: [UInt8] = Array(repeating: 1, count: 64)
        let before = bytes.withUnsafeBufferPointer { $0.baseAddress }
        let names = ["a", "b"]
        for layout in [RowLayout(names: names), RowLayout(names: names).shaped(like: [.bytes([]), .int(0)])] {
            do {
                var row = Row(id: "r", layout: layout, values: [.bytes(bytes), .int(1)])
                let copy = row
                #expect(copy["a"] == .bytes(bytes))
                row["a"] = .bytes([2])  // a copy of the shared buffer
                #expect(copy["a"] == .bytes(bytes))
                var alone = Row(id: "s", layout: layout, values: [.bytes(bytes), .int(1)])
                alone["a"] = .bytes([3])  // in place: the old bytes released there
                alone["b"] = .string("now a string")  // another kind: a new buffer
                #expect(alone.values == ["a": .bytes([3]), "b": .string("now a string")])
            }
            // No buffer holds the array any more, so a write changes it in place.
            bytes[0] = 2
            #expect(bytes.withUnsafeBufferPointer { $0.baseAddress } == before)
        }
    }

    @Test("a reader's shaper shapes its layout like the first row, and anew after many rows that do not fit")
    func shaper() {
        let layout = RowLayout(names: ["a", "b"])
        var shaper = RowShaper(layout)
        func shapeFor(_ values: [Value]) -> RowLayout { values.withUnsafeBufferPointer { shaper.layout(for: $0) } }
        let first = shapeFor([.int(1), .string("x")])
        #expect(first.isShaped && first.kinds == [.int, .string])
        #expect(shapeFor([.int(2), .string("y")]) === first)
        for _ in 0..<RowShaper.misfitsBeforeReshaping {
            #expect(shapeFor([.int(2), .null]) === first)
        }
        let second = shapeFor([.int(3), .null])
        #expect(second !== first && second.kinds == [.int, .null] && second.unshaped === layout)
        #expect(shapeFor([.int(4), .null]) === second)
        // One row that fits starts the count again.
        for _ in 0..<RowShaper.misfitsBeforeReshaping {
            #expect(shapeFor([.int(5), .string("z")]) === second)
        }
        #expect(shapeFor([.int(6), .null]) === second)
        #expect(shapeFor([.int(7), .string("z")]) === second)
    }

    @Test("a layout finds a name by its UTF-8 bytes at the hint, elsewhere among a few names, and nothing else")
    func positionOfBytes() {
        func position(_ layout: RowLayout, _ key: String, hint: Int) -> Int? {
            Array(key.utf8).withUnsafeBytes { layout.position(ofUTF8: $0, hint: hint) }
        }
        let small = RowLayout(names: ["title", "qty", "q", "", "café"])
        #expect(position(small, "qty", hint: 1) == 1)
        #expect(position(small, "qty", hint: 0) == 1, "found past a wrong hint")
        #expect(position(small, "qty", hint: 99) == 1, "a hint past the end")
        #expect(position(small, "q", hint: 1) == 2, "a prefix of the hint's name is not it")
        #expect(position(small, "qtyy", hint: 1) == nil)
        #expect(position(small, "", hint: 0) == 3)
        #expect(position(small, "caf\u{E9}", hint: 0) == 4)
        #expect(position(small, "cafe\u{301}", hint: 4) == nil, "other bytes: left to the lookup by String")
        #expect(position(RowLayout(names: []), "title", hint: 0) == nil)
        // More names than are scanned: the hint alone; the caller looks the others up by String.
        let large = RowLayout(names: (0..<20).map { "a\($0)" })
        #expect(position(large, "a7", hint: 7) == 7)
        #expect(position(large, "a7", hint: 6) == nil)
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
