// MARK: - The token campaign: mutated credentials against a server that requires them

internal import Foundation
internal import GRPCCore
internal import MeridianAuth
internal import MeridianCore
internal import MeridianProto
internal import MeridianServer
internal import MeridianStore
internal import MeridianTestSupport

/// Sends calls whose `authorization` metadata is a mutation of a valid token — bytes flipped, segments cut, swapped
/// or repeated, the header's `alg` changed (`none`, `HS512`, `RS256`), the payload edited under the old signature,
/// claims that fail (expired, not yet valid, no `exp`) under a good signature, another key's signature, oversized and
/// non-ASCII values — to an in-process server that verifies HS256 tokens, on every RPC.
///
/// The promise: a call is accepted only with a token whose header, payload and signature decode to the valid token's
/// own bytes (base64url allows a few spellings of the same bytes); every other one is refused `UNAUTHENTICATED`,
/// never answered, and never answered with another code. After each batch the server must still accept the valid
/// token. A failure's corpus text (`token/*.token`, docs/fuzzing.md) holds the method and the header value.
struct TokenCampaign {
    let seed: UInt64
    var batchSize = 25

    /// The HS256 secret of the campaign's server (a test secret: the tokens it signs protect nothing).
    static let secret = String(repeating: "f", count: 40) + "-meridian-fuzz-token-secret"
    static let otherSecret = String(repeating: "g", count: 40) + "-meridian-fuzz-token-secret"

    func run(budget: FuzzBudget) async throws -> CampaignReport {
        var report = CampaignReport(campaign: .token, seed: self.seed)
        try await Self.withServer { port, keys in
            var index = 0
            var batch = 0
            while budget.allows(index) {
                let valid = try await keys.token(subject: "fuzz", lifetime: .seconds(3600))
                try await withFuzzClient(host: "127.0.0.1", port: port) { client in
                    for _ in 0..<self.batchSize where budget.allows(index) {
                        var random = FuzzRandom(seed: self.seed, campaign: .token, index: index)
                        let input = try await TokenMutation.input(from: valid, keys: keys, random: &random)
                        // A value HTTP/2 may refuse before the server sees it can take its connection down: it
                        // gets a connection of its own.
                        let outcome =
                            Self.transportMayRefuse(input.authorization)
                            ? try await withFuzzClient(host: "127.0.0.1", port: port) { own in
                                await Self.judge(input, validToken: valid, client: own)
                            } : await Self.judge(input, validToken: valid, client: client)
                        switch outcome {
                        case .success(let kind): report.record(kind)
                        case .failure(let failure):
                            report.fail(
                                index: index, failure.message,
                                input: input.corpusText(comment: "seed \(self.seed) input \(index): \(failure.message)")
                            )
                        }
                        index += 1
                    }
                    batch += 1
                    // The server still serves the valid token.
                    let check = await Self.call(.getSchema, authorization: "Bearer \(valid)", client)
                    if case .answered = check {
                    } else {
                        report.fail(
                            index: index - 1,
                            "after input \(index - 1) the valid token is no longer accepted: \(check)",
                            input: "")
                    }
                }
                if report.failures.count > 20 { break }
            }
        }
        return report
    }

    /// Runs `body` with the port of an in-process server verifying the campaign's HS256 tokens, and the keys.
    static func withServer(_ body: (Int, TokenKeys) async throws -> Void) async throws {
        let keys = try await TokenKeys()
        defer { keys.remove() }
        let store: Store
        do {
            store = try Store.inMemory(schema: FuzzSchema.schema)
        } catch {
            throw FuzzSetupError("cannot create the token campaign's store: \(error)")
        }
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.heartbeatInterval = .seconds(1)
        configuration.applyRatePerPrincipal = 0
        try await withTestServer(store: store, configuration: configuration, authenticator: keys.authenticator) {
            _, port in try await body(port, keys)
        }
    }

    /// Whether HTTP/2 itself may refuse the value before the server sees it: longer than the 16 KiB header list a
    /// server accepts, or holding bytes a header value may not (controls, non-ASCII).
    static func transportMayRefuse(_ authorization: String) -> Bool {
        authorization.utf8.count > 16_384 || authorization.utf8.contains { $0 < 0x20 || $0 > 0x7E }
    }

    /// Judges one input: accepted only with the valid token's own bytes, else refused `UNAUTHENTICATED` with a
    /// message that does not help a forger (or, for a value HTTP/2 refuses, `UNAVAILABLE` from the transport).
    static func judge(_ input: TokenInput, validToken: String, client: GRPCClient<some ClientTransport>) async
        -> Result<String, TextFailure>
    {
        let same = TokenMutation.sameToken(input.authorization, as: validToken)
        let method = input.method.rawValue
        switch await Self.call(input.method, authorization: input.authorization, client) {
        case .answered:
            return same
                ? .success("accepted, same token")
                : .failure(TextFailure("a mutated token was accepted on \(method)"))
        case .refused(.unauthenticated, let message):
            if message.lowercased().contains("signature") {
                return .failure(TextFailure("\(method) refused the token saying why, which helps a forger: \(message)"))
            }
            return .success(same ? "refused, same token in another spelling" : "refused")
        case .refused(.unavailable, _) where Self.transportMayRefuse(input.authorization):
            return .success("refused by HTTP/2")
        case .refused(let code, let message):
            return .failure(TextFailure("\(method) answered \(code) (\(message)) instead of UNAUTHENTICATED"))
        case .notSent:
            // The client would not send the value (not valid metadata): nothing reached the server.
            return .success("not sent")
        case .other(let error):
            return .failure(TextFailure("\(method) failed with \(error)"))
        }
    }

