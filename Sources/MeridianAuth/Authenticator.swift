// MARK: - Authenticator

internal import Crypto
public import Foundation
internal import JWTKit
public import MeridianCore

/// A verified identity: who, until when, and how it was proven.
public struct Identity: Sendable, Hashable {
    /// How the caller proved who it is.
    public enum Method: String, Sendable, Hashable {
        case jwt, apikey
        /// A client certificate of a mutual-TLS connection (`--auth mtls`).
        case certificate
    }

    /// The principal the rules are bound for.
    public var principal: Principal
    /// When the credential stops being valid (a JWT's `exp`); `nil` for an API key.
    public var expiresAt: Date?
    /// The token's `jti`, or the API key's id.
    public var credentialID: String?
    /// How it was proven.
    public var method: Method
}

/// Why a call carries no valid identity. ``publicMessage`` is what the caller is told: it says whether credentials
/// were missing, invalid or expired, never which check failed (a forger learns nothing); ``reason`` is for the log.
public struct AuthenticationError: Error, Sendable, CustomStringConvertible {
    /// What the caller is told.
    public enum Kind: Sendable, Hashable {
        case missing, invalid, expired
    }

    public let kind: Kind
    /// The check that failed, for the server's log and audit log (never sent).
    public let reason: String

    public init(_ kind: Kind, _ reason: String) {
        self.kind = kind
        self.reason = reason
    }

    /// The message sent with `UNAUTHENTICATED`.
    public var publicMessage: String {
        switch self.kind {
        case .missing: "the call carries no credentials: send 'authorization: Bearer <token>' metadata"
        case .invalid: "the credentials are not valid"
        case .expired: "the credentials have expired; get a new token"
        }
    }

    public var description: String { "\(self.publicMessage) (\(self.reason))" }
}

/// Checks the `authorization` metadata of a call: a JWT (``TokenVerifier``), an API key (``APIKeys``), or either.
public struct Authenticator: Sendable {
    /// The token verifier, when JWTs are accepted.
    public let tokens: TokenVerifier?
    /// The API keys, when they are accepted.
    public let apiKeys: APIKeys?
    /// Whether a call without credentials may be authenticated by its connection's client certificate (mutual TLS):
    /// the certificate's subject alternative name is the subject.
    public let acceptsCertificates: Bool
    /// The longest credential accepted, in bytes: a larger `authorization` value is refused unread.
    public static let maximumCredentialBytes = 8 * 1024

    public init(tokens: TokenVerifier?, apiKeys: APIKeys?, acceptsCertificates: Bool = false) {
        self.tokens = tokens
        self.apiKeys = apiKeys
        self.acceptsCertificates = acceptsCertificates
    }

    /// The identity a verified client certificate's subject proves.
    public func identity(certificateSubject subject: String) -> Identity {
        Identity(principal: Principal(subject: subject), expiresAt: nil, credentialID: nil, method: .certificate)
    }

    /// The identity an `authorization` value proves.
    ///
    /// - Parameters:
    ///   - authorization: The metadata value (`Bearer …`), or `nil` when the call has none.
    ///   - now: The time to check expiry against.
    public func authenticate(
        authorization: String?, now: Date = Date()
    ) async -> Result<Identity, AuthenticationError> {
        guard let authorization, !authorization.isEmpty else {
            return .failure(AuthenticationError(.missing, "no authorization metadata"))
        }
        guard authorization.utf8.count <= Self.maximumCredentialBytes else {
            return .failure(
                AuthenticationError(.invalid, "a credential of \(authorization.utf8.count) bytes (over 8 KiB)"))
        }
        let prefix = "bearer "
        guard authorization.count > prefix.count, authorization.lowercased().hasPrefix(prefix) else {
            return .failure(AuthenticationError(.invalid, "the authorization metadata is not 'Bearer <credential>'"))
        }
        let credential = String(authorization.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces)
        return await self.authenticate(credential: credential, now: now)
    }

    /// The identity a bare credential (a token or an API key) proves: a text with two dots is a JWT, anything else an
    /// API key.
    public func authenticate(credential: String, now: Date = Date()) async -> Result<Identity, AuthenticationError> {
        guard credential.utf8.count <= Self.maximumCredentialBytes else {
            return .failure(AuthenticationError(.invalid, "a credential of \(credential.utf8.count) bytes"))
        }
        let isToken = credential.utf8.count { $0 == UInt8(ascii: ".") } == 2
        if isToken, let tokens = self.tokens {
            return await tokens.verify(credential, now: now)
        }
        if !isToken, let apiKeys = self.apiKeys {
            return apiKeys.authenticate(credential)
        }
        return .failure(
            AuthenticationError(
                .invalid, isToken ? "a JWT, and JWTs are not accepted" : "an API key, and keys are not accepted"))
    }
}

// MARK: - TokenVerifier

/// Verifies JWTs: the signature with ``VerificationKeys`` (one algorithm per key), then `exp` (required), `nbf`,
/// `iss`, `aud` and the lifetime, each with the leeway; `sub` is required.
public struct TokenVerifier: Sendable {
    public let keys: VerificationKeys
    /// The `iss` a token must carry, if set.
    public var issuer: String?
    /// An `aud` a token must include, if set.
    public var audience: String?
    /// Clock skew allowed on `exp` and `nbf`.
    public var leeway: Duration
    /// The longest a token may be valid (`exp` − `iat`, or `exp` − now without `iat`).
    public var maximumLifetime: Duration

