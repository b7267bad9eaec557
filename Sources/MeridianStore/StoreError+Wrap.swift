// MARK: - Wrapping other errors

internal import GRDB

extension StoreError {
    /// `error` itself when it is a `StoreError`, else an `io` error (or `internalError` for a misuse) with it as cause.
    static func wrap(_ error: any Error, _ message: String) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? DatabaseError, error.resultCode == .SQLITE_MISUSE || error.resultCode == .SQLITE_ERROR
        {
            return StoreError(.internalError, "\(message): \(error.message ?? "SQL error")", cause: error)
        }
        if let error = error as? DatabaseError {
            // SQLite's reason (a full disk, an I/O error) travels in the message: it is all a remote client sees.
            let reason = error.message ?? "SQLite result code \(error.resultCode.rawValue)"
            return StoreError(.io, "\(message): \(reason)", cause: error)
        }
        return StoreError(.io, message, cause: error)
    }
}
