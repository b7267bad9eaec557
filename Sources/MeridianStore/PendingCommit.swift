// MARK: - PendingCommit

public import MeridianCore

/// A transaction queued by ``Store/submit(_:policy:idempotencyKey:authorizer:author:)``: committed, or not, by the
/// store's group commit in the order it was submitted.
public struct PendingCommit: Sendable {
    let answer: CommitAnswer

    /// Waits for the transaction's outcome (any number of times, from any number of tasks).
    ///
    /// - Returns: The commit's `seq` and the written rows' ids and versions.
    /// - Throws: What ``Store/apply(_:policy:idempotencyKey:authorizer:author:)`` throws for a transaction it queued.
    public func committed() async throws -> CommitResult {
        try await self.answer.value
    }
}