    public init(
        keys: VerificationKeys, issuer: String? = nil, audience: String? = nil, leeway: Duration = .seconds(30),
        maximumLifetime: Duration = .seconds(24 * 3600)
    ) {
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.leeway = leeway
        self.maximumLifetime = maximumLifetime
    }

    /// Verifies a compact JWT.
    public func verify(_ token: String, now: Date = Date()) async -> Result<Identity, AuthenticationError> {
        func invalid(_ reason: String) -> Result<Identity, AuthenticationError> {
            .failure(AuthenticationError(.invalid, reason))
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Self.base64URLDecode(parts[0]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any]
        else { return invalid("not a JWT (three base64url parts, a JSON header)") }
        guard let alg = header["alg"] as? String else { return invalid("the header names no alg") }
        let kid = header["kid"] as? String
        guard let expected = self.keys.algorithms[kid ?? ""] else {
            return invalid(kid.map { "unknown kid \"\($0)\"" } ?? "no kid, and the keys are a JWKS")
        }
        guard alg == expected else { return invalid("alg \(alg), but the key verifies \(expected) only") }
        let claims: TokenClaims
        do {
            claims = try await self.keys.collection.verify(token, as: TokenClaims.self)
        } catch {
            return invalid("signature or payload: \(error)")
        }
        let leeway = Double(self.leeway.components.seconds)
        let nowSeconds = now.timeIntervalSince1970
        guard let exp = claims.seconds("exp") else { return invalid("no exp") }
        if let nbf = claims.seconds("nbf"), nbf > nowSeconds + leeway { return invalid("nbf is in the future") }
        if let issuer = self.issuer, claims.extra["iss"]?.stringValue != issuer {
            return invalid("iss is not \(issuer)")
        }
        if let audience = self.audience, !claims.audiences.contains(audience) {
            return invalid("aud does not include \(audience)")
        }
        let start = claims.seconds("iat") ?? nowSeconds
        if exp - start > Double(self.maximumLifetime.components.seconds) + leeway {
            return invalid("valid for \(Int(exp - start)) s, longer than the maximum lifetime")
        }
        guard case .string(let subject)? = claims.extra["sub"], !subject.isEmpty else { return invalid("no sub") }
        // Expiry last: "expired" is said only of a token that is otherwise valid.
        guard exp + leeway > nowSeconds else {
            return .failure(AuthenticationError(.expired, "exp \(Int(exp)) passed"))
        }
        var principalClaims = claims.extra
        for registered in ["exp", "nbf", "iat", "iss", "aud", "jti"] { principalClaims.removeValue(forKey: registered) }
        return .success(
            Identity(
                principal: Principal(subject: subject, claims: principalClaims),
                expiresAt: Date(timeIntervalSince1970: exp + leeway),
                credentialID: claims.extra["jti"]?.stringValue,
                method: .jwt))
    }

    static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

// MARK: - APIKeys

/// API keys for services, from a JSON file that holds each key's id, the SHA-256 of the key (hex) and its claims —
/// never the key itself:
///
/// ```json
/// [{"id": "importer", "sha256": "9f86d08…", "claims": {"sub": "importer", "role": "admin"}}]
/// ```
public struct APIKeys: Sendable {
    struct Entry: Sendable, Decodable {
        var id: String
        var sha256: String
        var claims: [String: ClaimValue]?
    }

    let byDigest: [String: Entry]

    /// The number of keys.
    public var count: Int { self.byDigest.count }

    /// Reads the file.
    public static func load(contentsOf path: String) throws(AuthConfigurationError) -> APIKeys {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw AuthConfigurationError("cannot read the API key file \(path): \(error.localizedDescription)")
        }
        let entries: [Entry]
        do {
            entries = try JSONDecoder().decode([Entry].self, from: data)
        } catch {
            throw AuthConfigurationError(
                "\(path): expected a JSON array of {\"id\", \"sha256\", \"claims\"} objects (\(error))")
        }
        var byDigest: [String: Entry] = [:]
        for entry in entries {
            let digest = entry.sha256.lowercased()
            guard digest.count == 64, digest.allSatisfy(\.isHexDigit) else {
                throw AuthConfigurationError("\(path): key \"\(entry.id)\": sha256 must be 64 hex digits")
            }
            guard byDigest[digest] == nil else {
                throw AuthConfigurationError("\(path): key \"\(entry.id)\" has the digest of another key")
            }
            byDigest[digest] = entry
        }
        return APIKeys(byDigest: byDigest)
    }

    /// The SHA-256 of a key, as the file holds it.
    public static func digest(of key: String) -> String {
        SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    func authenticate(_ key: String) -> Result<Identity, AuthenticationError> {
        guard let entry = self.byDigest[Self.digest(of: key)] else {
            return .failure(AuthenticationError(.invalid, "no API key has this digest"))
        }
        let claims = entry.claims ?? [:]
        let subject = claims["sub"]?.stringValue ?? entry.id
        return .success(
            Identity(
                principal: Principal(subject: subject, claims: claims), expiresAt: nil, credentialID: entry.id,
                method: .apikey))
    }
}
