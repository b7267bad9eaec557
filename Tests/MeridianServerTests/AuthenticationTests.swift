import Crypto
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import MeridianAuth
import MeridianCore
import MeridianProto
import MeridianServer
import MeridianStore
import MeridianTestSupport
import Testing

/// Keys made for one test in a temporary directory with openssl: PEM files, a JWKS, an API key file.
final class TestKeys: Sendable {
    let directory: String

    init() throws {
        self.directory =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("meridian-keys-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: self.directory) }

    func path(_ name: String) -> String { self.directory + "/" + name }

    /// Runs openssl with `arguments`.
    func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Polled, not waitUntilExit(): on Linux that call can spin for ever when Foundation misses the child's exit.
        for _ in 0..<15_000 where process.isRunning { usleep(2_000) }
        guard !process.isRunning, process.terminationStatus == 0 else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "openssl \(arguments) failed"])
        }
    }

    /// `name.key` (private) and `name.pub` (public): `ed25519`, or `rsa` (2048 bits).
    func pair(_ name: String, _ algorithm: String) throws {
        var generate = [
            "genpkey", "-algorithm", algorithm == "rsa" ? "RSA" : algorithm, "-out", self.path(name + ".key"),
        ]
        if algorithm == "rsa" { generate += ["-pkeyopt", "rsa_keygen_bits:2048"] }
        try self.openssl(generate)
        try self.openssl(["pkey", "-in", self.path(name + ".key"), "-pubout", "-out", self.path(name + ".pub")])
    }

    /// A JWKS holding the Ed25519 public key of pair `name` under `kid`.
    func jwks(_ name: String, kid: String) throws -> String {
        try self.openssl([
            "pkey", "-in", self.path(name + ".key"), "-pubout", "-outform", "DER", "-out", self.path(name + ".der"),
        ])
        let der = try Data(contentsOf: URL(fileURLWithPath: self.path(name + ".der")))
        let x = Data(der.suffix(32)).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let path = self.path(name + ".jwks")
        try #"{"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "\#(kid)", "x": "\#(x)"}]}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func write(_ text: String, to name: String) throws -> String {
        try text.write(toFile: self.path(name), atomically: true, encoding: .utf8)
        return self.path(name)
    }
}

/// Claims valid now: `sub`, `iat`, `exp` one hour out, plus `extra`.
func claims(_ subject: String, _ extra: [String: ClaimValue] = [:], now: Date = Date()) -> [String: ClaimValue] {
    var claims = extra
    claims["sub"] = .string(subject)
    claims["iat"] = .int(Int64(now.timeIntervalSince1970))
    if claims["exp"] == nil { claims["exp"] = .int(Int64(now.timeIntervalSince1970) + 3_600) }
    return claims
}

