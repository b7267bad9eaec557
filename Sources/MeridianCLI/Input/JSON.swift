// MARK: - JSON

internal import MeridianCore

/// A JSON value that keeps what the CLI needs and Foundation's `JSONSerialization` loses: the exact text of numbers
/// (so a 64-bit integer is never rounded through `Double`, and `2` and `2.0` stay apart) and the order of object keys.
///
/// ```swift
/// let value = try JSON.parse(#"{"op":"insert","values":{"category":3}}"#)
/// value["values"]?["category"]      // .number("3")
/// JSON.object([("id", .string("p1"))]).text   // {"id":"p1"}
/// ```
enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number, as written: `-12`, `2.5`, `1e-3`.
    case number(String)
    case string(String)
    case array([JSON])
    /// Keys in the order they were written (a repeated key is rejected by the parser).
    case object([(String, JSON)])

    static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// The member with this key, for an object.
    subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    /// What kind of value this is, for messages: `a string`, `a number`, `an object`.
    var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

// MARK: - Writing

extension JSON {
    /// The value as compact JSON text on one line (no spaces), keys in their order.
    var text: String {
        var out = ""
        self.write(to: &out)
        return out
    }

    func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): out += n
        case .string(let s): JSONText.write(s, to: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                JSONText.write(key, to: &out)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        }
    }

    /// A JSON number for an integer.
    static func integer<I: BinaryInteger>(_ value: I) -> JSON { .number(String(value)) }

    /// A JSON number for a double, in the shortest form that reads back to the same double (`2.0`, `0.1`, `1e-05`).
    /// JSON has no infinity: ±infinity are written `1e999` and `-1e999`, which every JSON reader turns back into it.
    static func double(_ value: Double) -> JSON {
        if value.isInfinite { return .number(value < 0 ? "-1e999" : "1e999") }
        precondition(!value.isNaN, "NaN is never a valid value")
        return .number(value.description)
    }
}

// MARK: - Parsing

/// A JSON syntax error, at a 1-based column of the text.
struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    var message: String
    /// 1-based position in the text, counted in Unicode scalars.
    var column: Int

    var description: String { "column \(self.column): \(self.message)" }
}

extension JSON {
    /// One input line that must hold a JSON object: the object and its members.
    ///
    /// - Parameter expected: How the message names what was expected (`a JSON object {"op":…}`).
    /// - Throws: ``CLIError`` `badInput`: the syntax error and its column, or what was found instead of an object.
    static func object(line: String, expected: String) throws(CLIError) -> (json: JSON, members: [(String, JSON)]) {
        let json: JSON
        do {
            json = try JSON.parse(line)
        } catch {
            throw CLIError.badInput("invalid JSON at column \(error.column): \(error.message)")
        }
        guard case .object(let members) = json else {
            throw CLIError.badInput("expected \(expected), found \(json.kindDescription)")
        }
        return (json, members)
    }

