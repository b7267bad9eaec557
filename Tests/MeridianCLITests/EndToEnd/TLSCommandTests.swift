// MARK: - TLS through the binaries: a CA made here, plaintext and certificate-less clients refused, the principal
// from a client certificate, a renewed certificate used by new connections

import Foundation
import Testing

@Suite(.timeLimit(.minutes(3)))
struct TLSCommandTests {
    /// A CA, a server certificate for 127.0.0.1 and a client certificate with a URI SAN, made with openssl.
    final class PKI: Sendable {
        let directory: String

        init() throws {
            self.directory = NSTemporaryDirectory() + "meridian-tls-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
            try self.openssl([
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                self.path("ca.key"), "-out", self.path("ca.pem"), "-days", "2", "-subj", "/CN=Meridian Test CA",
            ])
            try self.issue("server", commonName: "one", san: "IP:127.0.0.1,DNS:localhost")
            try self.issue("client", commonName: "alice", san: "URI:spiffe://meridian/alice")
        }

        deinit { try? FileManager.default.removeItem(atPath: self.directory) }

        func path(_ name: String) -> String { self.directory + "/" + name }

        /// `name.key` and `name.pem`, signed by the CA.
        func issue(_ name: String, commonName: String, san: String) throws {
            let ext = self.path(name + ".ext")
            try "subjectAltName=\(san)\n".write(toFile: ext, atomically: true, encoding: .utf8)
            try self.openssl([
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                self.path(name + ".key"), "-out", self.path(name + ".csr"), "-subj", "/CN=\(commonName)",
            ])
            try self.openssl([
                "x509", "-req", "-in", self.path(name + ".csr"), "-CA", self.path("ca.pem"), "-CAkey",
                self.path("ca.key"), "-CAcreateserial", "-out", self.path(name + ".pem"), "-days", "2", "-extfile", ext,
            ])
        }

        func openssl(_ arguments: [String], stdin: String? = nil) throws {
            let child = try ChildProcess("/usr/bin/openssl", arguments, stdin: stdin)
            let status = child.process.exitStatusPolling()
            guard status == 0 else { throw TestServerError(message: "openssl \(arguments): \(child.errorOutput)") }
        }

        /// The subject of the certificate a new TLS connection to `address` is served.
        func servedSubject(_ address: String) async throws -> String {
            let child = try ChildProcess(
                "/usr/bin/openssl", ["s_client", "-connect", address, "-CAfile", self.path("ca.pem")], stdin: "")
            _ = await child.waitForExit()
            let output = await child.allOutput()
            return output.split(separator: "\n").first { $0.hasPrefix("subject=") }.map(String.init) ?? output
        }
    }

    @Test("TLS: plaintext refused, the CA's server certificate trusted, another CA's not")
    func serverTLS() async throws {
        let pki = try PKI()
        try await withTestServer(arguments: [
            "--tls-cert", pki.path("server.pem"), "--tls-key", pki.path("server.key"),
        ]) { server in
            let s = server.address
            var r = try await runMeridian(["health", "--tls-ca", pki.path("ca.pem")], server: s)
            #expect(r.status == 0 && r.stdout == "SERVING\n", "\(r)")
            r = try await runMeridian(["health"], server: s)
            #expect(r.status == 3, "plaintext: \(r)")
            r = try await runMeridian(["health"], server: "https://" + s)
            #expect(r.status == 3, "the system's roots do not hold the test CA: \(r)")
            r = try await runMeridian(["health", "--tls-ca", pki.path("client.pem")], server: s)
            #expect(r.status == 3, "a CA that did not sign it: \(r)")
        }
    }

    @Test("with --tls-cert the admin endpoint serves HTTPS with the same certificate, and refuses plain HTTP")
    func adminOverTLS() async throws {
        let pki = try PKI()
        try await withTestServer(arguments: [
            "--tls-cert", pki.path("server.pem"), "--tls-key", pki.path("server.key"), "--admin", "127.0.0.1:0",
        ]) { server in
            let line = try #require(await server.process.nextLine(timeout: .seconds(30)))
            #expect(line.hasPrefix("admin on https://127.0.0.1:"), "\(line)")
            let url = String(line.dropFirst("admin on ".count))
            let curl = try ChildProcess("/usr/bin/curl", ["-sS", "--cacert", pki.path("ca.pem"), url + "healthz"])
            #expect(await curl.waitForExit() == 0, "\(curl.errorOutput)")
            #expect(await curl.allOutput() == "ok\n")
            let plain = try ChildProcess(
                "/usr/bin/curl",
                ["-sS", "--max-time", "5", url.replacingOccurrences(of: "https:", with: "http:") + "healthz"])
            #expect(await plain.waitForExit() != 0, "plain HTTP was answered")
            let untrusted = try ChildProcess("/usr/bin/curl", ["-sS", "--max-time", "5", url + "healthz"])
            #expect(await untrusted.waitForExit() != 0, "a CA the system does not trust was accepted")
        }
    }

