// MARK: - RawRows: statements stepped straight through SQLite read what GRDB reads

import GRDB
import Testing

@testable import MeridianStore

@Suite("Raw rows")
struct RawRowsTests {
    @Test("integers and texts read in place equal GRDB's reading: nulls, other storage classes, invalid UTF-8")
    func sameAsGRDB() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (k INTEGER PRIMARY KEY, a, b)")
            try db.execute(
                sql: """
                    INSERT INTO t (k, a, b) VALUES
                        (1, 42, 'plain'), (2, NULL, NULL), (3, 1.5, x'00ff'), (4, -9223372036854775808, ''),
                        (5, 'text', CAST(x'41ff42' AS TEXT)), (6, 9223372036854775807, 'Café ☕️')
                    """)
        }
        try queue.read { db in
            let statement = try db.cachedStatement(sql: "SELECT a, b FROM t WHERE k >= ? ORDER BY k")
            try TransactionExecutor.checkBound(RawRows.bind(1, statement, 1), statement)
            var raw: [[String?]] = []
            try RawRows.forEach(statement) { handle in
                raw.append([RawRows.int64(handle, 0).map(String.init), RawRows.text(handle, 1)])
            }
            let expected = try GRDB.Row.fetchAll(db, sql: "SELECT a, b FROM t ORDER BY k").map { row -> [String?] in
                let a = row[0] as DatabaseValue
                let b = row[1] as DatabaseValue
                let integer: Int64? = if case .int64(let i) = a.storage { i } else { nil }
                let text: String? = if case .string(let s) = b.storage { s } else { nil }
                return [integer.map(String.init), text]
            }
            #expect(raw.count == 6)
            #expect(raw == expected)
            #expect(raw[4][1] == "A\u{FFFD}B")
            // Read again with another binding: the statement was reset at its end.
            try TransactionExecutor.checkBound(RawRows.bind(6, statement, 1), statement)
            var again: [String?] = []
            try RawRows.forEach(statement) { again.append(RawRows.text($0, 1)) }
            #expect(again == ["Café ☕️"])

            let first = try db.cachedStatement(sql: "SELECT b FROM t WHERE k = ?")
            for k in Int64(1)...7 {
                try TransactionExecutor.checkBound(RawRows.bind(k, first, 1), first)
                let grdb = try DatabaseValue.fetchOne(db, sql: "SELECT b FROM t WHERE k = ?", arguments: [k])
                let expectedText: String? = if case .string(let s)? = grdb?.storage { s } else { nil }
                #expect(try RawRows.first(first, RawRows.text) == expectedText, "k = \(k)")
            }
            let count = try db.cachedStatement(sql: "SELECT COUNT(*) FROM t WHERE a IS NOT NULL AND k <= ?")
            try TransactionExecutor.checkBound(RawRows.bind(3, count, 1), count)
            #expect(try RawRows.first(count, RawRows.int64) == 2)
        }
    }

    @Test("a step that fails throws SQLite's error and leaves the statement reset, ready to run again")
    func failure() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (k INTEGER PRIMARY KEY, a TEXT)")
            try db.execute(sql: "INSERT INTO t (k, a) VALUES (1, '1'), (2, 'x'), (3, '3')")
        }
        try queue.read { db in
            // abs() of a text that is no number is 0.0, but abs(-9223372036854775808) overflows: an error mid-way.
            let statement = try db.cachedStatement(
                sql: "SELECT CASE WHEN k = ? THEN abs(-9223372036854775807 - 1) ELSE k END FROM t ORDER BY k")
            try TransactionExecutor.checkBound(RawRows.bind(2, statement, 1), statement)
            var seen: [Int64] = []
            do {
                try RawRows.forEach(statement) { seen.append(RawRows.int64($0, 0) ?? -1) }
                Issue.record("no error")
            } catch let error as DatabaseError {
                #expect(error.resultCode == .SQLITE_ERROR)
                #expect(error.message?.contains("integer overflow") == true, "\(error)")
            }
            #expect(seen == [1])
            try TransactionExecutor.checkBound(RawRows.bind(0, statement, 1), statement)
            seen = []
            try RawRows.forEach(statement) { seen.append(RawRows.int64($0, 0) ?? -1) }
            #expect(seen == [1, 2, 3])
        }
    }
}