    /// Parses one JSON value that spans the whole text (surrounding whitespace allowed).
    ///
    /// - Throws: ``JSONSyntaxError`` with the column of the fault.
    static func parse(_ text: String) throws(JSONSyntaxError) -> JSON {
        var text = text
        let result = text.withUTF8 { bytes -> Result<JSON, JSONSyntaxError> in
            var parser = JSONParser(bytes)
            parser.skipWhitespace()
            do throws(JSONSyntaxError) {
                let value = try parser.parseValue(depth: 0)
                parser.skipWhitespace()
                if parser.index < parser.bytes.count {
                    throw parser.error("unexpected \(parser.describeCurrent()) after the value")
                }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

/// A recursive-descent JSON parser over a line's UTF-8 bytes (RFC 8259, strict: no comments, no trailing commas).
///
/// It reads bytes (strings without escapes become `String`s in one step) rather than Unicode scalars, which cost
/// most of `meridian apply`'s CPU: each scalar appended one at a time. Error columns still count Unicode scalars,
/// as users see characters.
struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    static let maximumDepth = 128

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// The 1-based column of the byte at `index`, in Unicode scalars (continuation bytes do not count).
    func column(of index: Int) -> Int {
        var column = 1
        for i in 0..<min(index, self.bytes.count) where self.bytes[i] & 0xC0 != 0x80 { column += 1 }
        return column
    }

    func error(_ message: String) -> JSONSyntaxError {
        JSONSyntaxError(message: message, column: self.column(of: self.index))
    }

    /// The scalar at `index`.
    func scalar(at index: Int) -> Unicode.Scalar {
        var iterator = self.bytes[index...].makeIterator()
        var decoder = UTF8()
        if case .scalarValue(let scalar) = decoder.decode(&iterator) { return scalar }
        return "\u{FFFD}"
    }

    func describeCurrent() -> String {
        guard self.index < self.bytes.count else { return "end of line" }
        return "'\(Character(self.scalar(at: self.index)))'"
    }

    mutating func skipWhitespace() {
        while self.index < self.bytes.count {
            switch self.bytes[self.index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): self.index += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(JSONSyntaxError) -> JSON {
        guard depth < Self.maximumDepth else { throw self.error("nested too deeply") }
        guard self.index < self.bytes.count else { throw self.error("expected a value, found the end of line") }
        switch self.bytes[self.index] {
        case UInt8(ascii: "{"): return try self.parseObject(depth: depth)
        case UInt8(ascii: "["): return try self.parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try self.parseString())
        case UInt8(ascii: "t"):
            try self.expectWord("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try self.expectWord("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try self.expectWord("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try self.parseNumber()
        default: throw self.error("expected a value, found \(self.describeCurrent())")
        }
    }

    mutating func expectWord(_ word: StaticString) throws(JSONSyntaxError) {
        let start = self.index
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        for byte in expected {
            guard self.index < self.bytes.count, self.bytes[self.index] == byte else {
                self.index = start
                throw self.error("expected a value, found \(self.describeCurrent())")
            }
            self.index += 1
        }
    }

    func at(_ byte: Unicode.Scalar) -> Bool {
        self.index < self.bytes.count && self.bytes[self.index] == UInt8(byte.value)
    }

    /// How many keys an object may have before its next key is looked up in a set rather than compared with each.
    static let keysComparedInPlace = 8

    mutating func parseObject(depth: Int) throws(JSONSyntaxError) -> JSON {
        self.index += 1
        var members: [(String, JSON)] = []
        // The keys, hashed only once an object has more than a few: a set per object (two per line of `meridian
        // apply`, each grown from empty) was a sixth of the CLI's CPU reading 20,000 lines (perf); comparing a key
        // with a handful of others costs less.
        var seen: Set<String> = []
        self.skipWhitespace()
        if self.at("}") {
            self.index += 1
            return .object(members)
        }
        while true {
            self.skipWhitespace()
            guard self.at("\"") else {
                throw self.error("expected a key in double quotes, found \(self.describeCurrent())")
            }
            let keyStart = self.index
            let key = try self.parseString()
            let repeated: Bool
            if members.count < Self.keysComparedInPlace {
                repeated = members.contains { $0.0 == key }
            } else {
                if seen.isEmpty { seen = Set(members.map(\.0)) }
                repeated = !seen.insert(key).inserted
            }
            guard !repeated else {
                self.index = keyStart
                throw self.error("key \"\(key)\" appears twice")
            }
            self.skipWhitespace()
            guard self.at(":") else {
                throw self.error("expected ':' after the key, found \(self.describeCurrent())")
            }
            self.index += 1
            self.skipWhitespace()
            members.append((key, try self.parseValue(depth: depth + 1)))
            self.skipWhitespace()
            guard self.index < self.bytes.count else { throw self.error("unterminated object: expected ',' or '}'") }
            if self.at(",") {
                self.index += 1
                continue
            }
            if self.at("}") {
                self.index += 1
                return .object(members)
            }
            throw self.error("expected ',' or '}', found \(self.describeCurrent())")
        }
    }

    mutating func parseArray(depth: Int) throws(JSONSyntaxError) -> JSON {
        self.index += 1
        var items: [JSON] = []
        self.skipWhitespace()
        if self.at("]") {
            self.index += 1
            return .array(items)
        }
        while true {
            self.skipWhitespace()
            items.append(try self.parseValue(depth: depth + 1))
            self.skipWhitespace()
            guard self.index < self.bytes.count else { throw self.error("unterminated array: expected ',' or ']'") }
            if self.at(",") {
                self.index += 1
                continue
            }
            if self.at("]") {
                self.index += 1
                return .array(items)
            }
            throw self.error("expected ',' or ']', found \(self.describeCurrent())")
        }
    }

    mutating func parseString() throws(JSONSyntaxError) -> String {
        self.index += 1
        // The common case: no escape before the closing quote — the bytes are the string.
        let start = self.index
        while self.index < self.bytes.count {
            let byte = self.bytes[self.index]
            if byte == UInt8(ascii: "\"") {
                self.index += 1
                return String(
                    decoding: UnsafeBufferPointer(rebasing: self.bytes[start..<(self.index - 1)]), as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            self.index += 1
        }
        var out = String(decoding: UnsafeBufferPointer(rebasing: self.bytes[start..<self.index]), as: UTF8.self)
        while true {
            guard self.index < self.bytes.count else { throw self.error("unterminated string") }
            let c = self.bytes[self.index]
            if c == UInt8(ascii: "\"") {
                self.index += 1
                return out
            }
            if c < 0x20 { throw self.error("control character in a string (write it as \\n, \\t or \\u00XX)") }
            if c != UInt8(ascii: "\\") {
                // A run of plain bytes up to the next quote, backslash or control character.
                let run = self.index
                while self.index < self.bytes.count, self.bytes[self.index] != UInt8(ascii: "\""),
                    self.bytes[self.index] != UInt8(ascii: "\\"), self.bytes[self.index] >= 0x20
                {
                    self.index += 1
                }
                out += String(decoding: UnsafeBufferPointer(rebasing: self.bytes[run..<self.index]), as: UTF8.self)
                continue
            }
            self.index += 1
            guard self.index < self.bytes.count else { throw self.error("unterminated string") }
            let escape = self.bytes[self.index]
            self.index += 1
            switch escape {
            case UInt8(ascii: "\""): out.unicodeScalars.append("\"")
            case UInt8(ascii: "\\"): out.unicodeScalars.append("\\")
            case UInt8(ascii: "/"): out.unicodeScalars.append("/")
            case UInt8(ascii: "b"): out.unicodeScalars.append("\u{8}")
            case UInt8(ascii: "f"): out.unicodeScalars.append("\u{C}")
            case UInt8(ascii: "n"): out.unicodeScalars.append("\n")
            case UInt8(ascii: "r"): out.unicodeScalars.append("\r")
            case UInt8(ascii: "t"): out.unicodeScalars.append("\t")
            case UInt8(ascii: "u"):
                let first = try self.parseHex4()
                if (0xD800..<0xDC00).contains(first) {
                    guard self.index + 1 < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "\\"),
                        self.bytes[self.index + 1] == UInt8(ascii: "u")
                    else { throw self.error("a high surrogate must be followed by a low surrogate") }
                    self.index += 2
                    let second = try self.parseHex4()
                    guard (0xDC00..<0xE000).contains(second) else {
                        throw self.error("a high surrogate must be followed by a low surrogate")
                    }
                    let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                    out.unicodeScalars.append(Unicode.Scalar(value)!)
                } else if let scalar = Unicode.Scalar(first) {
                    out.unicodeScalars.append(scalar)
                } else {
                    throw self.error("lone surrogate \\u\(String(first, radix: 16)) in a string")
                }
            default:
                self.index -= 1
                throw self.error("unknown escape '\\\(Character(self.scalar(at: self.index)))' in a string")
            }
        }
    }

    mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard self.index < self.bytes.count,
                let digit = Character(Unicode.Scalar(self.bytes[self.index])).hexDigitValue
            else {
                throw self.error("expected 4 hex digits after \\u")
            }
            value = value * 16 + UInt32(digit)
            self.index += 1
        }
        return value
    }

    mutating func parseNumber() throws(JSONSyntaxError) -> JSON {
        let start = self.index
        func isDigit(_ i: Int) -> Bool {
            i < self.bytes.count && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self.bytes[i])
        }
        if self.at("-") { self.index += 1 }
        guard isDigit(self.index) else { throw self.error("expected a digit") }
        if self.at("0") {
            self.index += 1
            if isDigit(self.index) { throw self.error("a number may not start with 0") }
        } else {
            while isDigit(self.index) { self.index += 1 }
        }
        if self.at(".") {
            self.index += 1
            guard isDigit(self.index) else { throw self.error("expected a digit after '.'") }
            while isDigit(self.index) { self.index += 1 }
        }
        if self.at("e") || self.at("E") {
            self.index += 1
            if self.at("+") || self.at("-") { self.index += 1 }
            guard isDigit(self.index) else { throw self.error("expected a digit in the exponent") }
            while isDigit(self.index) { self.index += 1 }
        }
        return .number(String(decoding: UnsafeBufferPointer(rebasing: self.bytes[start..<self.index]), as: UTF8.self))
    }
}
