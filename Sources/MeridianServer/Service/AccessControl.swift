// MARK: - AccessControl: who is calling, and what the rules let them do

internal import Foundation
internal import GRPCCore
internal import Logging
internal import MeridianAuth
internal import MeridianCore
internal import MeridianProto
internal import MeridianStore
internal import Synchronization

/// A verified caller and its bound rules.
struct Caller: Sendable {
    let identity: Identity
    /// The schema's rules bound for the caller; `nil` when the schema has no `auth:` section (an authenticated caller
    /// may then read and write everything).
    let access: BoundAccess?
}

/// Checks every call's `authorization` metadata and binds the schema's rules for the caller.
///
/// Without an authenticator every call is anonymous and unrestricted, unless the schema has rules: then no call can
/// be served (there is no identity to bind them to) and every one is refused `UNAUTHENTICATED` — the server fails
/// closed, never open.
struct AccessControl: Sendable {
    let authenticator: Authenticator?
    let schema: Schema
    let logger: Logger
    /// The revoked subjects and token ids, as last read from the store.
    let revocations = Revocations()
    /// The client-certificate subjects of mutual-TLS connections (HTTP/2 transport only).
    let peerCertificates: PeerCertificates?
    /// The audit log (`--audit-log`), if any.
    let audit: AuditLog?
    /// What each principal may hold and how fast it may write.
    let quotas: PrincipalQuotas

    /// Whether calls must carry credentials.
    var isEnabled: Bool { self.authenticator != nil || self.schema.access != nil }

    /// The caller of a call with this metadata: `nil` for an anonymous call on a server without authentication.
    ///
    /// - Throws: `RPCError` `UNAUTHENTICATED` with a message that does not say which check failed.
    func caller(_ metadata: Metadata, method: String, peer: String) async throws(RPCError) -> Caller? {
        guard self.isEnabled else { return nil }
        let authorization = metadata[stringValues: "authorization"].first(where: { _ in true })
        if authorization == nil, let authenticator, authenticator.acceptsCertificates,
            let subject = self.peerCertificates?.subject(ofPeer: peer)
        {
            return try self.admit(.success(authenticator.identity(certificateSubject: subject)), method, peer)
        }
        return try await self.caller(authorization: authorization, method: method, peer: peer)
    }

    /// The caller an `authorization` value proves (`Bearer …`), as for a call or a stream's token refresh.
    func caller(authorization: String?, method: String, peer: String) async throws(RPCError) -> Caller {
        guard let authenticator else {
            throw self.refuse(
                AuthenticationError(.invalid, "the schema has rules, and the server was started without --auth"),
                method, peer)
        }
        return try self.admit(await authenticator.authenticate(authorization: authorization), method, peer)
    }

    /// How the credential of a caller admitted earlier, on a stream still open, ended since.
    enum CredentialEnd {
        /// Its `expiresAt` (which includes the leeway) passed.
        case expired
        /// It was revoked.
        case revoked
    }

    /// Whether a caller admitted earlier — on a stream that is still open — may no longer act, and why; `nil` while
    /// it may. Every open stream asks: `Sync` when its token expires and when a revocation arrives
    /// (``CredentialWatch``), `ApplyStream` before each transaction.
    func end(ofOpen identity: Identity) -> CredentialEnd? {
        if let expiresAt = identity.expiresAt, expiresAt.timeIntervalSinceNow <= 0 { return .expired }
        if self.revocations.contains(identity) { return .revoked }
        return nil
    }

    /// The caller of a verified identity, unless it is revoked; recorded in the audit log either way.
    private func admit(
        _ result: Result<Identity, AuthenticationError>, _ method: String, _ peer: String
    ) throws(RPCError) -> Caller {
        switch result {
        case .success(let identity) where self.revocations.contains(identity):
            throw self.refuse(AuthenticationError(.invalid, "revoked (\(identity.principal.subject))"), method, peer)
        case .success(let identity):
            self.audit?.record(
                "authenticated",
                [
                    "sub": identity.principal.subject, "method": identity.method.rawValue, "rpc": method,
                    "peer": peer, "credential": identity.credentialID,
                ])
            return Caller(
                identity: identity, access: self.schema.access.map { $0.bind(identity.principal, schema: self.schema) })
        case .failure(let error):
            throw self.refuse(error, method, peer)
        }
    }

    /// The error a call without a valid identity ends with; the reason goes to the logs only.
    private func refuse(_ error: AuthenticationError, _ method: String, _ peer: String) -> RPCError {
        self.logger.info(
            "authentication refused",
            metadata: ["meridian.method": "\(method)", "meridian.auth.reason": "\(error.reason)"])
        self.audit?.record("authentication_refused", ["rpc": method, "peer": peer, "reason": error.reason])
        return RPCError(Meridian_V1_ErrorDetail(.unauthenticated, error.publicMessage))
    }
}

// MARK: - Revocations

/// The revoked subjects and credential ids the server refuses, refreshed from the store about twice a second
/// (``MeridianServer``'s poll). Open `Sync` streams register a look at their caller (``watch(_:)``), run whenever an
/// update brings a revocation not seen before — instead of each stream waking twice a second to look.
final class Revocations: Sendable {
    private let state = Mutex<(subjects: Set<String>, credentials: Set<String>)>(([], []))
    private let watchers = Mutex<(next: Int, checks: [Int: @Sendable () -> Void])>((0, [:]))

    /// Replaces what is known with the store's list; returns the revocations not seen before, after running every
    /// registered look when there are any.
    @discardableResult
    func update(_ revocations: [Revocation]) -> [Revocation] {
        let subjects = Set(revocations.compactMap(\.subject))
        let credentials = Set(revocations.compactMap(\.tokenID))
        let new = self.state.withLock { state in
            let new = revocations.filter { revocation in
                revocation.subject.map { !state.subjects.contains($0) } ?? false
                    || revocation.tokenID.map { !state.credentials.contains($0) } ?? false
            }
            state = (subjects, credentials)
            return new
        }
        if !new.isEmpty {
            for check in self.watchers.withLock({ Array($0.checks.values) }) { check() }
        }
        return new
    }

    /// Registers `check`, run after each update that brings a new revocation; returns its key for ``unwatch(_:)``.
    func watch(_ check: @escaping @Sendable () -> Void) -> Int {
        self.watchers.withLock { watchers in
            watchers.next += 1
            watchers.checks[watchers.next] = check
            return watchers.next
        }
    }

    /// Forgets a registered check.
    func unwatch(_ key: Int) {
        _ = self.watchers.withLock { $0.checks.removeValue(forKey: key) }
    }

    /// Whether the identity's subject or credential is revoked.
    func contains(_ identity: Identity) -> Bool {
        self.state.withLock { state in
            state.subjects.contains(identity.principal.subject)
                || identity.credentialID.map { state.credentials.contains($0) } == true
        }
    }
}
