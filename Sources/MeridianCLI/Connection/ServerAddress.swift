// MARK: - ServerAddress

/// Where the server listens: `HOST:PORT`, as given to `--server` or `MERIDIAN_SERVER`.
///
/// The host is an IPv4 address (`127.0.0.1`), an IPv6 address in brackets (`[::1]`) or a DNS name (`localhost`).
public struct ServerAddress: Sendable, Hashable, CustomStringConvertible {
    /// The kind of host.
    enum Host: Sendable, Hashable {
        case ipv4(String)
        case ipv6(String)
        case dns(String)
    }

    /// The default: `127.0.0.1:7400`.
    public static let `default` = ServerAddress(host: .ipv4("127.0.0.1"), port: 7400)
    /// The environment variable that overrides the default.
    public static let environmentVariable = "MERIDIAN_SERVER"

    let host: Host
    /// The TCP port.
    public let port: Int

    init(host: Host, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`.
    ///
    /// - Throws: ``CLIError`` with status `badInput` naming what is wrong.
    public init(parsing text: String) throws(CLIError) {
        let problem = "server address '\(text)'"
        guard let colon = text.lastIndex(of: ":") else {
            throw CLIError.badInput("\(problem): expected HOST:PORT, such as 127.0.0.1:7400")
        }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        guard let port = Int(portText), (1...65535).contains(port) else {
            throw CLIError.badInput("\(problem): the port must be a number from 1 to 65535")
        }
        guard !host.isEmpty else { throw CLIError.badInput("\(problem): the host is missing") }
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            self.init(host: .ipv6(host), port: port)
        } else if host.contains(":") {
            throw CLIError.badInput("\(problem): write an IPv6 host in brackets, such as [::1]:7400")
        } else if Self.isIPv4(host) {
            self.init(host: .ipv4(host), port: port)
        } else {
            self.init(host: .dns(host), port: port)
        }
    }

    static func isIPv4(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4
            && parts.allSatisfy { part in
                !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && (UInt8(part) != nil)
            }
    }

    public var description: String {
        switch self.host {
        case .ipv4(let h), .dns(let h): "\(h):\(self.port)"
        case .ipv6(let h): "[\(h)]:\(self.port)"
        }
    }
}
