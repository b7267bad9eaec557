// MARK: - JSON written as bytes

internal import MeridianCore

/// JSON text written straight into UTF-8 bytes: the same text as ``JSON/write(to:)`` and
/// ``ValueRendering/json(_:)`` give, without a `String` per number or a `JSON` value per attribute.
///
/// `meridian watch --format jsonl` writes one line per commit, 20,000 rows of it for a 20,000-row transaction; written
/// into a `String` with a `String` made for every index and number, that was a quarter of the watcher's CPU.
struct JSONBytes {
    private(set) var bytes: [UInt8] = []
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
    /// The attribute names of the last rows written, and their members' keys as written: `{"name":` for the first
    /// attribute, `,"name":` for each next one (escaped once for all the rows of an entity, not once per row).
    private var keys: (names: [String], bytes: [[UInt8]])?

    init(capacity: Int) { self.bytes.reserveCapacity(capacity) }

    /// The text written so far.
    var text: String { String(decoding: self.bytes, as: UTF8.self) }

    /// Appends text as it is (JSON punctuation and member names the caller knows need no escape).
    mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { self.bytes.append(contentsOf: $0) }
    }

    /// Appends an integer in decimal.
    mutating func append(integer value: some BinaryInteger) {
        if value < 0 { self.bytes.append(UInt8(ascii: "-")) }
        var magnitude = UInt64(value.magnitude)
        // At most 20 digits (UInt64.max), written from the last.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            self.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// Appends a JSON string literal: the text of ``JSONText/write(_:to:)`` (`"` and `\` escaped, `\n`, `\r` and
    /// `\t` by name, other control characters and DEL as `\u00xx`, everything else as its UTF-8 bytes). Every byte
    /// that needs an escape is a whole scalar in UTF-8, so escaping bytes escapes the same scalars.
    mutating func append(string: String) {
        self.bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var run = 0
            for (i, byte) in utf8.enumerated() where byte < 0x20 || byte == 0x7F || byte == 0x22 || byte == 0x5C {
                self.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<i]))
                run = i + 1
                self.bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case 0x22: self.bytes.append(UInt8(ascii: "\""))
                case 0x5C: self.bytes.append(UInt8(ascii: "\\"))
                case 0x0A: self.bytes.append(UInt8(ascii: "n"))
                case 0x0D: self.bytes.append(UInt8(ascii: "r"))
                case 0x09: self.bytes.append(UInt8(ascii: "t"))
                default:
                    self.append("u00")
                    self.bytes.append(Self.hexDigits[Int(byte >> 4)])
                    self.bytes.append(Self.hexDigits[Int(byte & 0xF)])
                }
            }
            self.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...]))
        }
        self.bytes.append(UInt8(ascii: "\""))
    }

    /// Appends a value as `meridian`'s JSON output shows it: the text of `ValueRendering.json(value)`, which
    /// decides how a double, a timestamp and bytes are written (each makes a `String` there anyway).
    mutating func append(value: Value) {
        switch value {
        case .null: self.append("null")
        case .int(let i): self.append(integer: i)
        case .string(let s): self.append(string: s)
        case .bool(let b): b ? self.append("true") : self.append("false")
        case .double, .timestamp, .bytes:
            switch ValueRendering.json(value) {
            case .number(let text): self.bytes.append(contentsOf: text.utf8)
            case .string(let text): self.append(string: text)
            case let other: self.bytes.append(contentsOf: other.text.utf8)
            }
        }
    }

    /// Appends a row's values as a JSON object, every attribute of the entity in declaration order (null when
    /// absent), each as ``append(value:)`` writes it.
    mutating func append(valuesOf row: Row, entity: EntitySchema) {
        let attributes = entity.attributes
        guard !attributes.isEmpty else {
            self.append("{}")
            return
        }
        if !(self.keys.map { $0.names.elementsEqual(attributes.lazy.map(\.name)) } ?? false) {
            self.keys = (attributes.map(\.name), Self.keys(of: attributes))
        }
        let keys = self.keys!.bytes
        for i in attributes.indices {
            self.bytes.append(contentsOf: keys[i])
            // Not `row[name]`: the id is no attribute here, and the row's layout is usually the schema's order.
            self.append(value: row.value(of: attributes[i].name, hint: i))
        }
        self.append("}")
    }

    /// The keys ``append(valuesOf:entity:)`` writes before each attribute's value.
    private static func keys(of attributes: [Attribute]) -> [[UInt8]] {
        attributes.indices.map { i in
            var key = JSONBytes(capacity: attributes[i].name.utf8.count + 4)
            key.append(i == 0 ? "{" : ",")
            key.append(string: attributes[i].name)
            key.append(":")
            return key.bytes
        }
    }

    /// Appends a row as `{"id":ID,"values":{…}}`, the shape of `query`, `export` and `watch` output.
    mutating func append(row: Row, entity: EntitySchema) {
        self.append("{\"id\":")
        self.append(string: row.id)
        self.append(",\"values\":")
        self.append(valuesOf: row, entity: entity)
        self.append("}")
    }
}
