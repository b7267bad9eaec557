// MARK: - AccessControl: who is calling, and what the rules let them do

internal import Foundation
internal import GRPCCore
internal import Logging
public import MeridianAuth
internal import MeridianCore
internal import MeridianProto

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

    /// Whether calls must carry credentials.
    var isEnabled: Bool { self.authenticator != nil || self.schema.access != nil }

    /// The caller of a call with this metadata: `nil` for an anonymous call on a server without authentication.
    ///
    /// - Throws: `RPCError` `UNAUTHENTICATED` with a message that does not say which check failed.
    func caller(_ metadata: Metadata, method: String) async throws(RPCError) -> Caller? {
        guard self.isEnabled else { return nil }
        let authorization = metadata[stringValues: "authorization"].first(where: { _ in true })
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
