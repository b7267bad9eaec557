import MeridianCore
import Testing

@Suite struct ValueTests {
    @Test("integers and doubles compare numerically and exactly")
    func numeric() {
        #expect(Value.int(3) == .double(3.0))
        #expect(Value.int(3) < .double(3.5))
        #expect(Value.double(-0.5) < .int(0))
        // 2^53 + 1 is not representable as a double; the comparison must still be exact.
        #expect(Value.int(9_007_199_254_740_993) > .double(9_007_199_254_740_992.0))
        #expect(Value.double(9.3e18) > .int(Int64.max))
        #expect(Value.double(-.infinity) < .int(Int64.min))
        #expect(Set<Value>([.int(1), .double(1.0)]).count == 1)
    }

    @Test("strings compare by UTF-8 bytes, not by canonical equivalence")
    func strings() {
        let precomposed = "\u{E9}"
        let decomposed = "e\u{301}"
        #expect(precomposed == decomposed)  // Swift's String ==
        #expect(Value.string(precomposed) != .string(decomposed))
        #expect(Value.string(decomposed) < .string(precomposed))  // 0x65 < 0xC3
        #expect(Value.string("Z") < .string("a"))
        #expect(Value.string("") < .string("a"))
        #expect(Set<Value>([.string(precomposed), .string(decomposed)]).count == 2)
    }

    @Test("string order is the order of the UTF-8 bytes, for small, large and non-ASCII strings")
    func utf8Order() {
        var rng = SplitMix64(seed: 7)
        let pieces = ["", "a", "b", "z", "Z", "0", "é", "e\u{301}", "\u{10FFFF}", "日本", "\u{7F}", "\u{80}", " "]
        func random() -> String {
            // Up to 40 pieces: both small strings (15 bytes or fewer, stored inline) and heap-allocated ones, often
            // sharing a prefix with the other string.
            (0..<Int.random(in: 0...40, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
        }
        func expected(_ a: String, _ b: String) -> Int {
            Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)) ? -1 : (Array(a.utf8) == Array(b.utf8) ? 0 : 1)
        }
        for _ in 0..<5_000 {
            let a = random()
            let b = Bool.random(using: &rng) ? a + random() : random()
            let substring = String(b.dropFirst(0))
            #expect(a.utf8Compare(b) == expected(a, b), "\(a.debugDescription) vs \(b.debugDescription)")
            #expect(b.utf8Compare(a) == expected(b, a))
            #expect(a.utf8Compare(a) == 0 && substring.utf8Compare(b) == 0)
            #expect(Value.compare(.string(a), .string(b)) == expected(a, b))
        }
    }

    @Test("storage classes order as SQLite does: null, numbers, text, blobs")
    func storageClasses() {
        let ordered: [Value] = [.null, .int(-5), .bool(true), .double(2.5), .string(""), .string("a"), .bytes([0])]
        #expect(ordered.sorted() == ordered)
    }

    @Test(
        "timestamps round-trip through ISO-8601",
        arguments: [
            ("1970-01-01T00:00:00Z", Int64(0)),
            ("2024-02-29T12:30:05.25Z", Int64(1_709_209_805_250_000)),
            ("2024-02-29T14:30:05.25+02:00", Int64(1_709_209_805_250_000)),
            ("1969-12-31T23:59:59.999999Z", Int64(-1)),
        ]
    )
    func timestamps(text: String, micros: Int64) throws {
        let t = try #require(Timestamp(iso8601: text))
        #expect(t.microseconds == micros)
        #expect(Timestamp(iso8601: t.iso8601) == t)
    }

    @Test("invalid timestamps are rejected", arguments: ["2023-02-29", "2024-13-01", "2024-01-01T25:00:00Z", "x", ""])
    func badTimestamps(text: String) {
        #expect(Timestamp(iso8601: text) == nil)
    }

    @Test("changed attributes treat absent as null and distinguish types")
    func changedAttributes() {
        let a = Row(id: "1", values: ["x": .int(1), "y": .null, "z": .string("a")])
        let b = Row(id: "1", values: ["x": .double(1), "z": .string("b"), "w": .int(2)])
        #expect(b.changedAttributes(from: a) == ["w", "x", "z"])
    }

    @Test("an explicit null and an absent attribute are one row, however the row was built")
    func nullIsAbsent() {
        let plain = Row(id: "1", values: ["x": .int(1)])
        let built = Row(id: "1", values: ["x": .int(1), "y": .null])
        #expect(built == plain)
        #expect(built.hashValue == plain.hashValue)
        #expect(built.values.keys.sorted() == ["x"])
        var assigned = plain
        assigned.values["y"] = .null
        #expect(assigned == plain)
        assigned["x"] = .null
        #expect(assigned.values.isEmpty)
        #expect(assigned["x"] == .null)
        assigned.values = ["z": .null, "w": .bool(true)]
        #expect(assigned.values == ["w": .bool(true)])
        #expect(Set([plain, built]).count == 1)
    }

    @Test("a double −0.0 is validated to 0.0, as stored; every other value is itself")
    func negativeZeroAsStored() throws {
        #expect(Value.double(-0.0).stored.isPlusZero)
        #expect(Value.double(0).stored.isPlusZero)
        for value: Value in [.double(-1.5), .double(-.infinity), .int(0), .string("-0.0"), .null] {
            #expect(value.stored == value && value.stored.type == value.type)
        }
        let schema = try Schema(
            version: 1,
            entities: [EntitySchema(name: "P", attributes: [Attribute(name: "x", type: .double, isOptional: true)])])
        let written = try schema.validate(.insert("P", id: "1", ["x": .double(-0.0)]), index: 0)
        #expect(written.values.count == 1 && written.values[0].isPlusZero)
    }
}

extension Value {
    fileprivate var isPlusZero: Bool {
        if case .double(let d) = self { d == 0 && d.sign == .plus } else { false }
    }
}