func base64URL(_ data: some DataProtocol) -> String {
    Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// Every way in without a valid identity is refused `UNAUTHENTICATED`, on every RPC, while a valid token works on all
/// of them (so that each refusal is a refusal of the credential, not of the call).
@Suite struct AuthenticationTests {
    /// The RPCs every credential is tried on: each returns normally or throws the call's error.
    static func everyRPC(
        _ meridian: Meridian_V1_Meridian.Client<some ClientTransport>, _ metadata: Metadata
    ) -> [(String, () async throws -> Void)] {
        [
            ("GetSchema", { _ = try await meridian.getSchema(Meridian_V1_GetSchemaRequest(), metadata: metadata) }),
            (
                "Apply",
                {
                    var request = Meridian_V1_ApplyRequest()
                    request.operations = []
                    _ = try await meridian.apply(request, metadata: metadata)
                }
            ),
            (
                "Query",
                {
                    var request = Meridian_V1_QueryRequest()
                    request.fetch = Fixtures.fetch("Point")
                    _ = try await meridian.query(request, metadata: metadata) { response in
                        for try await _ in response.messages {}
                    }
                }
            ),
            (
                "ApplyStream",
                {
                    try await meridian.applyStream(
                        metadata: metadata, requestProducer: { _ in },
                        onResponse: { response in for try await _ in response.messages {} })
                }
            ),
            (
                "Sync",
                {
                    try await withSyncStream(meridian, metadata: metadata) { stream in
                        stream.hello()
                        _ = try await stream.nextMessage()
                    }
                }
            ),
        ]
    }

    /// `byTransport`: a credential too large for HTTP/2's header list (16 KiB) is refused by the transport before the
    /// server reads it — the stream is reset, which the client reports as `unavailable` — and is never served either.
    static func expectRefused(
        _ meridian: Meridian_V1_Meridian.Client<some ClientTransport>, _ token: String?, _ what: String,
        byTransport: Bool = false
    ) async {
        let metadata: Metadata = token.map { ["authorization": "Bearer \($0)"] } ?? [:]
        for (name, call) in Self.everyRPC(meridian, metadata) {
            do {
                try await call()
                Issue.record("\(what): \(name) was served")
            } catch let error as RPCError {
                #expect(
                    error.code == .unauthenticated || (byTransport && error.code == .unavailable),
                    "\(what): \(name): \(error)")
                #expect(!error.message.contains("signature"), "\(what): the message helps a forger: \(error.message)")
            } catch {
                Issue.record("\(what): \(name) failed with \(error)")
            }
        }
    }

    static func expectServed(
        _ meridian: Meridian_V1_Meridian.Client<some ClientTransport>, _ token: String, _ what: String
    ) async {
        for (name, call) in Self.everyRPC(meridian, ["authorization": "Bearer \(token)"]) {
            do {
                try await call()
            } catch {
                Issue.record("\(what): \(name) was refused: \(error)")
            }
        }
    }

    static func run(
        _ authenticator: Authenticator,
        _ body: (Meridian_V1_Meridian.Client<HTTP2ClientTransport.Posix>) async throws -> Void
    ) async throws {
        let store = try Fixtures.store()
        try await withTestServer(store: store, configuration: Fixtures.configuration(), authenticator: authenticator) {
            _, port in
            try await withHTTP2Client(port: port) { client in
                try await body(Meridian_V1_Meridian.Client(wrapping: client))
            }
        }
    }

    @Test(
        "EdDSA tokens: forged, alg none, expired, future nbf, no exp, wrong iss or aud, too long, oversized; API keys")
    func edDSA() async throws {
        let keys = try TestKeys()
        try keys.pair("server", "ed25519")
        try keys.pair("attacker", "ed25519")
        let good = try await SigningKey.load(contentsOf: keys.path("server.key"))
        let attacker = try await SigningKey.load(contentsOf: keys.path("attacker.key"))
        let apiKeyFile = try keys.write(
            #"[{"id": "importer", "sha256": "\#(APIKeys.digest(of: "s3cret-key-of-the-importer"))", "claims": {"sub": "importer"}}]"#,
            to: "keys.json")
        let authenticator = Authenticator(
            tokens: TokenVerifier(
                keys: try await VerificationKeys.load(contentsOf: keys.path("server.pub")), issuer: "meridian-test",
                audience: "notes", leeway: .seconds(5), maximumLifetime: .seconds(86_400)),
            apiKeys: try APIKeys.load(contentsOf: apiKeyFile))
        let now = Int64(Date().timeIntervalSince1970)
        let base = claims("alice", ["iss": .string("meridian-test"), "aud": .string("notes")])
        func with(_ changes: [String: ClaimValue?]) -> [String: ClaimValue] {
            var claims = base
            for (name, value) in changes { claims[name] = value }
            return claims
        }
        let valid = try await good.sign(claims: base)
        let header = base64URL(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let payload = base64URL(try JSONEncoder().encode(base))
        let cases: [(String, String?)] = [
            ("no token", nil),
            ("a forged signature", try await attacker.sign(claims: base)),
            ("alg none", "\(header).\(payload)."),
            ("expired", try await good.sign(claims: with(["exp": .int(now - 60), "iat": .int(now - 120)]))),
            ("nbf in the future", try await good.sign(claims: with(["nbf": .int(now + 600)]))),
            ("no exp", try await good.sign(claims: with(["exp": nil]))),
            ("another iss", try await good.sign(claims: with(["iss": .string("someone-else")]))),
            ("another aud", try await good.sign(claims: with(["aud": .string("other-app")]))),
            ("valid for a year", try await good.sign(claims: with(["exp": .int(now + 366 * 86_400)]))),
            ("no sub", try await good.sign(claims: with(["sub": nil]))),
            (
                "a 12 kB token (over the 8 KiB credential bound)",
                try await good.sign(claims: with(["pad": .string(String(repeating: "x", count: 9_000))]))
            ),
            (
                "a valid token's payload swapped",
                {
                    let parts = valid.split(separator: ".")
                    let forged = base64URL(try! JSONEncoder().encode(with(["sub": .string("admin")])))
                    return "\(parts[0]).\(forged).\(parts[2])"
                }()
            ),
            ("a wrong API key", "not-the-key-of-the-importer"),
        ]
        try await Self.run(authenticator) { meridian in
            await Self.expectServed(meridian, valid, "the valid token")
            await Self.expectServed(meridian, "s3cret-key-of-the-importer", "the valid API key")
            for (what, token) in cases { await Self.expectRefused(meridian, token, what) }
            // The scheme must be Bearer.
            do {
                _ = try await meridian.getSchema(
                    Meridian_V1_GetSchemaRequest(), metadata: ["authorization": "Basic \(valid)"])
                Issue.record("a Basic credential was served")
            } catch let error as RPCError {
                #expect(error.code == .unauthenticated)
            }
            // exp is required in itself, not only through the lifetime bound: without that bound, still refused.
            let unbounded = TokenVerifier(
                keys: try await VerificationKeys.load(contentsOf: keys.path("server.pub")),
                maximumLifetime: .seconds(100 * 365 * 86_400))
            guard case .failure(let error) = await unbounded.verify(try await good.sign(claims: with(["exp": nil])))
            else {
                Issue.record("a token without exp was accepted")
                return
            }
            #expect(error.reason == "no exp")
            // Last: HTTP/2 may end the whole connection over a header list this large.
            let huge = try await good.sign(claims: with(["pad": .string(String(repeating: "x", count: 100_000))]))
            await Self.expectRefused(meridian, huge, "a 100 kB token", byTransport: true)
        }
    }

    @Test("RS256: a token signed with HS256 using the server's RSA public key as the secret is refused")
    func keyConfusion() async throws {
        let keys = try TestKeys()
        try keys.pair("server", "rsa")
        let good = try await SigningKey.load(contentsOf: keys.path("server.key"))
        #expect(good.algorithm == "RS256")
        let publicPEM = try String(contentsOfFile: keys.path("server.pub"), encoding: .utf8)
        let authenticator = Authenticator(
            tokens: TokenVerifier(keys: try await VerificationKeys.load(contentsOf: keys.path("server.pub"))),
            apiKeys: nil)
        let header = base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let payload = base64URL(try JSONEncoder().encode(claims("alice")))
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("\(header).\(payload)".utf8), using: SymmetricKey(data: Data(publicPEM.utf8)))
        let confused = "\(header).\(payload).\(base64URL(Data(mac)))"
        try await Self.run(authenticator) { meridian in
            await Self.expectServed(meridian, try await good.sign(claims: claims("alice")), "the valid RS256 token")
            await Self.expectRefused(meridian, confused, "HS256 with the RSA public key")
            await Self.expectRefused(meridian, "a.b.c", "garbage with two dots")
        }
    }

    @Test("JWKS: a token naming an unknown kid, or none, is refused; the known kid is served")
    func unknownKid() async throws {
        let keys = try TestKeys()
        try keys.pair("server", "ed25519")
        let jwks = try keys.jwks("server", kid: "k1")
        let verification = try await VerificationKeys.load(contentsOf: jwks)
        #expect(verification.format == "a JWKS of 1 key (EdDSA)")
        let good = try await SigningKey.load(contentsOf: keys.path("server.key"))
        let authenticator = Authenticator(tokens: TokenVerifier(keys: verification), apiKeys: nil)
        try await Self.run(authenticator) { meridian in
            await Self.expectServed(meridian, try await good.sign(claims: claims("alice"), kid: "k1"), "kid k1")
            await Self.expectRefused(meridian, try await good.sign(claims: claims("alice"), kid: "k2"), "kid k2")
            await Self.expectRefused(meridian, try await good.sign(claims: claims("alice")), "no kid")
        }
    }

    @Test("key files: a short HS256 secret, a private JWK and garbage are refused at startup with the file named")
    func badKeyFiles() async throws {
        let keys = try TestKeys()
        let short = try keys.write("too-short", to: "short.secret")
        let secretJWK = try keys.write(#"{"keys": [{"kty": "oct", "kid": "a", "k": "c2VjcmV0"}]}"#, to: "oct.jwks")
        let garbage = try keys.write("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", to: "bad.pem")
        for path in [short, secretJWK, garbage] {
            do {
                _ = try await VerificationKeys.load(contentsOf: path)
                Issue.record("\(path) was accepted")
            } catch {
                #expect(error.description.contains(path), "\(error)")
            }
        }
        let secret = try keys.write(String(repeating: "k", count: 40) + "\n", to: "hs.secret")
        #expect(try await VerificationKeys.load(contentsOf: secret).format == "an HS256 shared secret of 40 bytes")
    }
}
