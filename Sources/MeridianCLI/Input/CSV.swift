// MARK: - CSV

internal import MeridianCore

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
    /// Read as UTF-8 bytes: every character that delimits is ASCII, and no byte of a multi-byte character is, so an
    /// unquoted field is a slice of the text, made a `String` once (reading scalar by scalar into a copy of the
    /// whole text as scalars was a third of `meridian import`'s CPU).
    ///
    /// - Throws: ``SyntaxError`` for an unterminated quoted field or text after a closing quote.
    static func parse(_ text: String) throws(SyntaxError) -> [Record] {
        var text = text
        return try text.withUTF8 { bytes in
            Result { () throws(SyntaxError) in try Self.parse(utf8: bytes, firstLine: 1) }
        }.get()
    }

    /// Parses a whole CSV text in `parts` pieces at once (one per core: `meridian import` reads the whole file before
    /// it sends its first row, while the server waits), split at line breaks outside quotes: the same records, in
    /// order, piece by piece, or the same first error, as ``parse(_:)``.
    ///
    /// A line break is outside quotes when an even number of double quotes came before it: in text that reads
    /// without error up to there, every quoted field holds an even number of them (its two and the doubled ones)
    /// and an unquoted field none. So the first piece reads exactly as one pass would, and each next piece starts
    /// where one pass would be at the start of a record — or an earlier piece has the first error, which is the one
    /// reported.
    static func parse(_ text: String, parts: Int) throws(SyntaxError) -> [[Record]] {
        var text = text
        return try text.withUTF8 { bytes in
            Result { () throws(SyntaxError) in try Self.parse(utf8: bytes, parts: parts) }
        }.get()
    }

    private static func parse(utf8 bytes: UnsafeBufferPointer<UInt8>, parts: Int) throws(SyntaxError) -> [[Record]] {
        // Where each piece starts: its offset and its first line.
        var starts = [(offset: 0, line: 1)]
        var quotes = 0
        var lines = 1
        var i = 0
        for part in 1..<max(1, parts) {
            let target = bytes.count / parts * part
            while i < bytes.count {
                let byte = bytes[i]
                i += 1
                if byte == 0x22 {
                    quotes += 1
                } else if byte == 0x0A {
                    lines += 1
                    if i >= target, quotes % 2 == 0 {
                        starts.append((i, lines))
                        break
                    }
                }
            }
        }
        nonisolated(unsafe) let text = bytes  // read, never written, by every piece
        let pieces = concurrently(starts.count) { [starts] piece throws(SyntaxError) in
            let end = piece + 1 < starts.count ? starts[piece + 1].offset : text.count
            return try Self.parse(
                utf8: UnsafeBufferPointer(rebasing: text[starts[piece].offset..<end]), firstLine: starts[piece].line)
        }
        return try pieces.map { piece throws(SyntaxError) in try piece.get() }
    }

    private static func parse(utf8 bytes: UnsafeBufferPointer<UInt8>, firstLine: Int) throws(SyntaxError) -> [Record] {
        let (comma, quote, newline, carriageReturn): (UInt8, UInt8, UInt8, UInt8) = (0x2C, 0x22, 0x0A, 0x0D)
        var records: [Record] = []
        var fields: [Field] = []
        var line = firstLine
        var recordLine = firstLine
        var unescaped: [UInt8] = []
        let count = bytes.count
        var i = 0

        func endRecord() {
            if !(fields.count == 1 && fields[0].text.isEmpty && !fields[0].quoted) {
                records.append(Record(fields: fields, line: recordLine))
            }
            fields.removeAll(keepingCapacity: true)
        }

        // Each pass reads one field and what ends it: a comma, a line break (`\n` or `\r\n`) or the end of the text.
        while true {
            guard i < count else {
                // The end, where a field would start: a record is open only when a comma came before.
                if !fields.isEmpty {
                    fields.append(Field(""))
                    endRecord()
                }
                return records
            }
            if bytes[i] == quote {
                i += 1
                unescaped.removeAll(keepingCapacity: true)
                var run = i
                var closed = false
                while i < count {
                    let byte = bytes[i]
                    if byte == quote {
                        unescaped.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
                        if i + 1 < count, bytes[i + 1] == quote {
                            unescaped.append(quote)
                            i += 2
                            run = i
                            continue
                        }
                        i += 1
                        closed = true
                        break
                    }
                    if byte == newline { line += 1 }
                    i += 1
                }
                guard closed else { throw SyntaxError(message: "unterminated quoted field", line: recordLine) }
                fields.append(Field(String(decoding: unescaped, as: UTF8.self), quoted: true))
                if i < count, bytes[i] == carriageReturn, i + 1 < count, bytes[i + 1] == newline { i += 1 }
                if i < count, bytes[i] != comma, bytes[i] != newline {
                    throw SyntaxError(message: "unexpected text after a closing quote", line: line)
                }
            } else {
                let start = i
                while i < count, bytes[i] != comma, bytes[i] != newline {
                    if bytes[i] == quote {
                        throw SyntaxError(message: "a double quote inside an unquoted field", line: line)
                    }
                    i += 1
                }
                var end = i
                if i < count, bytes[i] == newline, end > start, bytes[end - 1] == carriageReturn { end -= 1 }
                fields.append(Field(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)))
            }
            guard i < count else {
                endRecord()
                return records
            }
            if bytes[i] == newline {
                endRecord()
                line += 1
                recordLine = line
            }
            i += 1
        }
    }

    /// One field as CSV text: quoted when it must be, or when it is the empty string (`""`); `nil` (null) is empty.
    static func quote(_ text: String?) -> String {
        var out: [UInt8] = []
        Self.append(field: text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// ``quote(_:)``'s text appended as UTF-8 bytes. The quotes inside a quoted field are doubled byte by byte, as the
    /// reader reads them: a `"` followed by a combining mark is one `Character`, which a replacement of `Character`s
    /// left undoubled (the field then did not read back).
    static func append(field text: String?, to out: inout [UInt8]) {
        guard var text else { return }
        if text.isEmpty { return out.append(contentsOf: [0x22, 0x22]) }
        text.withUTF8 { utf8 in
            guard utf8.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }) else {
                return out.append(contentsOf: utf8)
            }
            out.append(0x22)
            for byte in utf8 {
                out.append(byte)
                if byte == 0x22 { out.append(0x22) }
            }
            out.append(0x22)
        }
    }

    /// One record as a CSV line (without the line break).
    static func line(_ fields: [String?]) -> String {
        fields.map(Self.quote).joined(separator: ",")
    }
}
