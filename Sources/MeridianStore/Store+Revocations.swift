// MARK: - Revocations

internal import Foundation
internal import GRDB
public import MeridianCore

/// A revoked identity: every token of a subject, or one token by its id (`jti`), or an API key by its id.
public struct Revocation: Sendable, Hashable {
    /// The subject whose every credential is refused, if given.
    public var subject: String?
    /// The token (or API key) id refused, if given.
    public var tokenID: String?
    /// When it was recorded.
    public var revokedAt: Timestamp

    public init(subject: String?, tokenID: String?, revokedAt: Timestamp) {
        self.subject = subject
        self.tokenID = tokenID
        self.revokedAt = revokedAt
    }
}

extension Store {
    /// Records a revocation in the store file at `path`, from another process than the server that serves it (which
    /// reads the revocations about twice a second, refuses the identity's calls and ends its open streams).
    ///
    /// - Throws: ``StoreError``: `validation` when neither is given or there is no store at `path`, `io` when the file
    ///   cannot be written.
    public static func revoke(path: String, subject: String?, tokenID: String?) throws {
        guard subject?.isEmpty == false || tokenID?.isEmpty == false else {
            throw StoreError(.validation, "a revocation needs a subject or a token id")
        }
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.validation, "there is no store file at \(path)")
        }
        do {
            let queue = try DatabaseQueue(path: path)
            defer { try? queue.close() }
            try queue.write { db in try Self.recordRevocation(db, subject: subject, tokenID: tokenID) }
        } catch {
            throw StoreError.wrap(error, "cannot record the revocation in \(path)")
        }
    }

    /// Records a revocation in this store.
    public func revoke(subject: String?, tokenID: String?) async throws {
        guard subject?.isEmpty == false || tokenID?.isEmpty == false else {
            throw StoreError(.validation, "a revocation needs a subject or a token id")
        }
        do {
            try await self.writer.write { db in try Self.recordRevocation(db, subject: subject, tokenID: tokenID) }
        } catch {
            throw StoreError.wrap(error, "cannot record the revocation")
        }
    }

    /// Every revocation recorded, oldest first.
    public func revocations() async throws -> [Revocation] {
        try await self.read("the revocations") { db in
            try GRDB.Row.fetchAll(
                db, sql: "SELECT subject, token_id, revoked_at FROM meridian_revocations ORDER BY id"
            ).map {
                Revocation(subject: $0[0], tokenID: $0[1], revokedAt: Timestamp(microseconds: $0[2]))
            }
        }
    }

    private static func recordRevocation(_ db: Database, subject: String?, tokenID: String?) throws {
        try db.execute(sql: StoreDDL.revocationsTable)
        try db.execute(
            sql: "INSERT INTO meridian_revocations (subject, token_id, revoked_at) VALUES (?, ?, ?)",
            arguments: [
                subject.flatMap { $0.isEmpty ? nil : $0 }, tokenID.flatMap { $0.isEmpty ? nil : $0 },
                Store.nowMicroseconds(),
            ])
    }
}
