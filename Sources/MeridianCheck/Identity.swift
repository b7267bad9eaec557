// MARK: - Identity: the tokens of `meridian-check --auth`

internal import MeridianAuth
internal import MeridianClient
public import MeridianCore

/// Who a role connects as under `--auth`: a principal, the HS256 secret the soak shares with its server, and the
/// lifetime of the tokens it signs — short, so that every stream is refreshed in place several times a minute (and
/// one that is not, a stopped client's, is ended by the server at the expiry and reconnects with a new token).
public struct Identity: Sendable {
    public var keyPath: String
    public var principal: Principal
    public var tokenLifetime: Duration

    public init(keyPath: String, principal: Principal, tokenLifetime: Duration) {
        self.keyPath = keyPath
        self.principal = principal
        self.tokenLifetime = tokenLifetime
    }

    /// A provider signing a new token each time the client asks (before the last one expires).
    func credentials() async throws -> Credentials {
        let signer = try await SigningKey.load(contentsOf: self.keyPath)
        let (subject, claims, lifetime) = (self.principal.subject, self.principal.claims, self.tokenLifetime)
        return .provider {
            try await signer.sign(subject: subject, claims: claims, lifetime: lifetime)
        }
    }
}
