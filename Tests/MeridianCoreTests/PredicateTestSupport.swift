internal import Foundation
internal import GRDB
internal import MeridianCore

// MARK: - SQLite glue

/// Converts core values to what the store binds: bools as 0/1, timestamps as microseconds, bytes as blobs.
func databaseValue(_ value: Value) -> DatabaseValue {
    switch value {
    case .null: return .null
    case .int(let i): return i.databaseValue
    case .double(let d): return d.databaseValue
    case .string(let s): return s.databaseValue
    case .bool(let b): return (b ? 1 as Int64 : 0).databaseValue
    case .bytes(let b): return Data(b).databaseValue
    case .timestamp(let t): return t.microseconds.databaseValue
    }
}

/// Statement arguments for a fragment's values.
func statementArguments(_ values: [Value]) -> StatementArguments {
    StatementArguments(values.map(databaseValue))
}
