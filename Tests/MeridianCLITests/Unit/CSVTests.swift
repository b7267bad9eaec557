// MARK: - CSV and import's input

import MeridianCore
import Testing

@testable import MeridianCLI

@Suite struct CSVTests {
    @Test("quoted fields, doubled quotes, embedded line breaks, CRLF, empty vs \"\"")
    func parses() throws {
        let text = "id,title,note\r\n1,\"Café, \"\"Aurora\"\"\",\"two\nlines\"\r\n2,,\"\"\n\n3,x,y"
        let records = try CSV.parse(text)
        #expect(records.map(\.line) == [1, 2, 4, 6])
        #expect(records[1].fields.map(\.text) == ["1", "Café, \"Aurora\"", "two\nlines"])
        #expect(records[2].fields == [CSV.Field("2"), CSV.Field(""), CSV.Field("", quoted: true)])
        #expect(records[3].fields.map(\.text) == ["3", "x", "y"])
    }

    @Test("malformed CSV names the line")
    func errors() {
        #expect(throws: CSV.SyntaxError(message: "unterminated quoted field", line: 2)) {
            try CSV.parse("a,b\n1,\"open\n")
        }
        #expect(throws: CSV.SyntaxError(message: "unexpected text after a closing quote", line: 1)) {
            try CSV.parse("\"a\"b,c")
        }
        #expect(throws: CSV.SyntaxError(message: "a double quote inside an unquoted field", line: 1)) {
            try CSV.parse("a\"b")
        }
    }

    @Test("quoting: only when needed, and always for the empty string; null is empty")
    func quoting() throws {
        #expect(
            CSV.line(["plain", "a,b", "say \"hi\"", "two\nlines", "", nil])
                == "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\"\",")
        let fields = try CSV.parse(CSV.line(["plain", "a,b", "say \"hi\"", "two\nlines", "", nil]))[0].fields
        #expect(fields.map(\.text) == ["plain", "a,b", "say \"hi\"", "two\nlines", "", ""])
        #expect(fields.map(\.quoted) == [false, true, true, true, true, false])
    }

    @Test("export's CSV lines written as bytes are csvLine's text, and a quote before a combining mark reads back")
    func exportBytes() throws {
        var random = SplitMix64(seed: 2_026_112_92)
        let pieces = ["a", ",", "\"", "\n", "\r", "é", "😀", " ", ""]
        func text() -> String {
            (0..<Int.random(in: 0...5, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
        }
        var rows: [Row] = []
        for i in 0..<400 {
            var values: [String: Value] = [:]
            if Bool.random(using: &random) { values["title"] = .string(text()) }
            if Bool.random(using: &random) { values["category"] = .int(Int64.random(in: -99...99, using: &random)) }
            if Bool.random(using: &random) { values["latitude"] = .double(Double.random(in: -90...90, using: &random)) }
            rows.append(Row(id: text() + "\(i)", values: values))
        }
        let expected = rows.map { ExportCommand.csvLine($0, entity: point) + "\n" }.joined()
        #expect(String(decoding: ExportCommand.csvLines(rows, entity: point), as: UTF8.self) == expected)
        // A `"` and a combining mark are one Character; its quote is doubled all the same, so the field reads back.
        let combining = Row(id: "q", values: ["title": "say \"\u{301}hi\"", "category": 1])
        let line = String(decoding: ExportCommand.csvLines([combining], entity: point), as: UTF8.self)
        #expect(line == ExportCommand.csvLine(combining, entity: point) + "\n")
        let fields = try CSV.parse(line)[0].fields
        #expect(fields[1].text == "say \"\u{301}hi\"")
    }

    @Test("export's CSV imports back to the same rows")
    func exportImportRoundTrip() throws {
        let rows = [
            Row(id: "p1", values: ["title": "Café, \"Aurora\"", "category": 2, "latitude": 38.71, "longitude": -9.14]),
            Row(id: "p2", values: ["title": "", "category": 0, "updatedAt": .timestamp(Timestamp(microseconds: 5))]),
        ]
        let text =
            (["id,title,category,latitude,longitude,updatedAt"]
            + rows.map { ExportCommand.csvLine($0, entity: point) }).joined(separator: "\n")
        let items = try ImportReader.parse(text, format: .csv, entity: point)
        #expect(items.map(\.id) == ["p1", "p2"])
        for (item, row) in zip(items, rows) {
            let stored = Row(id: item.id!, values: item.values.filter { !$0.value.isNull })
            #expect(stored == row)
        }
        // A null optional attribute is an explicit null; nothing is sent for required ones left empty.
        #expect(items[1].values["latitude"] == .some(.null))
    }

    @Test("CSV import errors name the line and column")
    func importErrors() {
        let cases: [(String, String)] = [
            (
                "id,titel\n1,x",
                "line 1: header: unknown attribute 'titel' for Point (did you mean 'title'?); its "
                    + "attributes are id, title, category, latitude, longitude, updatedAt"
            ),
            (
                "title,category\nx,1\ny,two",
                "line 3, column 'category': \"two\" is not an int (expected a whole "
                    + "number such as 42)"
            ),
            ("title,category\nx", "line 2: 1 fields, but the header has 2"),
            ("title,title\nx,y", "line 1: column 'title' appears twice in the header"),
        ]
        for (text, message) in cases {
            do {
                _ = try ImportReader.parse(text, format: .csv, entity: point)
                Issue.record("no error for \(text)")
            } catch {
                #expect(error.message == message)
            }
        }
    }

    @Test("JSON lines import: export's shape and flat objects")
    func jsonLines() throws {
        let text = """
            {"id":"p1","values":{"title":"A","category":1,"latitude":null}}
            {"title":"B","longitude":-9.5}
            """
        let items = try ImportReader.parse(text, format: .jsonl, entity: point)
        #expect(
            items == [
                ImportReader.Item(line: 1, id: "p1", values: ["title": "A", "category": 1, "latitude": .null]),
                ImportReader.Item(line: 2, id: nil, values: ["title": "B", "longitude": -9.5]),
            ])
        #expect(throws: CLIError.self) {
            try ImportReader.parse("{\"title\":3}", format: .jsonl, entity: point)
        }
    }

    @Test("format detection by extension, then by content")
    func detect() {
        #expect(ImportReader.Format.detect(path: "a.CSV", text: "{") == .csv)
        #expect(ImportReader.Format.detect(path: "a.jsonl", text: "x") == .jsonl)
        #expect(ImportReader.Format.detect(path: "-", text: "  {\"a\":1}") == .jsonl)
        #expect(ImportReader.Format.detect(path: "-", text: "title\nx") == .csv)
    }
}

