// MARK: - CSV

/// RFC 4180 CSV, as `import` reads it and `export` writes it.
///
/// Fields are separated by commas and records by line breaks (`\n` or `\r\n`). A field that contains a comma, a
/// double quote or a line break is written in double quotes, with each quote doubled. The CLI tells an empty quoted
/// field (`""`, the empty string) from an empty unquoted one (nothing: null), so exporting and importing again
/// keeps both apart.
enum CSV {
    /// One field as read: its text and whether it was quoted.
    struct Field: Sendable, Equatable {
        var text: String
        var quoted: Bool

        init(_ text: String, quoted: Bool = false) {
            self.text = text
            self.quoted = quoted
        }
    }

    /// One record: its fields and the 1-based line it starts on.
    struct Record: Sendable, Equatable {
        var fields: [Field]
        var line: Int
    }

    /// A malformed CSV text.
    struct SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
        var message: String
        var line: Int
        var description: String { "line \(self.line): \(self.message)" }
    }

    /// Parses a whole CSV text into records; a final line break does not start an empty record, and blank lines
    /// are skipped.
    ///
    /// - Throws: ``SyntaxError`` for an unterminated quoted field or text after a closing quote.
    static func parse(_ text: String) throws(SyntaxError) -> [Record] {
        var records: [Record] = []
        var fields: [Field] = []
        var field = String.UnicodeScalarView()
        var quoted = false
        var line = 1
        var recordLine = 1
        var atFieldStart = true
        let scalars = Array(text.unicodeScalars)
        var i = 0

        func endField() {
            fields.append(Field(String(field), quoted: quoted))
            field.removeAll()
            quoted = false
            atFieldStart = true
        }
        func endRecord() {
            endField()
            if !(fields.count == 1 && fields[0].text.isEmpty && !fields[0].quoted) {
                records.append(Record(fields: fields, line: recordLine))
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
                guard closed else { throw SyntaxError(message: "unterminated quoted field", line: recordLine) }
                if i < scalars.count, scalars[i] != ",", scalars[i] != "\n", scalars[i] != "\r" {
                    throw SyntaxError(message: "unexpected text after a closing quote", line: line)
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
                if c == "\"" { throw SyntaxError(message: "a double quote inside an unquoted field", line: line) }
                field.append(c)
            }
            i += 1
        }
        if !atFieldStart || !fields.isEmpty || !field.isEmpty || quoted {
            endRecord()
        }
        return records
    }

    /// One field as CSV text: quoted when it must be, or when it is the empty string (`""`); `nil` (null) is empty.
    static func quote(_ text: String?) -> String {
        guard let text else { return "" }
        if text.isEmpty { return "\"\"" }
        let needsQuotes = text.unicodeScalars.contains { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }
        guard needsQuotes else { return text }
        return "\"" + text.replacingAll("\"", with: "\"\"") + "\""
    }

    /// One record as a CSV line (without the line break).
    static func line(_ fields: [String?]) -> String {
        fields.map(Self.quote).joined(separator: ",")
    }
}

extension String {
    /// The string with every occurrence of `target` replaced (Foundation-free).
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        out.reserveCapacity(self.count)
        for c in self {
            if c == target { out += replacement } else { out.append(c) }
        }
        return out
    }
}
