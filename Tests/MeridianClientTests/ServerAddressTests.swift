// The one server address of the library and the command-line tool.

import MeridianClient
import Testing

@Suite struct ServerAddressTests {
    @Test(
        "a container takes IPv4, bracketed IPv6 and DNS hosts",
        arguments: [
            ("127.0.0.1:7400", "127.0.0.1", 7400), ("[::1]:7401", "::1", 7401),
            ("[fe80::1%eth0]:80", "fe80::1%eth0", 80), ("db.example.com:7400", "db.example.com", 7400),
        ])
    func parses(text: String, host: String, port: Int) throws {
        let configuration = try MeridianContainer.Configuration(server: text)
        #expect(configuration.host == host)
        #expect(configuration.port == port)
        #expect(configuration.address.description == text)
    }

    @Test(
        "a malformed address is refused with a message that names it",
        arguments: ["7400", "host:", "host:0", "host:70000", ":80", "::1:80", "[]:80", "[::1]"])
    func refuses(text: String) throws {
        let error = try #require(throws: ClientError.self) { try MeridianContainer.Configuration(server: text) }
        #expect(error.code == .malformedRequest)
        #expect(error.message.hasPrefix("server address '\(text)': "))
    }
}