// MARK: - The byte-level parser against a scalar-level one

extension CSVTests {
    @Test("CSV.parse reads 5,000 random texts exactly as a plain scalar-by-scalar reading does (records or error)")
    func differential() {
        var random = SplitMix64(seed: 0xC5F)
        let pieces = ["a", "é", "日本", "x y", ",", ",", "\"", "\"\"", "\n", "\n", "\r", "\r\n", " ", "1"]
        for _ in 0..<5_000 {
            let text = (0..<Int.random(in: 0...24, using: &random))
                .map { _ in pieces.randomElement(using: &random)! }.joined()
            let parsed = Result { () throws(CSV.SyntaxError) in try CSV.parse(text) }
            let expected = Result { () throws(CSV.SyntaxError) in try ScalarCSV.parse(text) }
            #expect(parsed == expected, "\(text.debugDescription)")
        }
    }

    @Test("CSV read in 2 to 6 pieces at once gives one pass's records, or its first error, for 3,000 random texts")
    func pieces() {
        var random = SplitMix64(seed: 0xC60)
        // Mostly well-formed rows (so that pieces split inside long texts), now and then something malformed.
        let pieces = [
            "r1,a\n", "r2,\"x, \"\"y\"\"\"\n", "r3,\"two\nlines\"\r\n", "\n", "r4,é\n", "\"", "a\"b", ",", "\r",
        ]
        var split = 0
        for _ in 0..<3_000 {
            let text = (0..<Int.random(in: 0...60, using: &random))
                .map { _ in
                    Int.random(in: 0..<10, using: &random) == 0
                        ? pieces[5...].randomElement(using: &random)! : pieces[..<5].randomElement(using: &random)!
                }
                .joined()
            let expected = Result { () throws(CSV.SyntaxError) in try CSV.parse(text) }
            for parts in 2...6 {
                let read = Result { () throws(CSV.SyntaxError) in try CSV.parse(text, parts: parts) }
                if case .success(let pieces) = read, pieces.count(where: { !$0.isEmpty }) > 1 { split += 1 }
                #expect(read.map { $0.flatMap { $0 } } == expected, "\(parts) pieces: \(text.debugDescription)")
            }
        }
        #expect(split > 1_000, "texts read in more than one piece: \(split)")
    }