    @Test("mutual TLS: a client without a certificate is refused; --auth mtls takes the principal from the SAN")
    func mutualTLS() async throws {
        let pki = try PKI()
        let schema = pki.path("notes.yaml")
        try """
        version: 1
        auth:
          claims: { sub: string }
        entities:
          Note:
            id: client
            attributes:
              title: string
              ownerId: string
            rules:
              read: ownerId == @sub
              insert: ownerId == @sub
        """.write(toFile: schema, atomically: true, encoding: .utf8)
        try await withTestServer(
            schema: schema,
            arguments: [
                "--tls-cert", pki.path("server.pem"), "--tls-key", pki.path("server.key"), "--tls-client-ca",
                pki.path("ca.pem"), "--tls-client-auth", "require", "--auth", "mtls",
            ]
        ) { server in
            let s = server.address
            let ca = ["--tls-ca", pki.path("ca.pem")]
            let mine = ca + ["--tls-cert", pki.path("client.pem"), "--tls-key", pki.path("client.key")]
            var r = try await runMeridian(["query", "Note"] + ca, server: s)
            #expect(r.status == 3, "no client certificate: \(r)")
            r = try await runMeridian(
                ["insert", "Note", "id=n1", "title=hers", "ownerId=spiffe://meridian/alice"] + mine, server: s)
            #expect(r.status == 0, "\(r)")
            r = try await runMeridian(["insert", "Note", "id=n2", "title=forged", "ownerId=bob"] + mine, server: s)
            #expect(r.status == 4 && r.stderr.contains("rule: insert"), "\(r)")
            r = try await runMeridian(["query", "Note", "--format", "jsonl"] + mine, server: s)
            #expect(r.status == 0 && r.stdout.contains("\"n1\""), "\(r)")
        }
    }

    @Test("a renewed certificate is served to new connections without a restart")
    func reload() async throws {
        let pki = try PKI()
        try await withTestServer(arguments: [
            "--tls-cert", pki.path("server.pem"), "--tls-key", pki.path("server.key"), "--tls-reload-interval", "200ms",
        ]) { server in
            #expect(try await pki.servedSubject(server.address).contains("CN = one"))
            try pki.issue("server", commonName: "two", san: "IP:127.0.0.1")
            var subject = ""
            for _ in 0..<50 {
                subject = try await pki.servedSubject(server.address)
                if subject.contains("CN = two") { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(subject.contains("CN = two"), "\(subject)")
            let r = try await runMeridian(["health", "--tls-ca", pki.path("ca.pem")], server: server.address)
            #expect(r.status == 0, "\(r)")
        }
    }

    @Test("bad TLS arguments exit 2")
    func refusals() async throws {
        let pki = try PKI()
        for (arguments, message) in [
            (["--tls-cert", pki.path("server.pem")], "--tls-cert and --tls-key go together"),
            (
                [
                    "--tls-cert", pki.path("server.pem"), "--tls-key", pki.path("server.key"), "--tls-client-auth",
                    "optional",
                ],
                "optional is not supported yet"
            ),
            (
                [
                    "--tls-cert", pki.path("server.pem"), "--tls-key", pki.path("server.key"), "--tls-client-auth",
                    "require",
                ],
                "needs --tls-client-ca"
            ),
            (["--auth", "mtls"], "--auth mtls needs --tls-client-auth require"),
            (["--tls-cert", pki.path("ca.key"), "--tls-key", pki.path("server.key")], pki.path("ca.key")),
        ] {
            let child = try ChildProcess(
                product("meridian-server"),
                ["--in-memory", "--schema", repositoryRoot + "/Schemas/demo.yaml", "--listen", "127.0.0.1:0"]
                    + arguments)
            let status = await child.waitForExit()
            // All of it: the exit can be seen before the last message is read from the pipe.
            let errors = await child.allErrorOutput()
            #expect(status == 2, "\(arguments): \(errors)")
            #expect(errors.contains(message), "\(arguments): \(errors)")
        }
    }
}

extension Process {
    /// Waits (at most 30 s) for a short-lived process and returns its exit status, -1 if it never ended; polls rather
    /// than `waitUntilExit()` (see ``ChildProcess/waitForExit(timeout:)``).
    func exitStatusPolling() -> Int32 {
        for _ in 0..<15_000 where self.isRunning { usleep(2_000) }
        return self.isRunning ? -1 : self.terminationStatus
    }
}
