// MARK: - StoredValue

internal import CMeridianSQLite
internal import Foundation
internal import GRDB
internal import MeridianCore

/// A value as SQLite stores it (one of its five storage classes), before it is typed by the schema.
enum StoredValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    init(_ databaseValue: DatabaseValue) {
        switch databaseValue.storage {
        case .null: self = .null
        case .int64(let i): self = .integer(i)
        case .double(let d): self = .real(d)
        case .string(let s): self = .text(s)
        case .blob(let data): self = .blob([UInt8](data))
        }
    }

    /// Column `index` of the row `statement` (a `sqlite3_stmt *`) stands on, read with SQLite's own functions in one
    /// call: what `init(_:)` of GRDB's `DatabaseValue` of it gives (text decoded from its UTF-8, invalid bytes
    /// replaced), without measuring the text again with `strlen` nor copying a blob into `Data` first. (Meridian
    /// never stores a text holding NUL, which GRDB's reading would cut short: validation refuses it.)
    init(column index: CInt, of statement: OpaquePointer) {
        var value = meridian_sqlite3_value()
        meridian_sqlite3_column(UnsafeMutableRawPointer(statement), index, &value)
        switch value.type {
        case 1: self = .integer(value.integer)
        case 2: self = .real(value.real)
        case 3:
            self = .text(
                value.bytes.map {
                    String(decoding: UnsafeRawBufferPointer(start: $0, count: Int(value.count)), as: UTF8.self)
                } ?? "")
        case 4:
            self = .blob(value.bytes.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(value.count))) } ?? [])
        default: self = .null
        }
    }

    /// The value as it is, without a schema type.
    var rawValue: Value {
        switch self {
        case .null: .null
        case .integer(let i): .int(i)
        case .real(let d): .double(d)
        case .text(let s): .string(s)
        case .blob(let b): .bytes(b)
        }
    }

    /// The value typed as `type`: converted when the conversion is lossless, else the raw value and `fits == false`.
    func typed(as type: AttributeType) -> (value: Value, fits: Bool) {
        switch self {
        case .null: (.null, true)
        case .integer(let i): Self.typed(integer: i, as: type)
        case .real(let d): Self.typed(real: d, as: type)
        case .text(let s): (.string(s), type == .string)
        case .blob(let b): (.bytes(b), type == .bytes)
        }
    }

    /// A stored integer typed as `type` (``typed(as:)``; a ``CursorRow``'s values too).
    static func typed(integer i: Int64, as type: AttributeType) -> (value: Value, fits: Bool) {
        switch type {
        case .int: return (.int(i), true)
        case .double:
            let d = Double(i)
            if Self.exactInteger(d) == i { return (.double(d), true) }
        case .bool:
            if i == 0 || i == 1 { return (.bool(i == 1), true) }
        case .timestamp: return (.timestamp(Timestamp(microseconds: i)), true)
        case .string, .bytes: break
        }
        return (.int(i), false)
    }

    /// A stored real typed as `type` (``typed(as:)``; a ``CursorRow``'s values too).
    static func typed(real d: Double, as type: AttributeType) -> (value: Value, fits: Bool) {
        switch type {
        case .int:
            if let i = Self.exactInteger(d) { return (.int(i), true) }
        case .double: return (.double(d), true)
        case .bool:
            if d == 0 || d == 1 { return (.bool(d == 1), true) }
        case .timestamp:
            if let i = Self.exactInteger(d) { return (.timestamp(Timestamp(microseconds: i)), true) }
        case .string, .bytes: break
        }
        return (.double(d), false)
    }

    static func exactInteger(_ d: Double) -> Int64? {
        guard d == d.rounded(), d >= -9_223_372_036_854_775_808.0, d < 9_223_372_036_854_775_808.0 else { return nil }
        return Int64(d)
    }
}

// MARK: - Value to SQLite

extension Value {
    /// The value as GRDB binds it: bools as 0/1, timestamps as microseconds, bytes as a blob.
    var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .int(let i): i.databaseValue
        case .double(let d): d.databaseValue
        case .string(let s): s.databaseValue
        case .bool(let b): Int64(b ? 1 : 0).databaseValue
        case .bytes(let b): Data(b).databaseValue
        case .timestamp(let t): t.microseconds.databaseValue
        }
    }

    /// The value as an SQL literal, for `DEFAULT` clauses.
    var sqlLiteral: String {
        switch self {
        case .null: return "NULL"
        case .int(let i): return String(i)
        case .double(let d):
            if d.isInfinite { return d < 0 ? "-9e999" : "9e999" }
            let text = String(d)
            return text.contains(".") || text.contains("e") ? text : text + ".0"
        case .string(let s): return "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
        case .bool(let b): return b ? "1" : "0"
        case .bytes(let b): return "X'" + b.map { String(format: "%02X", $0) }.joined() + "'"
        case .timestamp(let t): return String(t.microseconds)
        }
    }
}