    @Test("import's rows read in pieces: the same rows, or the same first error, as one piece")
    func importPieces() throws {
        var random = SplitMix64(seed: 0x1A7)
        for _ in 0..<300 {
            var lines = ["id,title,category"]
            for i in 0..<Int.random(in: 0...40, using: &random) {
                switch Int.random(in: 0..<40, using: &random) {
                case 0: lines.append("p\(i),x,notanumber")
                case 1: lines.append("p\(i),x")
                case 2: lines.append("p\(i),\"open")
                default: lines.append("p\(i),\"Café, \"\"\(i)\"\"\n\",\(i)")
                }
            }
            let text = lines.joined(separator: "\n")
            let expected = Result { () throws(CLIError) in try ImportReader.parseCSV(text, entity: point, parts: 1) }
            for parts in 2...4 {
                let read = Result { () throws(CLIError) in try ImportReader.parseCSV(text, entity: point, parts: parts)
                }
                switch (read, expected) {
                case (.success(let rows), .success(let expectedRows)): #expect(rows == expectedRows)
                case (.failure(let error), .failure(let expectedError)): #expect(error.message == expectedError.message)
                default: Issue.record("\(parts) pieces: \(read) against \(expected) for \(text.debugDescription)")
                }
            }
        }
    }

    @Test("after a closing quote, a carriage return must start a line break")
    func carriageReturnAfterQuote() throws {
        #expect(try CSV.parse("\"a\"\r\nb").map(\.fields) == [[CSV.Field("a", quoted: true)], [CSV.Field("b")]])
        #expect(throws: CSV.SyntaxError(message: "unexpected text after a closing quote", line: 1)) {
            try CSV.parse("\"a\"\rb")
        }
    }
}

/// CSV read one Unicode scalar at a time, the way the CLI read it before it read bytes: the differential test's
/// reference. (One change: a carriage return after a closing quote that does not start a line break is refused as
/// text after the quote; the scalar reader appended it to the quoted field.)
private enum ScalarCSV {
    static func parse(_ text: String) throws(CSV.SyntaxError) -> [CSV.Record] {
        var records: [CSV.Record] = []
        var fields: [CSV.Field] = []
        var field = String.UnicodeScalarView()
        var quoted = false
        var line = 1
        var recordLine = 1
        var atFieldStart = true
        let scalars = Array(text.unicodeScalars)
        var i = 0

        func endField() {
            fields.append(CSV.Field(String(field), quoted: quoted))
            field.removeAll()
            quoted = false
            atFieldStart = true
        }
        func endRecord() {
            endField()
            if !(fields.count == 1 && fields[0].text.isEmpty && !fields[0].quoted) {
                records.append(CSV.Record(fields: fields, line: recordLine))
            }
            fields.removeAll()
        }

        while i < scalars.count {
            let c = scalars[i]
            if atFieldStart, c == "\"" {
                quoted = true
                atFieldStart = false
                i += 1
                var closed = false
                while i < scalars.count {
                    let q = scalars[i]
                    if q == "\"" {
                        if i + 1 < scalars.count, scalars[i + 1] == "\"" {
                            field.append("\"")
                            i += 2
                            continue
                        }
                        i += 1
                        closed = true
                        break
                    }
                    if q == "\n" { line += 1 }
                    field.append(q)
                    i += 1
                }
                guard closed else { throw CSV.SyntaxError(message: "unterminated quoted field", line: recordLine) }
                let lineBreak = i + 1 < scalars.count && scalars[i] == "\r" && scalars[i + 1] == "\n"
                if i < scalars.count, scalars[i] != ",", scalars[i] != "\n", !lineBreak {
                    throw CSV.SyntaxError(message: "unexpected text after a closing quote", line: line)
                }
                continue
            }
            atFieldStart = false
            switch c {
            case ",":
                endField()
            case "\r" where i + 1 < scalars.count && scalars[i + 1] == "\n":
                break
            case "\n":
                endRecord()
                line += 1
                recordLine = line
            default:
                if c == "\"" { throw CSV.SyntaxError(message: "a double quote inside an unquoted field", line: line) }
                field.append(c)
            }
            i += 1
        }
        if !atFieldStart || !fields.isEmpty || !field.isEmpty || quoted {
            endRecord()
        }
        return records
    }
}
