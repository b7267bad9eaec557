// MARK: - meridian token

internal import ArgumentParser
internal import Foundation
internal import MeridianAuth
internal import MeridianCore

/// `meridian token issue`: development tokens signed with a local key.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Make development tokens (JWTs) for a server started with --auth jwt.",
        subcommands: [IssueTokenCommand.self])
}

/// `meridian token issue --key FILE --sub alice --claim team=7 --ttl 1h`.
struct IssueTokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "issue",
        abstract: "Sign a token and print it.",
        discussion: """
            --key is a PEM private key (RSA: RS256, P-256: ES256, Ed25519: EdDSA) whose public half the server \
            verifies with (--jwt-key), or the HS256 shared secret file the server also reads. The token carries \
            sub, iat, exp (now + --ttl), jti, the --claim values, and iss and aud when given. A --claim value is \
            read as JSON when it is JSON (7, true, "7", ["p1","p2"]), else as a string: --claim team=7 \
            --claim role=admin --claim 'projects=["p1","p2"]'.

            Example: meridian watch Note --token "$(meridian token issue --key dev.key --sub alice --claim team=7)"
            """)

    @Option(help: ArgumentHelp("The signing key file.", valueName: "path"))
    var key: String

    @Option(help: ArgumentHelp("The subject (sub).", valueName: "id"))
    var sub: String

    @Option(help: ArgumentHelp("A claim, name=value (repeatable).", valueName: "name=value"))
    var claim: [String] = []

    @Option(
        help: ArgumentHelp(
            "How long the token is valid: seconds, or a number with s, m, h or d (default 1h).", valueName: "duration"))
    var ttl = "1h"

    @Option(help: ArgumentHelp("The issuer (iss).", valueName: "issuer"))
    var issuer: String?

    @Option(help: ArgumentHelp("The audience (aud).", valueName: "audience"))
    var audience: String?

    func run() async throws {
        guard !self.sub.isEmpty else { throw CLIError.badInput("--sub is empty") }
        guard let ttl = Self.duration(self.ttl) else {
            throw CLIError.badInput(
                "--ttl must be a positive number of seconds, or a number with s, m, h or d; not '\(self.ttl)'")
        }
        var claims: [String: ClaimValue] = [:]
        for (i, text) in self.claim.enumerated() {
            guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                throw CLIError.badInput("--claim \(i + 1) ('\(text)') must be name=value")
            }
            let name = String(text[..<equals])
            guard !["sub", "exp", "iat", "nbf", "jti", "iss", "aud"].contains(name) else {
                throw CLIError.badInput("--claim \(name)=…: \(name) is set by its own option or by the command")
            }
            claims[name] = Self.claimValue(String(text[text.index(after: equals)...]))
        }
        let signing: SigningKey
        do {
            signing = try await SigningKey.load(contentsOf: self.key)
        } catch {
            throw CLIError.badInput(error.description)
        }
        let token: String
        do {
            token = try await signing.sign(
                subject: self.sub, claims: claims, lifetime: ttl, issuer: self.issuer, audience: self.audience)
        } catch {
            throw CLIError(.failure, "cannot sign the token: \(error)")
        }
        Terminal.printLine(token)
    }

    /// A value as JSON when it parses as JSON, else the text as a string.
    static func claimValue(_ text: String) -> ClaimValue {
        if let value = try? JSONDecoder().decode(ClaimValue.self, from: Data(text.utf8)), value != .other {
            return value
        }
        return .string(text)
    }

    /// `90`, `90s`, `15m`, `1h`, `7d`.
    static func duration(_ text: String) -> Duration? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        var digits = Substring(text)
        var scale: Int64 = 1
        if let last = text.last, let unit = units[last] {
            digits = text.dropLast()
            scale = unit
        }
        guard let value = Int64(digits), value > 0, value <= 3_650 * 86_400 / scale else { return nil }
        return .seconds(value * scale)
    }
}
