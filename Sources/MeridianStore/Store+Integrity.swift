// MARK: - Integrity: SQLite's own checks of a store file

internal import Foundation
internal import GRDB

extension Store {
    /// How thoroughly ``checkIntegrity(path:_:)`` reads a file.
    public enum IntegrityCheck: String, Sendable, CaseIterable {
        /// `PRAGMA quick_check`: every page of every b-tree is read and its structure checked (linear in the file).
        case quick
        /// `PRAGMA integrity_check`: also that every index matches its table (slower: it looks every row up).
        case full
    }

    /// What SQLite finds wrong with a store file, read-only and before any store opens it (nothing is created or
    /// migrated): an empty list when it is sound, or when there is no file yet.
    ///
    /// - Throws: ``StoreError`` `io` when the file cannot be opened or read at all (not a database, unreadable).
    public static func checkIntegrity(path: String, _ check: IntegrityCheck) throws -> [String] {
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        let pragma = check == .quick ? "PRAGMA quick_check(100)" : "PRAGMA integrity_check(100)"
        do {
            let queue = try DatabaseQueue(path: path, configuration: Configuration().grdb(readonly: true))
            defer { try? queue.close() }
            let lines = try queue.read { db in try String.fetchAll(db, sql: pragma) }
            return lines == ["ok"] ? [] : lines
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB
        {
            return [error.message ?? "SQLite result code \(error.resultCode.rawValue)"]
        } catch {
            throw StoreError.wrap(error, "cannot check the store file \(path)")
        }
    }
}
