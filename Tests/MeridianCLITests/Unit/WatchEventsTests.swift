// MARK: - watch --format jsonl from change sets

import MeridianCore
import Testing

@testable import MeridianCLI

@Suite struct WatchEventsTests {
    /// Rows sorted by (category, title, id), optionally sectioned by category.
    static func list(_ rows: [Row], sectioned: Bool) -> SectionedList<Row> {
        let sorted = rows.sorted { a, b in
            (a["category"], a["title"], a.id) < (b["category"], b["title"], b.id)
        }
        guard sectioned else { return SectionedList(unsectioned: sorted) }
        var sections: [ListSection<Row>] = []
        for row in sorted {
            if sections.last?.key != row["category"] {
                sections.append(ListSection(key: row["category"], name: ValueRendering.text(row["category"])))
            }
            sections[sections.count - 1].elements.append(row)
        }
        return SectionedList(sections: sections)
    }

    static func expectedLines(_ list: SectionedList<Row>) -> String {
        list.allElements.map { ValueRendering.rowJSON($0, entity: point).text + "\n" }.joined()
    }

    @Test("the exact shape of snapshot and change lines")
    func shape() throws {
        let events = WatchEvents(entity: point, sectioned: true)
        let a = Row(id: "a", values: ["title": "A", "category": 1])
        let b = Row(id: "b", values: ["title": "B", "category": 1])
        let old = Self.list([a, b], sectioned: true)
        #expect(
            events.snapshot(seq: 3, list: old)
                == #"{"event":"snapshot","seq":3,"sections":[{"name":"1","rows":[{"id":"a","values":{"title":"A","category":1,"#
                + #""latitude":null,"longitude":null,"updatedAt":null}},{"id":"b","values":{"title":"B","category":1,"#
                + #""latitude":null,"longitude":null,"updatedAt":null}}]}]}"#)
        var b2 = b
        b2["category"] = 2
        var a2 = a
        a2["title"] = "A2"
        let new = Self.list([a2, b2], sectioned: true)
        let changes = try ChangeSet<Row>.between(old: old, new: new)
        #expect(
            events.change(seq: 4, changeSet: changes)
                == #"{"event":"change","seq":4,"sections":{"deleted":[],"inserted":[{"index":1,"name":"2"}]},"rows":["#
                + #"{"op":"move","id":"b","from":[0,1],"to":[1,0],"values":{"title":"B","category":2,"latitude":null,"#
                + #""longitude":null,"updatedAt":null}},{"op":"update","id":"a","from":[0,0],"to":[0,0],"values":{"#
                + #""title":"A2","category":1,"latitude":null,"longitude":null,"updatedAt":null},"changed":["title"]}]}"#
        )
    }

    /// A long change line writes its rows in pieces at once: the same line whatever the pieces, wherever their edges
    /// fall (empty pieces too), and one JSON object with every row change.
    @Test("a change line written in pieces at once is the line written in one")
    func changeLineInPieces() throws {
        let events = WatchEvents(entity: point, sectioned: true)
        let count = WatchEvents.concurrentRows + 1_000
        let old = (0..<count).map { i in
            Row(id: "p\(i)", values: ["title": .string("t\(i % 97)"), "category": .int(Int64(i % 3))])
        }
        // Every third row deleted, every fifth retitled (an update or a move), and new rows inserted.
        var new = old.enumerated().filter { $0.offset % 3 != 0 }.map { offset, row in
            var row = row
            if offset % 5 == 0 { row["title"] = .string("u\(offset % 89)") }
            return row
        }
        new += (0..<count / 2).map { i in Row(id: "n\(i)", values: ["title": "new", "category": .int(Int64(i % 4))]) }
        let changes = try ChangeSet<Row>.between(
            old: Self.list(old, sectioned: true), new: Self.list(new, sectioned: true))
        let one = events.changeBytes(seq: 9, changeSet: changes, line: true, pieces: 1)
        // Compared as a Bool: a failure would print two ~1 MB byte arrays.
        for pieces in 2...4 {
            let same = events.changeBytes(seq: 9, changeSet: changes, line: true, pieces: pieces) == one
            #expect(same, "\(pieces) pieces: not the line written in one")
        }
        let asWatched = events.changeBytes(seq: 9, changeSet: changes, line: true) == one
        #expect(asWatched, "as the watcher writes it: not the line written in one")
        let parsed = try JSON.parse(String(decoding: one.dropLast(), as: UTF8.self))
        guard case .array(let rows)? = parsed["rows"] else { throw CLIError.badInput("no rows in the line") }
        #expect(rows.count == changes.rowChanges.count && rows.count > WatchEvents.concurrentRows)
        // A few row changes in more pieces than rows.
        let small = try ChangeSet<Row>.between(
            old: Self.list(Array(old.prefix(3)), sectioned: true), new: Self.list(Array(new.prefix(2)), sectioned: true)
        )
        #expect(
            events.changeBytes(seq: 1, changeSet: small, line: false, pieces: 8)
                == events.changeBytes(seq: 1, changeSet: small, line: false, pieces: 1))
    }

    @Test("without a section key: one section named \"\", even when empty, and no section events")
    func unsectioned() throws {
        let events = WatchEvents(entity: point, sectioned: false)
        #expect(
            events.snapshot(seq: 0, list: SectionedList(sections: []))
                == #"{"event":"snapshot","seq":0,"sections":[{"name":"","rows":[]}]}"#)
        let changes = ChangeSet<Row>(
            insertedSections: [SectionInsertion(index: 0, key: "")],
            rowChanges: [.insert(id: "a", to: ListIndexPath(0, 0), element: Row(id: "a", values: ["title": "A"]))])
        let line = events.change(seq: 1, changeSet: changes)
        #expect(
            line.hasPrefix(#"{"event":"change","seq":1,"sections":{"deleted":[],"inserted":[]},"rows":[{"op":"insert""#)
        )
    }

    /// The change lines are written as bytes (JSONBytes); every value must come out as the JSON tree writes it.
    @Test("values, strings and integers written as bytes are the JSON tree's text, for random values of every type")
    func bytesMatchJSONText() {
        var random = SplitMix(seed: 2_026_112_7)
        let pieces = [
            "a", "Z", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{1}", "\u{8}", "\u{C}", "\u{1F}", "\u{7F}",
            "\u{80}", "é", "e\u{301}", "日本", "😀", "\u{2028}", "{}", ":", ",",
        ]
        func string() -> String { (0..<random.next(12)).map { _ in pieces[random.next(pieces.count)] }.joined() }
        let doubles: [Double] = [
            0, -0.0, 1, -1.5, 0.1, 1e-5, 1e21, 123_456_789.125, .infinity, -.infinity, .greatestFiniteMagnitude,
            .leastNonzeroMagnitude, -9_007_199_254_740_993,
        ]
        let integers: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, 1_234_567_890, .max, .min, .max - 1, .min + 1]
        for _ in 0..<3_000 {
            let value: Value
            switch random.next(7) {
            case 0: value = .null
            case 1:
                value =
                    random.next(2) == 0
                    ? .int(integers[random.next(integers.count)])
                    : .int(Int64(random.next(1 << 30)) - (1 << 29))
            case 2: value = .double(doubles[random.next(doubles.count)] * Double(random.next(3) + 1))
            case 3: value = .string(string())
            case 4: value = .bool(random.next(2) == 0)
            case 5: value = .timestamp(Timestamp(microseconds: Int64(random.next(1 << 30)) * 1_000_003))
            default: value = .bytes((0..<random.next(9)).map { _ in UInt8(random.next(256)) })
            }
            var out = JSONBytes(capacity: 0)
            out.append(value: value)
            #expect(out.text == ValueRendering.json(value).text, "\(value)")
        }
        for integer in integers {
            var out = JSONBytes(capacity: 0)
            out.append(integer: integer)
            #expect(out.text == String(integer))
        }
    }

    /// `query` and `export --format jsonl` write their lines as bytes too; each must be the JSON tree's line.
    @Test("query lines written as bytes are the JSON tree's lines, for rows with escapes and absent attributes")
    func queryLinesMatchJSONText() {
        var random = SplitMix(seed: 2_026_112_9)
        let pieces = ["a", "\"", "\\", "\n", "\u{1}", "\u{7F}", "é", "😀", ","]
        func string() -> String { (0..<random.next(6)).map { _ in pieces[random.next(pieces.count)] }.joined() }
        var rows: [Row] = []
        for _ in 0..<500 {
            var values: [String: Value] = [:]
            for attribute in point.attributes where random.next(3) > 0 {
                switch attribute.type {
                case .string: values[attribute.name] = .string(string())
                case .int: values[attribute.name] = .int(Int64(random.next(1 << 20)) - (1 << 19))
                case .double: values[attribute.name] = .double(Double(random.next(1 << 20)) / 7)
                case .timestamp:
                    values[attribute.name] = .timestamp(Timestamp(microseconds: Int64(random.next(1 << 30))))
                default: break
                }
            }
            rows.append(Row(id: string() + "\(rows.count)", values: values))
        }
        let expected = rows.map { ValueRendering.rowJSON($0, entity: point).text + "\n" }.joined()
        #expect(String(decoding: jsonLines(rows, point), as: UTF8.self) == expected)
        #expect(jsonLines([], point).isEmpty)
    }

    /// One writer of rows of several entities in turn, compact rows among them whose layouts name the attributes in
    /// any order or leave some out: its keys, written once per entity, and its values, read by the schema's order,
    /// must give each row's JSON tree text.
    @Test("rows of several entities written by one writer, compact in any layout, are the JSON tree's text")
    func rowsOfManyShapesMatchJSONText() {
        var random = SplitMix(seed: 2_026_112_92)
        let entities = demoSchema.entities
        var out = JSONBytes(capacity: 0)
        var expected = ""
        for _ in 0..<600 {
            let entity = entities[random.next(entities.count)]
            var names: [String] = []
            var values: [Value] = []
            for attribute in entity.attributes where random.next(4) > 0 {
                names.append(attribute.name)
                switch attribute.type {
                case .string: values.append(random.next(5) == 0 ? .null : .string("s\"\(random.next(9))"))
                case .int: values.append(.int(Int64(random.next(1 << 20)) - (1 << 19)))
                case .double: values.append(.double(Double(random.next(1 << 20)) / 7))
                case .bool: values.append(.bool(random.next(2) == 0))
                default: values.append(.null)
                }
            }
            // Shuffled together, so that a layout's order is often not the schema's.
            var order = Array(names.indices)
            for i in order.indices.reversed() where i > 0 { order.swapAt(i, random.next(i + 1)) }
            let layoutNames = order.map { names[$0] }
            let layoutValues = order.map { values[$0] }
            let row =
                random.next(2) == 0
                ? Row(id: "r\(random.next(99))", layout: RowLayout(names: layoutNames), values: layoutValues)
                : Row(
                    id: "r\(random.next(99))",
                    values: Dictionary(uniqueKeysWithValues: zip(layoutNames, layoutValues).filter { !$0.1.isNull }))
            out.append(row: row, entity: entity)
            expected += ValueRendering.rowJSON(row, entity: entity).text
        }
        #expect(out.text == expected)
    }

    /// The snapshot line as a `JSON` tree writes it (how it was written before it was written as bytes).
    static func snapshotTreeText(seq: Int64, list: SectionedList<Row>, sectioned: Bool) -> String {
        var sections = list.sections.map { section in
            JSON.object([
                ("name", .string(section.name)),
                ("rows", .array(section.elements.map { ValueRendering.rowJSON($0, entity: point) })),
            ])
        }
        if !sectioned {
            let rows = list.sections.flatMap(\.elements).map { ValueRendering.rowJSON($0, entity: point) }
            sections = [.object([("name", .string("")), ("rows", .array(rows))])]
        }
        return JSON.object([("event", .string("snapshot")), ("seq", .integer(seq)), ("sections", .array(sections))])
            .text
    }

    @Test("snapshot lines written as bytes are the JSON tree's text, sectioned or not, with 0 to 4 sections")
    func snapshotMatchesJSONText() {
        var random = SplitMix(seed: 2_026_112_91)
        for round in 0..<200 {
            let rows = (0..<random.next(30)).map { i in
                Row(
                    id: "r\(i)\(random.next(2) == 0 ? "\"" : "")",
                    values: ["title": .string("t\(random.next(5))\n"), "category": .int(Int64(random.next(4)))])
            }
            let sectioned = round % 2 == 0
            let list = Self.list(rows, sectioned: sectioned)
            for isSectioned in [sectioned, false] {
                let events = WatchEvents(entity: point, sectioned: isSectioned)
                #expect(
                    events.snapshot(seq: Int64(round), list: list)
                        == Self.snapshotTreeText(seq: Int64(round), list: list, sectioned: isSectioned))
            }
        }
    }

    @Test("replaying the lines of random transitions rebuilds each new state", arguments: [false, true])
    func replay(sectioned: Bool) throws {
        var random = SplitMix(seed: sectioned ? 11 : 7)
        let events = WatchEvents(entity: point, sectioned: sectioned)
        var rows: [String: Row] = [:]
        var list = Self.list([], sectioned: sectioned)
        var replay = WatchReplay()
        try replay.apply(line: events.snapshot(seq: 0, list: list))
        var nextID = 0
        for seq in 1...400 {
            for _ in 0..<(1 + random.next(4)) {
                let roll = random.next(10)
                if roll < 4 || rows.isEmpty {
                    nextID += 1
                    let id = "r\(nextID)"
                    rows[id] = Row(
                        id: id,
                        values: ["title": .string("t\(random.next(30))"), "category": .int(Int64(random.next(4)))])
                } else {
                    let id = rows.keys.sorted()[random.next(rows.count)]
                    switch roll {
                    case 4...5: rows[id]!["title"] = .string("t\(random.next(30))")
                    case 6: rows[id]!["category"] = .int(Int64(random.next(4)))
                    case 7: rows[id]!["latitude"] = .double(Double(random.next(1000)) / 10)
                    default: rows[id] = nil
                    }
                }
            }
            let new = Self.list(Array(rows.values), sectioned: sectioned)
            let changes = try ChangeSet<Row>.between(old: list, new: new)
            try replay.apply(line: events.change(seq: Int64(seq), changeSet: changes))
            #expect(replay.queryLines == Self.expectedLines(new))
            #expect(replay.sections.map(\.name) == (sectioned ? new.sections.map(\.name) : [""]))
            list = new
        }
    }
}

/// A small deterministic generator for the tests.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { self.state = seed }
    mutating func next(_ bound: Int) -> Int {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}

extension WatchEvents {
    /// The snapshot line's text, without its newline.
    func snapshot(seq: Int64, list: SectionedList<Row>) -> String {
        String(decoding: self.snapshotBytes(seq: seq, list: list), as: UTF8.self)
    }

    /// A change line's text, without its newline.
    func change(seq: Int64, changeSet: ChangeSet<Row>) -> String {
        String(decoding: self.changeBytes(seq: seq, changeSet: changeSet), as: UTF8.self)
    }
}
