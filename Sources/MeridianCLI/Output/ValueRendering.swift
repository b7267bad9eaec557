// MARK: - Values and rows as JSON and text

internal import Foundation
internal import MeridianCore

/// How the CLI writes values, so that everything it prints reads back through ``ValueParsing``:
///
/// | value | JSON | text (table, CSV) |
/// |---|---|---|
/// | null | `null` | empty |
/// | int | `42` | `42` |
/// | double | `2.5`, `2.0`, `1e999` for infinity | `2.5`, `2.0`, `inf` |
/// | string | `"Café"` | `Café` |
/// | bool | `true` | `true` |
/// | timestamp | `"2024-05-01T12:30:00Z"` | `2024-05-01T12:30:00Z` |
/// | bytes | `"base64:AP8="` | `base64:AP8=` |
enum ValueRendering {
    /// The JSON form of a value.
    static func json(_ value: Value) -> JSON {
        switch value {
        case .null: .null
        case .int(let i): .integer(i)
        case .double(let d): .double(d)
        case .string(let s): .string(s)
        case .bool(let b): .bool(b)
        case .timestamp(let t): .string(t.iso8601)
        case .bytes(let b): .string("base64:" + Data(b).base64EncodedString())
        }
    }

    /// The text form of a value; null is the empty string.
    static func text(_ value: Value) -> String {
        switch value {
        case .null: ""
        case .int(let i): String(i)
        case .double(let d): d.isInfinite ? (d < 0 ? "-inf" : "inf") : d.description
        case .string(let s): s
        case .bool(let b): b ? "true" : "false"
        case .timestamp(let t): t.iso8601
        case .bytes(let b): "base64:" + Data(b).base64EncodedString()
        }
    }
}
