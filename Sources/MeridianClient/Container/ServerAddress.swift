// MARK: - ServerAddress

package import GRPCNIOTransportHTTP2

/// Where a server listens: `HOST:PORT`, as a ``MeridianContainer/Configuration`` and the `meridian` command-line
/// tool (`--server`, `MERIDIAN_SERVER`) take it.
///
/// The host is an IPv4 address (`127.0.0.1`), an IPv6 address in brackets (`[::1]`) or a DNS name (`localhost`,
/// resolved when connecting).
///
/// ```swift
/// let address = try ServerAddress(parsing: "[::1]:7400")
/// print(address.host, address.port)   // ::1 7400
/// ```
public struct ServerAddress: Sendable, Hashable, CustomStringConvertible {
    /// How the host is given.
    enum Kind: Sendable, Hashable {
        case ipv4, ipv6, dns
    }

    /// The default: `127.0.0.1:7400`.
    public static let `default` = ServerAddress(kind: .ipv4, host: "127.0.0.1", port: 7400)
    /// The environment variable the command-line tool reads when `--server` is not given.
    public static let environmentVariable = "MERIDIAN_SERVER"

    let kind: Kind
    /// TLS to the server (`nil`: plaintext); an `https://` address turns it on with the system's trust roots.
    public var tls: ClientTLS?
    /// The host: an IPv4 address, an IPv6 address (without its brackets) or a DNS name.
    public let host: String
    /// The TCP port.
    public let port: Int

    init(kind: Kind, host: String, port: Int) {
        self.kind = kind
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`, or `https://HOST:PORT` for TLS (trusting the system's roots; set ``tls`` for others).
    ///
    /// - Throws: ``ClientError`` with code `malformedRequest` and a message naming what is wrong.
    public init(parsing text: String) throws(ClientError) {
        func invalid(_ why: String) -> ClientError {
            ClientError(.malformedRequest, "server address '\(text)': \(why)")
        }
        if text.hasPrefix("https://") {
            try self.init(parsing: String(text.dropFirst("https://".count)))
            self.tls = ClientTLS()
            return
        }
        guard let colon = text.lastIndex(of: ":") else {
            throw invalid("expected HOST:PORT, such as 127.0.0.1:7400")
        }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        guard let port = Int(portText), (1...65535).contains(port) else {
            throw invalid("the port must be a number from 1 to 65535")
        }
        guard !host.isEmpty else { throw invalid("the host is missing") }
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            guard !host.isEmpty else { throw invalid("the host is missing") }
            self.init(kind: .ipv6, host: host, port: port)
        } else if host.contains(":") {
            throw invalid("write an IPv6 host in brackets, such as [::1]:7400")
        } else if Self.isIPv4(host) {
            self.init(kind: .ipv4, host: host, port: port)
        } else {
            self.init(kind: .dns, host: host, port: port)
        }
    }

    static func isIPv4(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4
            && parts.allSatisfy { part in
                !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && (UInt8(part) != nil)
            }
    }

    /// `HOST:PORT`, with an IPv6 host in brackets.
    public var description: String {
        let scheme = self.tls == nil ? "" : "https://"
        return switch self.kind {
        case .ipv4, .dns: "\(scheme)\(self.host):\(self.port)"
        case .ipv6: "\(scheme)[\(self.host)]:\(self.port)"
        }
    }

    /// The library's transport configuration: grpc-swift's defaults, but each write sent at once — grpc-swift holds a
    /// connection's writes up to 100 µs by default to send them together, which a client's saves and subscriptions
    /// pay in latency (the server does the same, `ServerConfiguration.flushDelay`). `meridian-bench`'s clients use it.
    package static var transportConfig: HTTP2ClientTransport.Posix.Config {
        .defaults { $0.connection.flushCoalescing = nil }
    }

    /// A plaintext HTTP/2 transport to the address (for the library's connections and the command-line tool's).
    package func transport() throws -> HTTP2ClientTransport.Posix {
        let target: any ResolvableTarget =
            switch self.kind {
            case .ipv4: .ipv4(address: self.host, port: self.port)
            case .ipv6: .ipv6(address: self.host, port: self.port)
            case .dns: .dns(host: self.host, port: self.port)
            }
        let config = Self.transportConfig
        guard let tls = self.tls else {
            return try HTTP2ClientTransport.Posix(target: target, transportSecurity: .plaintext, config: config)
        }
        let security = HTTP2ClientTransport.Posix.TransportSecurity.tls(
            .defaults { config in
                config.trustRoots = tls.caPath.map { .certificates([.file(path: $0, format: .pem)]) } ?? .systemDefault
                if let certificate = tls.certificatePath, let key = tls.keyPath {
                    config.certificateChain = [.file(path: certificate, format: .pem)]
                    config.privateKey = .file(path: key, format: .pem)
                }
            })
        return try HTTP2ClientTransport.Posix(target: target, transportSecurity: security, config: config)
    }
}

/// TLS to a server: the CA that signs its certificate (else the system's roots), and a client certificate for a
/// server that requires one (mutual TLS).
public struct ClientTLS: Sendable, Hashable {
    /// The CA certificates (PEM) to verify the server with; `nil`: the system's trust roots.
    public var caPath: String?
    /// The client's certificate chain (PEM), for mutual TLS.
    public var certificatePath: String?
    /// The client certificate's private key (PEM).
    public var keyPath: String?

    /// Creates a TLS configuration.
    public init(caPath: String? = nil, certificatePath: String? = nil, keyPath: String? = nil) {
        self.caPath = caPath
        self.certificatePath = certificatePath
        self.keyPath = keyPath
    }
}
