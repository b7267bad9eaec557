// MARK: - Transactions begun and ended with cached statements

internal import GRDB

extension Database {
    /// `inTransaction(kind)`, with its `BEGIN` and `COMMIT` statements taken from GRDB's statement cache: GRDB
    /// prepares them anew for every transaction (parsed by SQLite each time), which cost ~15 µs of CPU per single-row
    /// commit (8 writers each committing alone: 0.52 → 0.46 s of CPU for 4,000 commits), and a sixth of the fan-out's
    /// CPU for a 1-row commit in its read transaction (perf of `meridian-bench server`, 1,000 1-row commits a second).
    ///
    /// A body that throws, or a `COMMIT` that fails, rolls the transaction back (unless SQLite already did: a full
    /// disk, an I/O error) and rethrows.
    func inCachedTransaction(_ kind: TransactionKind, _ body: () throws -> TransactionCompletion) throws {
        try self.cachedStatement(sql: Self.begin(kind)).execute()
        do {
            switch try body() {
            case .commit: try self.cachedStatement(sql: "COMMIT TRANSACTION").execute()
            case .rollback: try self.rollback()
            }
        } catch {
            if self.isInsideTransaction { try? self.rollback() }
            throw error
        }
    }

    private static func begin(_ kind: TransactionKind) -> String {
        switch kind {
        case .deferred: "BEGIN DEFERRED TRANSACTION"
        case .immediate: "BEGIN IMMEDIATE TRANSACTION"
        case .exclusive: "BEGIN EXCLUSIVE TRANSACTION"
        }
    }
}