    enum CallOutcome {
        case answered
        case refused(RPCError.Code, String)
        case notSent
        case other(String)
    }

    /// One call with `authorization`: answered, refused with a status, not sent (the client refused the metadata).
    static func call(
        _ method: WireMethod, authorization: String, _ client: GRPCClient<some ClientTransport>
    ) async -> CallOutcome {
        let metadata: Metadata = ["authorization": .string(authorization)]
        let meridian = Meridian_V1_Meridian.Client(wrapping: client)
        var options = CallOptions.defaults
        options.timeout = .seconds(10)
        do {
            switch method {
            case .getSchema:
                _ = try await meridian.getSchema(Meridian_V1_GetSchemaRequest(), metadata: metadata, options: options)
            case .query:
                var request = Meridian_V1_QueryRequest()
                request.fetch.entity = "Author"
                try await meridian.query(request, metadata: metadata, options: options) { response in
                    for try await _ in response.messages {}
                }
            case .apply, .applyStream:
                var request = Meridian_V1_ApplyRequest()
                var operation = Meridian_V1_Operation()
                operation.kind = .insert
                operation.entity = "Author"
                operation.id = "token-fuzz"
                request.operations = [operation]
                _ = try await meridian.apply(request, metadata: metadata, options: options)
            case .sync:
                try await meridian.sync(
                    metadata: metadata, options: options,
                    requestProducer: { writer in
                        var hello = Meridian_V1_SyncRequest()
                        hello.hello.protocolVersion = ProtocolVersion.current
                        try await writer.write(hello)
                    },
                    onResponse: { response in
                        // The first message (a Welcome) means the stream was accepted.
                        for try await _ in response.messages { break }
                    })
            }
            return .answered
        } catch let error as RPCError {
            return .refused(error.code, error.message)
        } catch {
            return .other("\(error)")
        }
    }
}

/// The campaign's keys: the server's authenticator, a signer with its secret and one with another secret.
struct TokenKeys: Sendable {
    let directory: String
    let authenticator: Authenticator
    let signer: SigningKey
    let otherSigner: SigningKey

    init() async throws {
        self.directory = NSTemporaryDirectory() + "meridian-fuzz-token-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        let path = self.directory + "/hs256.secret"
        let otherPath = self.directory + "/other.secret"
        try TokenCampaign.secret.write(toFile: path, atomically: true, encoding: .utf8)
        try TokenCampaign.otherSecret.write(toFile: otherPath, atomically: true, encoding: .utf8)
        self.signer = try await SigningKey.load(contentsOf: path)
        self.otherSigner = try await SigningKey.load(contentsOf: otherPath)
        self.authenticator = Authenticator(
            tokens: TokenVerifier(keys: try await VerificationKeys.load(contentsOf: path), leeway: .zero),
            apiKeys: nil)
    }

    func token(subject: String, lifetime: Duration) async throws -> String {
        try await self.signer.sign(subject: subject, claims: [:], lifetime: lifetime)
    }

    func remove() { try? FileManager.default.removeItem(atPath: self.directory) }
}

/// One token input: a method and the `authorization` header's value.
struct TokenInput: Sendable, Equatable {
    var method: WireMethod
    var authorization: String

    /// The corpus file text: `method NAME` and `authorization VALUE`, with `comment` lines first.
    func corpusText(comment: String = "") -> String {
        var lines = comment.split(separator: "\n").map { "# " + $0 }
        lines.append("method \(self.method.rawValue)")
        lines.append("authorization \(self.authorization)")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Reads a corpus file's text.
    init(corpusText text: String) throws(CorpusError) {
        var method: WireMethod?
        var authorization: String?
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("method ") {
                guard let m = WireMethod(rawValue: String(line.dropFirst(7))) else {
                    throw CorpusError("line \(number + 1): unknown method '\(line.dropFirst(7))'")
                }
                method = m
            } else if line.hasPrefix("authorization ") {
                authorization = String(line.dropFirst(14))
            } else {
                throw CorpusError("line \(number + 1): expected 'method NAME' or 'authorization VALUE'")
            }
        }
        guard let method, let authorization else {
            throw CorpusError("a token file needs a method and an authorization")
        }
        self.method = method
        self.authorization = authorization
    }

    init(method: WireMethod, authorization: String) {
        self.method = method
        self.authorization = authorization
    }
}
