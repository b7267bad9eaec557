// MARK: - Options shared by commands

internal import ArgumentParser
internal import Foundation
internal import GRPCCore
internal import MeridianClient
internal import MeridianCore
internal import MeridianProto

/// `--server HOST:PORT` and the identity (`--token`, `--token-file`, `$MERIDIAN_TOKEN`), on every command that talks to
/// a server.
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The server's address (default: $MERIDIAN_SERVER, else 127.0.0.1:7400).", valueName: "host:port"))
    var server: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The token (a JWT or an API key) sent as 'authorization: Bearer …' (default: $MERIDIAN_TOKEN).",
            valueName: "token"))
    var token: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A file holding the token (read again before the token it holds expires).", valueName: "path"))
    var tokenFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Connect with TLS, verifying the server with these CA certificates (PEM); https://HOST:PORT uses the system's.",
            valueName: "path"))
    var tlsCa: String?

    @Option(
        name: .long,
        help: ArgumentHelp("A client certificate (PEM), for a server that requires one.", valueName: "path"))
    var tlsCert: String?

    @Option(name: .long, help: ArgumentHelp("The client certificate's private key (PEM).", valueName: "path"))
    var tlsKey: String?

    /// The environment variable a token is read from when neither option is given.
    static let tokenVariable = "MERIDIAN_TOKEN"

    /// The server to connect to (`--server`, else `MERIDIAN_SERVER`, else the default) and the credentials to send.
    func address() throws(CLIError) -> ServerEndpoint {
        var address = try self.serverAddress()
        if (self.tlsCert == nil) != (self.tlsKey == nil) {
            throw CLIError.badInput("--tls-cert and --tls-key go together")
        }
        if self.tlsCa != nil || self.tlsCert != nil {
            address.tls = ClientTLS(caPath: self.tlsCa, certificatePath: self.tlsCert, keyPath: self.tlsKey)
        }
        return ServerEndpoint(address: address, credentials: try self.credentials())
    }

    private func serverAddress() throws(CLIError) -> ServerAddress {
        if let server = self.server { return try Self.parse(server) }
        if let value = ProcessInfo.processInfo.environment[ServerAddress.environmentVariable], !value.isEmpty {
            do {
                return try Self.parse(value)
            } catch {
                throw error.within(ServerAddress.environmentVariable)
            }
        }
        return .default
    }

    /// `--token`, else `--token-file` (whose token is read again whenever the library asks), else `MERIDIAN_TOKEN`.
    private func credentials() throws(CLIError) -> Credentials? {
        if self.token != nil, self.tokenFile != nil {
            throw CLIError.badInput("give one of --token and --token-file")
        }
        if let token = self.token {
            guard !token.isEmpty else { throw CLIError.badInput("--token is empty") }
            return .token(token)
        }
        if let path = self.tokenFile {
            _ = try Self.readToken(path)
            return .provider { try Self.readToken(path) }
        }
        if let value = ProcessInfo.processInfo.environment[Self.tokenVariable], !value.isEmpty {
            return .token(value.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return nil
    }

    static func readToken(_ path: String) throws(CLIError) -> String {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw CLIError.badInput("cannot read the token file \(path): \(error.localizedDescription)")
        }
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw CLIError.badInput("the token file \(path) is empty") }
        return token
    }

    /// The library's parse, its message as bad input.
    static func parse(_ text: String) throws(CLIError) -> ServerAddress {
        do {
            return try ServerAddress(parsing: text)
        } catch {
            throw CLIError.badInput(error.message)
        }
    }
}

/// Where a command connects, and with which identity.
struct ServerEndpoint: Sendable, CustomStringConvertible {
    var address: ServerAddress
    var credentials: Credentials?

    var description: String { self.address.description }
}

/// `--where PRED` and `--sort KEYS`, checked against the served schema before anything is sent, so that a mistake
/// is reported with a caret under its position.
struct FetchOptions: ParsableArguments {
    @Option(
        name: .customLong("where"),
        help: ArgumentHelp("A predicate selecting rows (docs/predicates.md).", valueName: "predicate"))
    var predicate: String?

