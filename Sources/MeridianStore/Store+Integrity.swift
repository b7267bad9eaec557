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
        } catch let error as DatabaseError
            where error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB
        {
            return [error.message ?? "SQLite result code \(error.resultCode.rawValue)"]
        } catch {
            if Store.isOnReadOnlyFileSystem(path) {
                throw StoreError(
                    .io,
                    "cannot check the store file \(path): its file system is read-only (SQLite needs to write the "
                        + "shared-memory index beside a WAL store, even to read it); mount it read-write",
                    cause: error)
            }
            throw StoreError.wrap(error, "cannot check the store file \(path)")
        }
    }
}

// MARK: - Writability

extension Store {
    /// Writes one small record (to the store's own metadata, not to any entity or the log) and commits it, to learn
    /// whether the store takes writes now — for a health check, which must turn when the disk fills, the file system
    /// turns read-only or the disk fails, whether or not clients are writing.
    ///
    /// - Throws: ``StoreError`` `io` with SQLite's reason when the commit fails.
    public func probeWrite() async throws {
        do {
            try await self.writer.write { db in
                try SchemaRecord.setMeta(db, "write_probe", String(Store.nowMicroseconds()))
            }
        } catch {
            throw StoreError.wrap(error, "the store cannot be written")
        }
    }
}

// MARK: - Backup

extension Store {
    /// Copies a store file, consistent at one commit, while other processes keep writing it: SQLite's online backup
    /// from a read-only connection, in one step, inside one read transaction (a writer meanwhile neither waits nor
    /// restarts the copy). The copy is checked (`quick_check`) before this returns.
    ///
    /// - Parameters:
    ///   - path: The store file.
    ///   - destination: Where the copy goes; it must not exist.
    /// - Returns: The seq of the last commit the copy holds.
    /// - Throws: ``StoreError`` `io` when the file cannot be read, the destination exists or cannot be written, or
    ///   the copy does not check out.
    public static func backup(path: String, to destination: String) throws -> Int64 {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.io, "there is no store file at \(path)")
        }
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw StoreError(.io, "\(destination) exists already; a backup never overwrites a file")
        }
        do {
            let source = try DatabaseQueue(path: path, configuration: Configuration().grdb(readonly: true))
            defer { try? source.close() }
            let copy = try DatabaseQueue(path: destination)
            defer { try? copy.close() }
            try source.backup(to: copy)
            return try copy.read { db in
                let check = try String.fetchAll(db, sql: "PRAGMA quick_check(10)")
                guard check == ["ok"] else {
                    throw StoreError(.io, "the copy does not check out: \(check.joined(separator: "; "))")
                }
                return try Store.latestSeq(db)
            }
        } catch {
            // The destination did not exist: what is there is this copy's, unfinished or unsound.
            try? FileManager.default.removeItem(atPath: destination)
            throw StoreError.wrap(error, "cannot back up \(path) to \(destination)")
        }
    }
}
