// MARK: - Key files

public import Foundation
internal import JWTKit
public import MeridianCore

/// The keys that verify tokens, read from one file whose format is detected: a JWKS (`{"keys": […]}`), one JWK, a
/// PEM public key (RSA → RS256, P-256 → ES256, Ed25519 → EdDSA) or a PEM private key (its public half), or else the
/// shared secret of HS256 (the file's bytes, without a final newline; at least 32 bytes).
///
/// Each key accepts exactly one algorithm: a token whose header names another (`alg: none`, HS256 against an RSA key)
/// is refused before any signature is checked, and a `kid` the file does not hold is refused rather than tried
/// against a default key.
public struct VerificationKeys: Sendable {
    /// How the file was read, for the startup log: "a JWKS of 2 keys (RS256, ES256)".
    public let format: String
    let collection: JWTKeyCollection
    /// The algorithm of each key, by `kid`; the key without a `kid` (PEM, secret) is under "".
    let algorithms: [String: String]

    /// Reads `path`.
    ///
    /// - Throws: ``AuthConfigurationError`` naming the file and what is wrong with it.
    public static func load(contentsOf path: String) async throws(AuthConfigurationError) -> VerificationKeys {
        let data = try KeyFile.read(path)
        do {
            return try await Self.parse(data, path: path)
        } catch let error as AuthConfigurationError {
            throw error
        } catch {
            throw AuthConfigurationError("\(path): not a usable key (\(error))")
        }
    }

    static func parse(_ data: Data, path: String) async throws -> VerificationKeys {
        let text = String(decoding: data, as: UTF8.self)
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let collection = JWTKeyCollection()
        if trimmed.hasPrefix("{") {
            let object = try JSONSerialization.jsonObject(with: Data(trimmed.utf8)) as? [String: Any] ?? [:]
            let jwks = (object["keys"] as? [[String: Any]]) ?? [object]
            var algorithms: [String: String] = [:]
            for jwk in jwks {
                guard let kid = jwk["kid"] as? String, !kid.isEmpty else {
                    throw AuthConfigurationError("\(path): every key of a JWKS needs a \"kid\"")
                }
                guard let algorithm = Self.algorithm(ofJWK: jwk) else {
                    throw AuthConfigurationError(
                        "\(path): key \"\(kid)\" is not an RSA, P-256 or Ed25519 public key (kty \(jwk["kty"] ?? "none"))"
                    )
                }
                if jwk["d"] != nil || jwk["k"] != nil {
                    throw AuthConfigurationError(
                        "\(path): key \"\(kid)\" holds private or secret material; give the server public keys only")
                }
                algorithms[kid] = algorithm
            }
            if object["keys"] != nil {
                try await collection.add(jwksJSON: trimmed)
            } else {
                try await collection.add(jwk: JSONDecoder().decode(JWK.self, from: Data(trimmed.utf8)))
            }
            let names = Set(algorithms.values).sorted().joined(separator: ", ")
            let what = object["keys"] != nil ? "a JWKS of \(jwks.count) key\(jwks.count == 1 ? "" : "s")" : "a JWK"
            return VerificationKeys(format: "\(what) (\(names))", collection: collection, algorithms: algorithms)
        }
        if trimmed.hasPrefix("-----BEGIN") {
            let (format, algorithm) = try await Self.addPEM(trimmed, to: collection, path: path)
            return VerificationKeys(format: format, collection: collection, algorithms: ["": algorithm])
        }
        let secret = try KeyFile.sharedSecret(data, path: path)
        await collection.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return VerificationKeys(
            format: "an HS256 shared secret of \(secret.count) bytes", collection: collection, algorithms: ["": "HS256"]
        )
    }

    /// The one algorithm a JWK verifies: its `alg` when it has one, else the one its key type implies.
    static func algorithm(ofJWK jwk: [String: Any]) -> String? {
        let kty = jwk["kty"] as? String
        let implied: String? =
            switch (kty, jwk["crv"] as? String) {
            case ("RSA", _): "RS256"
            case ("EC", "P-256"): "ES256"
            case ("OKP", "Ed25519"): "EdDSA"
            default: nil
            }
        guard let implied else { return nil }
        if let alg = jwk["alg"] as? String {
            let fits = ["RS256": "RS256", "ES256": "ES256", "EdDSA": "EdDSA"][alg] == implied
            return fits ? alg : nil
        }
        return implied
    }

    private static func addPEM(
        _ pem: String, to collection: JWTKeyCollection, path: String
    ) async throws -> (String, String) {
        if pem.contains("PRIVATE KEY") {
            let key = try KeyFile.privateKey(pem, path: path)
            try await key.addPublicHalf(to: collection)
            return ("the public half of \(key.kind) private key (\(key.algorithm))", key.algorithm)
        }
        if let key = try? Insecure.RSA.PublicKey(pem: pem) {
            await collection.add(rsa: key, digestAlgorithm: .sha256)
            return ("a PEM RSA public key (RS256)", "RS256")
        }
        if let key = try? ES256PublicKey(pem: pem) {
            await collection.add(ecdsa: key)
            return ("a PEM P-256 public key (ES256)", "ES256")
        }
        if let key = try? EdDSA.PublicKey(pem: pem) {
            await collection.add(eddsa: key)
            return ("a PEM Ed25519 public key (EdDSA)", "EdDSA")
        }
        throw AuthConfigurationError("\(path): a PEM key that is not RSA (2048 bits or more), P-256 or Ed25519")
    }
}

/// The key that signs development tokens (`meridian token issue --key FILE`): a PEM private key (RSA → RS256, P-256 →
/// ES256, Ed25519 → EdDSA) or an HS256 shared secret.
public struct SigningKey: Sendable {
    let collection: JWTKeyCollection
    /// The algorithm it signs with.
    public let algorithm: String

