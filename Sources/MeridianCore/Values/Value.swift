// MARK: - Value

/// One attribute value, as stored, compared and sent over the wire.
///
/// Values follow the comparison rules of SQLite's default (`BINARY`) collation, so that a predicate evaluated in
/// memory and the same predicate compiled to SQL always agree:
///
/// - integers and doubles compare numerically with each other, exactly (no rounding through `Double`);
/// - strings compare by their UTF-8 bytes, never by Swift's `String <` (which uses canonical equivalence);
/// - bytes compare with `memcmp` semantics, then by length;
/// - across storage classes the order is `null < numbers < strings < bytes`, SQLite's own;
/// - `bool` is stored as the integers 0 and 1 and orders as such; `timestamp` is stored as integer microseconds.
///
/// Equality and hashing follow the same rules: `.int(3) == .double(3.0)`, and `"é"` precomposed is not equal to
/// `"e\u{301}"`.
///
/// ```swift
/// let a: Value = .int(3)
/// let b: Value = .double(3.5)
/// a < b                      // true
/// Value.string("Z") < .string("a")   // true: "Z" is 0x5A, "a" is 0x61
/// ```
///
/// - Note: `Value.double(.nan)` can be constructed, but every entry point that accepts values from users (schema
///   defaults, predicates, writes) rejects NaN; see ``Value/isValid``.
public enum Value: Sendable {
    /// The absence of a value (SQL `NULL`).
    case null
    /// A 64-bit signed integer.
    case int(Int64)
    /// A finite or infinite double; never NaN once validated.
    case double(Double)
    /// A UTF-8 string.
    case string(String)
    /// A boolean, stored as 0 or 1.
    case bool(Bool)
    /// Raw bytes.
    case bytes([UInt8])
    /// A point in time, in microseconds since 1970-01-01T00:00:00Z.
    case timestamp(Timestamp)
}

extension Value {
    /// Whether this value is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// False only for a NaN double, which no entry point accepts.
    public var isValid: Bool {
        if case .double(let d) = self { return !d.isNaN }
        return true
    }

    /// The value as the store holds it and every reader reads it: a double −0.0 is 0.0 (SQLite keeps a REAL with no
    /// fractional part as an integer, which reads back as 0.0), every other value itself. Writes are stored this
    /// way, and a client shows its own optimistic write this way, so that the writer sees what everyone else does.
    public var stored: Value {
        if case .double(let d) = self, d == 0, d.sign == .minus { return .double(0) }
        return self
    }

    /// The value's kind, or `nil` for `null`.
    public var type: AttributeType? {
        switch self {
        case .null: nil
        case .int: .int
        case .double: .double
        case .string: .string
        case .bool: .bool
        case .bytes: .bytes
        case .timestamp: .timestamp
        }
    }

    /// The string payload, if this is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The numeric payload as a double, for ints, doubles, bools and timestamps.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        case .bool(let b): b ? 1 : 0
        case .timestamp(let t): Double(t.microseconds)
        default: nil
        }
    }
}

// MARK: - Storage classes

extension Value {
    /// SQLite's storage class order: null, then numbers, then text, then blobs.
    var storageClassRank: Int {
        switch self {
        case .null: 0
        case .int, .double, .bool, .timestamp: 1
        case .string: 2
        case .bytes: 3
        }
    }
}

// MARK: - Literal conformances

extension Value: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

// MARK: - Description

extension Value: CustomStringConvertible {
    /// A predicate-language rendering of the value (strings quoted and escaped, bytes in hex).
    public var description: String {
        switch self {
        case .null: return "nil"
        case .int(let i): return String(i)
        case .double(let d): return Value.render(d)
        case .string(let s): return Value.quote(s)
        case .bool(let b): return b ? "true" : "false"
        case .bytes(let b): return "x'" + b.map { Value.hex($0) }.joined() + "'"
        case .timestamp(let t): return Value.quote(t.iso8601)
        }
    }

    /// The value as display text: strings unquoted, null as the empty string.
    public var displayText: String {
        switch self {
        case .null: return ""
        case .string(let s): return s
        case .timestamp(let t): return t.iso8601
        default: return self.description
        }
    }

    static func render(_ d: Double) -> String {
        if d.isNaN { return "nan" }
        if d.isInfinite { return d < 0 ? "-inf" : "inf" }
        if d == d.rounded(), abs(d) < 1e15 {
            return String(Int64(d)) + ".0"
        }
        return String(d)
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }

    /// Quotes a string for the predicate language: `"` and `\` escaped, control characters as `\n`, `\t`, `\u{…}`.
    public static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\u{" + String(scalar.value, radix: 16) + "}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
