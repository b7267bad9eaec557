// MARK: - ImageJSON

/// Parses the JSON row images the capture triggers write into `meridian_changes`.
///
/// The triggers write one object per image, attribute name to value: integers as JSON integers, reals as JSON
/// numbers with 19 significant digits (`printf('%!.19g')`, always with a `.` or an exponent, `±1e999` for
/// infinities; SQLite 3.40's printf is off by an ulp for ~0.2% of doubles at 17 digits, exact at 18 or more), text as JSON strings, blobs as `{"$blob": "HEX"}`, null as null. This parser reads exactly that, so
/// every value round-trips bit for bit.
enum ImageJSON {
    struct ParseError: Error, CustomStringConvertible {
        var offset: Int
        var reason: String
        var description: String { "malformed row image at byte \(self.offset): \(self.reason)" }
    }

    static func parseObject(_ text: String) throws(ParseError) -> [String: StoredValue] {
        var object: [String: StoredValue] = [:]
        try self.parseObject(text) { name, value in object[name] = value }
        return object
    }

    /// Parses an image, handing each attribute to `body` (in the text's order; a repeated name is handed twice)
    /// instead of building a dictionary that the caller would only convert into another.
    static func parseObject(
        _ text: String, _ body: (String, StoredValue) -> Void
    ) throws(ParseError) {
        var parser = Parser(bytes: Array(text.utf8))
        try parser.object(body)
        parser.skipSpace()
        guard parser.i == parser.bytes.count else { throw ParseError(offset: parser.i, reason: "trailing text") }
    }

    struct Parser {
        let bytes: [UInt8]
        var i = 0

        mutating func skipSpace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 {
                i += 1
            }
        }

        mutating func expect(_ c: UInt8) throws(ParseError) {
            skipSpace()
            guard i < bytes.count, bytes[i] == c else {
                throw ParseError(offset: i, reason: "expected '\(Character(Unicode.Scalar(c)))'")
            }
            i += 1
        }

        mutating func object() throws(ParseError) -> [String: StoredValue] {
            var out: [String: StoredValue] = [:]
            try self.object { key, value in out[key] = value }
            return out
        }

        mutating func object(_ body: (String, StoredValue) -> Void) throws(ParseError) {
            try expect(UInt8(ascii: "{"))
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
                i += 1
                return
            }
            while true {
                skipSpace()
                let key = try string()
                try expect(UInt8(ascii: ":"))
                body(key, try value())
                skipSpace()
                guard i < bytes.count else { throw ParseError(offset: i, reason: "unterminated object") }
                if bytes[i] == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                try expect(UInt8(ascii: "}"))
                return
            }
        }

        mutating func value() throws(ParseError) -> StoredValue {
            skipSpace()
            guard i < bytes.count else { throw ParseError(offset: i, reason: "missing value") }
            switch bytes[i] {
            case UInt8(ascii: "\""):
                return .text(try string())
            case UInt8(ascii: "{"):
                let nested = try object()
                guard nested.count == 1, case .text(let hex)? = nested["$blob"], let blob = Self.unhex(hex) else {
                    throw ParseError(offset: i, reason: "an object value must be {\"$blob\": HEX}")
                }
                return .blob(blob)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            case UInt8(ascii: "t"):
                try literal("true")
                return .integer(1)
            case UInt8(ascii: "f"):
                try literal("false")
                return .integer(0)
            default:
                return try number()
            }
        }

        mutating func literal(_ word: String) throws(ParseError) {
            let w = Array(word.utf8)
            guard i + w.count <= bytes.count, Array(bytes[i..<i + w.count]) == w else {
                throw ParseError(offset: i, reason: "expected \(word)")
            }
            i += w.count
        }

        mutating func number() throws(ParseError) -> StoredValue {
            let start = i
            var isReal = false
            while i < bytes.count {
                let c = bytes[i]
                if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") {
                    isReal = true
                } else if !((c >= 48 && c <= 57) || c == UInt8(ascii: "-") || c == UInt8(ascii: "+")) {
                    break
                }
                i += 1
            }
            let text = String(decoding: bytes[start..<i], as: UTF8.self)
            if !isReal, let n = Int64(text) { return .integer(n) }
            guard !text.isEmpty, let d = Double(text) else { throw ParseError(offset: start, reason: "bad number") }
            return .real(d)
        }

        mutating func string() throws(ParseError) -> String {
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else {
                throw ParseError(offset: i, reason: "expected a string")
            }
            i += 1
            // Fast path: no escape before the closing quote (attribute names, most values).
            let start = i
            while i < bytes.count, bytes[i] != UInt8(ascii: "\""), bytes[i] != UInt8(ascii: "\\") { i += 1 }
            if i < bytes.count, bytes[i] == UInt8(ascii: "\"") {
                i += 1
                return String(decoding: bytes[start..<(i - 1)], as: UTF8.self)
            }
            var out: [UInt8] = Array(bytes[start..<i])
            while i < bytes.count {
                let c = bytes[i]
                i += 1
                if c == UInt8(ascii: "\"") { return String(decoding: out, as: UTF8.self) }
                guard c == UInt8(ascii: "\\") else {
                    out.append(c)
                    continue
                }
                guard i < bytes.count else { break }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if scalar >= 0xD800, scalar < 0xDC00, i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"),
                        bytes[i + 1] == UInt8(ascii: "u")
                    {
                        i += 2
                        let low = try hex4()
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low &- 0xDC00)
                    }
                    let u = Unicode.Scalar(scalar) ?? "\u{FFFD}"
                    out.append(contentsOf: Array(String(u).utf8))
                default: out.append(e)
                }
            }
            throw ParseError(offset: i, reason: "unterminated string")
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            guard i + 4 <= bytes.count else { throw ParseError(offset: i, reason: "short \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                guard let d = Self.hexDigit(bytes[i]) else { throw ParseError(offset: i, reason: "bad \\u escape") }
                v = v << 4 | UInt32(d)
                i += 1
            }
            return v
        }

        static func hexDigit(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 65...70: c - 55
            case 97...102: c - 87
            default: nil
            }
        }

        static func unhex(_ text: String) -> [UInt8]? {
            let chars = Array(text.utf8)
            guard chars.count % 2 == 0 else { return nil }
            var out: [UInt8] = []
            out.reserveCapacity(chars.count / 2)
            var k = 0
            while k < chars.count {
                guard let hi = hexDigit(chars[k]), let lo = hexDigit(chars[k + 1]) else { return nil }
                out.append(hi << 4 | lo)
                k += 2
            }
            return out
        }
    }
}