    /// Reads `path`.
    public static func load(contentsOf path: String) async throws(AuthConfigurationError) -> SigningKey {
        let data = try KeyFile.read(path)
        let text = String(decoding: data, as: UTF8.self)
        let collection = JWTKeyCollection()
        if text.contains("-----BEGIN") {
            guard text.contains("PRIVATE KEY") else {
                throw AuthConfigurationError("\(path): signing needs a private key, and this is a public key")
            }
            let key = try KeyFile.privateKey(text, path: path)
            await key.add(to: collection)
            return SigningKey(collection: collection, algorithm: key.algorithm)
        }
        let secret = try KeyFile.sharedSecret(data, path: path)
        await collection.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return SigningKey(collection: collection, algorithm: "HS256")
    }

    /// Signs a token for `subject` with `claims`, valid from now for `lifetime`.
    ///
    /// - Parameters:
    ///   - subject: The `sub` claim.
    ///   - claims: Further claims (`team`, `role`, …).
    ///   - lifetime: How long the token is valid.
    ///   - issuer: The `iss` claim, if any.
    ///   - audience: The `aud` claim, if any.
    ///   - now: The issue time.
    /// - Returns: The compact JWT.
    public func sign(
        subject: String, claims: [String: ClaimValue], lifetime: Duration, issuer: String? = nil,
        audience: String? = nil, now: Date = Date()
    ) async throws -> String {
        var payload = TokenClaims()
        payload.extra = claims
        payload.extra["sub"] = .string(subject)
        let issued = Int64(now.timeIntervalSince1970)
        payload.extra["iat"] = .int(issued)
        payload.extra["exp"] = .int(issued + lifetime.components.seconds)
        payload.extra["jti"] = .string(UUID().uuidString.lowercased())
        if let issuer { payload.extra["iss"] = .string(issuer) }
        if let audience { payload.extra["aud"] = .string(audience) }
        return try await self.collection.sign(payload)
    }
}

extension SigningKey {
    /// Signs exactly these claims — nothing is added — with `kid` in the header when given: for tools and tests that
    /// need a token of a precise shape (an expired one, one without `exp`).
    public func sign(claims: [String: ClaimValue], kid: String? = nil) async throws -> String {
        var payload = TokenClaims()
        payload.extra = claims
        return try await self.collection.sign(payload, kid: kid.map { JWKIdentifier(string: $0) })
    }
}

// MARK: - Reading key files

/// What verifying and signing read the same way: the file, an HS256 secret, a PEM private key.
enum KeyFile {
    /// A PEM private key of a kind JWTs are signed with.
    enum PrivateKey {
        case rsa(Insecure.RSA.PrivateKey)
        case p256(ES256PrivateKey)
        case ed25519(EdDSA.PrivateKey)

        /// The algorithm it signs with.
        var algorithm: String {
            switch self {
            case .rsa: "RS256"
            case .p256: "ES256"
            case .ed25519: "EdDSA"
            }
        }

        /// The kind of key, for the startup log: "an RSA".
        var kind: String {
            switch self {
            case .rsa: "an RSA"
            case .p256: "a P-256"
            case .ed25519: "an Ed25519"
            }
        }

        /// Adds the key, to sign with.
        func add(to collection: JWTKeyCollection) async {
            switch self {
            case .rsa(let key): await collection.add(rsa: key, digestAlgorithm: .sha256)
            case .p256(let key): await collection.add(ecdsa: key)
            case .ed25519(let key): await collection.add(eddsa: key)
            }
        }

        /// Adds the key's public half, to verify with.
        func addPublicHalf(to collection: JWTKeyCollection) async throws {
            switch self {
            case .rsa(let key): await collection.add(rsa: key.publicKey, digestAlgorithm: .sha256)
            case .p256(let key): await collection.add(ecdsa: key.publicKey)
            case .ed25519(let key): await collection.add(eddsa: key.publicKey)
            }
        }
    }

    /// The file's bytes.
    static func read(_ path: String) throws(AuthConfigurationError) -> Data {
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw AuthConfigurationError("cannot read the key file \(path): \(error.localizedDescription)")
        }
    }

    /// The file's bytes as an HS256 shared secret: without a final newline, 32 bytes or more.
    static func sharedSecret(_ data: Data, path: String) throws(AuthConfigurationError) -> Data {
        let secret = data.last == UInt8(ascii: "\n") ? data.dropLast() : data
        guard secret.count >= 32 else {
            throw AuthConfigurationError(
                "\(path): an HS256 shared secret must be at least 32 bytes (this one is \(secret.count)); "
                    + "make one with: head -c 48 /dev/urandom | base64 > \(path)")
        }
        return Data(secret)
    }

    /// A PEM private key: RSA (2048 bits or more), P-256 or Ed25519.
    static func privateKey(_ pem: String, path: String) throws(AuthConfigurationError) -> PrivateKey {
        if let key = try? Insecure.RSA.PrivateKey(pem: pem) { return .rsa(key) }
        if let key = try? ES256PrivateKey(pem: pem) { return .p256(key) }
        if let key = try? EdDSA.PrivateKey(pem: pem) { return .ed25519(key) }
        throw AuthConfigurationError("\(path): a PEM private key that is not RSA (2048 bits or more), P-256 or Ed25519")
    }
}

/// A problem with the server's or the CLI's authentication setup (a key file, an API key file), found at startup.
public struct AuthConfigurationError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, naming the file.
    public let description: String

    public init(_ description: String) { self.description = description }
}
