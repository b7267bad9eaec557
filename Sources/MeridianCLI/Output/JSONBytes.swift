// MARK: - JSON written as bytes

internal import MeridianCore

/// JSON text written straight into UTF-8 bytes: the same text as ``JSON/write(to:)`` and
/// ``ValueRendering/json(_:)`` give, without a `String` per number or a `JSON` value per attribute.
///
/// `meridian watch --format jsonl` writes one line per commit, 20,000 rows of it for a 20,000-row transaction; written
/// into a `String` with a `String` made for every index and number, that was a quarter of the watcher's CPU.
struct JSONBytes: ~Copyable {
    /// The bytes written so far are the first `count` of `capacity` bytes at `base` (its own allocation).
    ///
    /// Not an `[UInt8]`: each `append(contentsOf:)` to an array checks its uniqueness and capacity and goes through the
    /// generic copy, much of this writer's fifth of a watcher's CPU for a 20,000-row change line (perf); here an
    /// append is a capacity check and a `memcpy`.
    private var base: UnsafeMutableRawPointer
    private(set) var count = 0
    private var capacity: Int
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
    /// The attribute names of the last rows written, and their members' keys as written: `{"name":` for the first
    /// attribute, `,"name":` for each next one (escaped once for all the rows of an entity, not once per row).
    private var keys: (names: [String], bytes: [[UInt8]])?

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        self.base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 1)
    }

    deinit { self.base.deallocate() }

    /// The bytes written so far.
    var bytes: [UInt8] { [UInt8](UnsafeRawBufferPointer(start: self.base, count: self.count)) }

    /// The text written so far.
    var text: String { String(decoding: UnsafeRawBufferPointer(start: self.base, count: self.count), as: UTF8.self) }

    var isEmpty: Bool { self.count == 0 }

    /// Room for `n` more bytes.
    @inline(__always)
    private mutating func reserve(_ n: Int) {
        if self.count &+ n > self.capacity { self.grow(to: self.count + n) }
    }

    @inline(never)
    private mutating func grow(to needed: Int) {
        let capacity = max(needed, self.capacity * 2)
        let base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 1)
        base.copyMemory(from: self.base, byteCount: self.count)
        self.base.deallocate()
        self.base = base
        self.capacity = capacity
    }

    /// Appends `bytes` (JSON text written elsewhere) as they are.
    mutating func append(contentsOf bytes: [UInt8]) {
        bytes.withUnsafeBytes { self.append(bytes: $0) }
    }

    /// Appends `bytes` as they are.
    @inline(__always)
    private mutating func append(bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress else { return }
        self.reserve(bytes.count)
        (self.base + self.count).copyMemory(from: source, byteCount: bytes.count)
        self.count &+= bytes.count
    }

    @inline(__always)
    private mutating func append(byte: UInt8) {
        self.reserve(1)
        self.base.storeBytes(of: byte, toByteOffset: self.count, as: UInt8.self)
        self.count &+= 1
    }

    /// Appends text as it is (JSON punctuation and member names the caller knows need no escape).
    mutating func append(_ text: StaticString) {
        // `withUTF8Buffer`, not `utf8Start`: a static string made from one scalar has no pointer to read.
        text.withUTF8Buffer { self.append(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Appends an integer in decimal.
    mutating func append(integer value: some BinaryInteger) {
        if value < 0 { self.append(byte: UInt8(ascii: "-")) }
        var magnitude = UInt64(value.magnitude)
        // At most 20 digits (UInt64.max), written from the last.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            self.append(bytes: UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: digits[start...])))
        }
    }

    /// Appends a JSON string literal: the text of ``JSONText/write(_:to:)`` (`"` and `\` escaped, `\n`, `\r` and
    /// `\t` by name, other control characters and DEL as `\u00xx`, everything else as its UTF-8 bytes). Every byte
    /// that needs an escape is a whole scalar in UTF-8, so escaping bytes escapes the same scalars.
    mutating func append(string: String) {
        self.append(byte: UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var run = 0
            for (i, byte) in utf8.enumerated() where byte < 0x20 || byte == 0x7F || byte == 0x22 || byte == 0x5C {
                self.append(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: utf8[run..<i])))
                run = i + 1
                self.append(byte: UInt8(ascii: "\\"))
                switch byte {
                case 0x22: self.append(byte: UInt8(ascii: "\""))
                case 0x5C: self.append(byte: UInt8(ascii: "\\"))
                case 0x0A: self.append(byte: UInt8(ascii: "n"))
                case 0x0D: self.append(byte: UInt8(ascii: "r"))
                case 0x09: self.append(byte: UInt8(ascii: "t"))
                default:
                    self.append("u00")
                    self.append(byte: Self.hexDigits[Int(byte >> 4)])
                    self.append(byte: Self.hexDigits[Int(byte & 0xF)])
                }
            }
            self.append(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: utf8[run...])))
        }
        self.append(byte: UInt8(ascii: "\""))
    }

    /// Appends text's UTF-8 bytes as they are.
    private mutating func append(utf8 text: String) {
        var text = text
        text.withUTF8 { self.append(bytes: UnsafeRawBufferPointer($0)) }
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
            case .number(let text): self.append(utf8: text)
            case .string(let text): self.append(string: text)
            case let other: self.append(utf8: other.text)
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
            keys[i].withUnsafeBytes { self.append(bytes: $0) }
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
