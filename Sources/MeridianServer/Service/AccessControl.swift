// MARK: - AccessControl: who is calling, and what the rules let them do

internal import Foundation
internal import GRPCCore
internal import Logging
public import MeridianAuth
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
            let identity = authenticator.identity(certificateSubject: subject)
            guard !self.revocations.contains(identity) else {
                throw Self.unauthenticated(
                    AuthenticationError(.invalid, "revoked (\(subject))"), method: method, logger: self.logger)
            }
            return Caller(
                identity: identity, access: self.schema.access.map { $0.bind(identity.principal, schema: self.schema) })
        }
        return try await self.caller(authorization: authorization, method: method)
    }

    /// The caller an `authorization` value proves (`Bearer …`), as for a call or a stream's token refresh.
    func caller(authorization: String?, method: String) async throws(RPCError) -> Caller {
        guard let authenticator else {
            throw Self.unauthenticated(
                AuthenticationError(.invalid, "the schema has rules, and the server was started without --auth"),
                method: method, logger: self.logger)
        }
        switch await authenticator.authenticate(authorization: authorization) {
        case .success(let identity) where self.revocations.contains(identity):
            throw Self.unauthenticated(
                AuthenticationError(.invalid, "revoked (\(identity.principal.subject))"), method: method,
                logger: self.logger)
        case .success(let identity):
            return Caller(
                identity: identity, access: self.schema.access.map { $0.bind(identity.principal, schema: self.schema) })
        case .failure(let error):
            throw Self.unauthenticated(error, method: method, logger: self.logger)
        }
    }

    /// The error a call without a valid identity ends with; the reason goes to the log only.
    static func unauthenticated(_ error: AuthenticationError, method: String, logger: Logger) -> RPCError {
        logger.info(
            "authentication refused",
            metadata: ["meridian.method": "\(method)", "meridian.auth.reason": "\(error.reason)"])
        return RPCError(Meridian_V1_ErrorDetail(.unauthenticated, error.publicMessage))
    }
}

// MARK: - Revocations

/// The revoked subjects and credential ids the server refuses, refreshed from the store about twice a second
/// (``MeridianServer``'s poll); open streams look at it as often.
final class Revocations: Sendable {
    private let state = Mutex<(subjects: Set<String>, credentials: Set<String>)>(([], []))

    /// Replaces what is known with the store's list.
    func update(_ revocations: [Revocation]) {
        let subjects = Set(revocations.compactMap(\.subject))
        let credentials = Set(revocations.compactMap(\.tokenID))
        self.state.withLock { $0 = (subjects, credentials) }
    }

    /// Whether the identity's subject or credential is revoked.
    func contains(_ identity: Identity) -> Bool {
        self.state.withLock { state in
            state.subjects.contains(identity.principal.subject)
                || identity.credentialID.map { state.credentials.contains($0) } == true
        }
    }
}
