// The server's identity options: --auth and what each kind of credential needs.

import ArgumentParser
import Foundation
import Logging
import MeridianAuth
import MeridianCore
import MeridianServer

/// `--auth jwt|apikey|jwt,apikey|none` and the files and checks each needs.
struct AuthOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Which credentials calls must carry as 'authorization: Bearer …' metadata: jwt, apikey, both (jwt,apikey), or none; add mtls (jwt,mtls, or mtls alone) to authenticate a call without a token by its mutual-TLS client certificate. none is refused on a non-loopback --listen unless --allow-unauthenticated is given, and when the schema has rules.",
            valueName: "jwt|apikey|jwt,apikey|mtls|none"))
    var auth = "none"

    @Option(
        help: ArgumentHelp(
            "The key that verifies JWTs: a PEM public key (RSA: RS256, P-256: ES256, Ed25519: EdDSA), a JWKS file, or for HS256 a file holding the shared secret (32 bytes or more). The format is detected and named in the startup log.",
            valueName: "path"))
    var jwtKey: String?

    @Option(help: ArgumentHelp("The iss every JWT must carry.", valueName: "issuer"))
    var jwtIssuer: String?

    @Option(help: ArgumentHelp("An aud every JWT must include.", valueName: "audience"))
    var jwtAudience: String?

    @Option(
        help: ArgumentHelp(
            "Clock skew allowed on exp and nbf: seconds, or a number with ms, s, m, h or d.", valueName: "duration"))
    var jwtLeeway = "30s"

    @Option(
        help: ArgumentHelp(
            "The longest a JWT may be valid (exp - iat): seconds, or a number with ms, s, m, h or d.",
            valueName: "duration"))
    var jwtMaxLifetime = "24h"

    @Option(
        help: ArgumentHelp(
            "API keys for services: a JSON array of {\"id\", \"sha256\" (hex of the key), \"claims\"} objects; never the keys themselves.",
            valueName: "path"))
    var apiKeys: String?

    @Flag(
        help:
            "Serve without authentication on a non-loopback --listen (anyone who reaches the port may read and write everything)."
    )
    var allowUnauthenticated = false

    @Option(
        help: ArgumentHelp(
            "Append an audit log here: JSON lines of authentications (never a credential), refusals, streams, transactions, denials, refreshes and revocations (created with mode 0600).",
            valueName: "path"))
    var auditLog: String?

    /// The kinds of credentials named by `--auth`.
    var kinds: Set<String> {
        Set(self.auth.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
    }

    func validate(listenHost: String, clientCertificatesRequired: Bool) throws {
        let kinds = self.kinds
        guard !kinds.isEmpty, kinds.isSubset(of: ["jwt", "apikey", "mtls", "none"]),
            !(kinds.contains("none") && kinds.count > 1)
        else {
            throw ValidationError(
                "--auth must be jwt, apikey, mtls, a comma-separated mix of them, or none; not '\(self.auth)'")
        }
        if kinds.contains("mtls"), !clientCertificatesRequired {
            throw ValidationError(
                "--auth mtls needs --tls-client-auth require (with --tls-cert, --tls-key and --tls-client-ca)")
        }
        if kinds.contains("jwt"), self.jwtKey == nil {
            throw ValidationError("--auth jwt needs --jwt-key FILE (a PEM public key, a JWKS file or an HS256 secret)")
        }
        if kinds.contains("apikey"), self.apiKeys == nil {
            throw ValidationError("--auth apikey needs --api-keys FILE")
        }
        if !kinds.contains("jwt"), self.jwtKey != nil || self.jwtIssuer != nil || self.jwtAudience != nil {
            throw ValidationError("--jwt-key, --jwt-issuer and --jwt-audience need --auth jwt (or jwt,apikey)")
        }
        if !kinds.contains("apikey"), self.apiKeys != nil {
            throw ValidationError("--api-keys needs --auth apikey (or jwt,apikey)")
        }
        for (name, text) in [("--jwt-leeway", self.jwtLeeway), ("--jwt-max-lifetime", self.jwtMaxLifetime)]
        where MeridianServerCommand.duration(text) == nil && text != "0" {
            throw ValidationError(
                "\(name) must be a number of seconds, or a number with ms, s, m, h or d; not '\(text)'")
        }
        if kinds == ["none"], !Self.isLoopback(listenHost), !self.allowUnauthenticated {
            throw ValidationError(
                "--auth none on \(listenHost), which is not a loopback address, would let anyone who reaches the port "
                    + "read and write everything: give --auth jwt|apikey, or --allow-unauthenticated")
        }
    }

    /// Whether `host` is a loopback address.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// The authenticator the options describe (`nil` for none), its key file read and named in the log.
    func authenticator(schema: Schema, logger: Logger) async throws(AuthConfigurationError) -> Authenticator? {
        let kinds = self.kinds
        if kinds == ["none"] {
            if let access = schema.access {
                throw AuthConfigurationError(
                    "the schema has rules (an auth: section declaring \(access.claims.count) claims), which need an "
                        + "identity: give --auth jwt|apikey")
            }
            return nil
        }
        var tokens: TokenVerifier?
        if kinds.contains("jwt"), let path = self.jwtKey {
            let keys = try await VerificationKeys.load(contentsOf: path)
            tokens = TokenVerifier(
                keys: keys, issuer: self.jwtIssuer, audience: self.jwtAudience,
                leeway: MeridianServerCommand.duration(self.jwtLeeway) ?? .zero,
                maximumLifetime: MeridianServerCommand.duration(self.jwtMaxLifetime) ?? .seconds(86_400))
            logger.info(
                "JWTs are verified with \(keys.format)",
                metadata: [
                    "meridian.jwt.key": "\(path)", "meridian.jwt.issuer": "\(self.jwtIssuer ?? "any")",
                    "meridian.jwt.audience": "\(self.jwtAudience ?? "any")",
                ])
        }
        var keys: APIKeys?
        if kinds.contains("apikey"), let path = self.apiKeys {
            let loaded = try APIKeys.load(contentsOf: path)
            keys = loaded
            logger.info(
                "API keys accepted",
                metadata: ["meridian.apikeys": "\(loaded.count)", "meridian.apikeys.file": "\(path)"])
        }
        if let access = schema.access {
            logger.info(
                "rules in force", metadata: ["meridian.rules.fingerprint": "\(access.fingerprint)"])
        }
        if kinds.contains("mtls") { logger.info("client certificates authenticate calls that carry no token") }
        return Authenticator(tokens: tokens, apiKeys: keys, acceptsCertificates: kinds.contains("mtls"))
    }
}
