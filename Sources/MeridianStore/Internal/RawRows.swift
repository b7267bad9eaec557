// MARK: - RawRows: a read statement's rows, straight through SQLite

internal import CMeridianSQLite
internal import GRDB

/// Binds and steps the store's own read statements on the fan-out's path with SQLite's functions, and reads their
/// columns in place.
///
/// GRDB's way — `StatementArguments` of existential values, a cursor wrapping each row in a `GRDB.Row`, `row[i]`
/// decoded through generic code that looks type metadata up at run time — cost more than SQLite's own work when the
/// fan-out read a 1-row commit back (`perf` of `meridian-bench server`'s latency case: the read was 7% of the
/// process's samples, the SQLite library under half a percent of them). Only for statements prepared from the
/// store's own SQL, read inside a transaction the caller holds.
enum RawRows {
    /// Steps `statement`, whose parameters are bound, through its rows, calling `body` with its handle standing on
    /// each; the statement is reset afterwards, also when `body` throws.
    ///
    /// - Throws: The `DatabaseError` GRDB would have thrown for a failing step (its extended result code and
    ///   SQLite's message), or what `body` throws.
    static func forEach(_ statement: Statement, _ body: (OpaquePointer) throws -> Void) throws {
        let handle = statement.sqliteStatement
        defer { meridian_sqlite3_reset(UnsafeMutableRawPointer(handle)) }
        while true {
            let (code, message) = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 512) {
                buffer -> (CInt, String?) in
                let code = meridian_sqlite3_step_row(
                    UnsafeMutableRawPointer(handle), buffer.baseAddress, CInt(buffer.count))
                // SQLITE_ROW, SQLITE_DONE (which reset the statement); else the message copied before the reset.
                return code == 100 || code == 101 ? (code, nil) : (code, String(cString: buffer.baseAddress!))
            }
            if let message {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
            }
            guard code == 100 else { return }
            try body(handle)
        }
    }

    /// Column 0 of the first row of `statement` (its parameters bound), read by `column`; `nil` without a row.
    static func first<T>(_ statement: Statement, _ column: (OpaquePointer, CInt) -> T?) throws -> T? {
        var first: T? = nil
        var seen = false
        try self.forEach(statement) { handle in
            if !seen { first = column(handle, 0) }
            seen = true
        }
        return first
    }

    /// Column `index` as an integer (`nil` for any other storage class).
    static func int64(_ handle: OpaquePointer, _ index: CInt) -> Int64? {
        guard case .integer(let integer) = StoredValue(column: index, of: handle) else { return nil }
        return integer
    }

    /// Column `index` as a text decoded from its UTF-8 (invalid bytes replaced, as GRDB reads a `String`); `nil` for
    /// any other storage class.
    static func text(_ handle: OpaquePointer, _ index: CInt) -> String? {
        guard case .text(let text) = StoredValue(column: index, of: handle) else { return nil }
        return text
    }

    /// Binds an integer to parameter `index`; returns SQLite's result code.
    static func bind(_ value: Int64, _ statement: Statement, _ index: CInt) -> CInt {
        meridian_sqlite3_bind_int64(UnsafeMutableRawPointer(statement.sqliteStatement), index, value)
    }

    /// Binds a text (copied by SQLite) to parameter `index`; returns SQLite's result code.
    static func bind(_ text: String, _ statement: Statement, _ index: CInt) -> CInt {
        TransactionExecutor.bindText(text, statement.sqliteStatement, index)
    }
}