    @Option(
        name: .long,
        parsing: .unconditional,
        help: ArgumentHelp("Sort keys, comma-separated; -key for descending (the id breaks ties).", valueName: "keys"))
    var sort: String?

    /// The fetch request for `entity`, checked against it.
    ///
    /// - Throws: ``CLIError`` with status `badInput`: the predicate's or sort keys' error with a caret diagram.
    func fetchRequest(
        for entity: EntitySchema,
        sectionKey: String? = nil,
        limit: Int? = nil
    ) throws(CLIError) -> FetchRequest {
        let predicateText = self.predicate ?? ""
        var predicate = PredicateExpression.constant(true, .none)
        if !predicateText.trimmingCharacters(in: .whitespaces).isEmpty {
            do {
                predicate = try PredicateExpression.parse(predicateText)
                _ = try predicate.bind(to: entity)
            } catch {
                throw CLIError.badInput(Self.diagnostic("--where", error, text: predicateText), cause: error)
            }
        }
        let sortText = self.sort ?? ""
        let order: RowOrder
        do {
            order = try RowOrder(parsing: sortText)
        } catch {
            throw CLIError.badInput(Self.diagnostic("--sort", error, text: sortText), cause: error)
        }
        do {
            _ = try order.checked(against: entity, sectionKey: sectionKey)
        } catch {
            // `checked` positions count keys; point at the key's characters instead.
            var located = error
            let range = Self.characterRange(ofKey: error.position, in: sortText)
            located.position = range.lowerBound
            located.length = max(1, range.count)
            if sortText.isEmpty {
                throw CLIError.badInput("--sort: \(error.message)", cause: error)
            }
            throw CLIError.badInput(Self.diagnostic("--sort", located, text: sortText), cause: error)
        }
        return FetchRequest(
            entity: entity.name, predicate: predicate, order: order, sectionKey: sectionKey, limit: limit)
    }

    /// The two-part message of a predicate or sort error: what and where, then the text with a caret.
    ///
    /// ```text
    /// --where: typeMismatch at position 17: 'title' is string but 3 is int
    /// title BEGINSWITH 3
    ///                  ^
    /// ```
    static func diagnostic(_ option: String, _ error: MeridianCore.QueryError, text: String) -> String {
        "\(option): \(error.code) at position \(error.position): \(error.message)\n"
            + error.caretDiagram(for: text)
    }

    /// The character range of the `index`-th comma-separated key of `text`, trimmed of spaces and a leading sign.
    static func characterRange(ofKey index: Int, in text: String) -> Range<Int> {
        let chars = Array(text)
        var start = 0
        var key = 0
        while key < index, let comma = chars[start...].firstIndex(of: ",") {
            start = comma + 1
            key += 1
        }
        var end = chars[start...].firstIndex(of: ",") ?? chars.count
        var a = start
        while a < end, chars[a].isWhitespace || chars[a] == "-" || chars[a] == "+" { a += 1 }
        while end > a, chars[end - 1].isWhitespace { end -= 1 }
        return a..<end
    }
}

/// The server's answer to a bad predicate, with the caret under the position the server reported (the CLI checks
/// predicates itself first, so this happens only when the server's schema changed in between).
func predicateRejection(_ error: CLIError, predicate: String?) -> CLIError {
    guard let client = error.clientError, client.code == .badPredicate, let position = client.position,
        let text = predicate
    else { return error }
    // The detail's length, when the server sent one (the library keeps the detail's call as the cause).
    let length = (client.cause as? RPCError)?.errorDetail?.length ?? 1
    let located = MeridianCore.QueryError(.syntax, client.message, position: position, length: Int(max(1, length)))
    return CLIError(
        .badInput,
        "--where: at position \(located.position): \(client.message)\n" + located.caretDiagram(for: text),
        cause: client)
}
