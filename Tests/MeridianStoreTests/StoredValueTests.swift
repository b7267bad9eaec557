// MARK: - StoredValue read straight from SQLite

import GRDB
import MeridianCore
import Testing

@testable import MeridianStore

@Suite("Stored values")
struct StoredValueTests {
    @Test("a column read in one call is what GRDB's DatabaseValue of it gives, for every storage class")
    func columnMatchesGRDB() throws {
        let queue = try DatabaseQueue()
        try queue.read { db in
            // Numbers at their edges, text in and out of ASCII (and bytes that are not UTF-8, replaced alike), blobs
            // empty and not, NULL.
            let sql = """
                SELECT 0, -9223372036854775808, 9223372036854775807, 2.5, -0.0, 1e308, 'plain', '', 'Café ☕️ ü',
                       CAST(x'41ff42' AS TEXT), x'', x'00ff7f', NULL, 'x' || char(0x1F600)
                """
            let statement = try db.makeStatement(sql: sql)
            // Stepped onto its one row.
            let cursor = try GRDB.Row.fetchCursor(statement)
            _ = try #require(try cursor.next())
            let handle = statement.sqliteStatement
            for index in 0..<CInt(statement.columnCount) {
                let direct = StoredValue(column: index, of: handle)
                let viaGRDB = StoredValue(DatabaseValue(sqliteStatement: handle, index: index))
                #expect(direct == viaGRDB, "column \(index)")
            }
            #expect(StoredValue(column: 12, of: handle) == .null)
            #expect(StoredValue(column: 10, of: handle) == .blob([]))
            #expect(StoredValue(column: 11, of: handle) == .blob([0, 255, 127]))
            #expect(StoredValue(column: 9, of: handle) == .text("A\u{FFFD}B"))
        }
    }
}
