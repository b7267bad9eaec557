// MARK: - Identities through the binaries: meridian-server --auth, meridian token issue, --token, exit statuses

import Foundation
import Testing

@Suite(.timeLimit(.minutes(3)))
struct SecurityCommandTests {
    static let schema = """
        version: 1
        auth:
          claims: { sub: string, team: int }
        entities:
          Note:
            id: client
            attributes:
              title: string
              ownerId: string
              team: int
            rules:
              read:   team == @team AND ownerId == @sub
              insert: ownerId == @sub AND team == @team
              delete: ownerId == @sub
        """

    /// A directory with the rules schema and an HS256 secret.
    final class Files: Sendable {
        let directory: String
        var schema: String { self.directory + "/notes.yaml" }
        var secret: String { self.directory + "/hs256.secret" }

        init() throws {
            self.directory = NSTemporaryDirectory() + "meridian-security-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
            try SecurityCommandTests.schema.write(toFile: self.schema, atomically: true, encoding: .utf8)
            try (String(repeating: "z", count: 40) + "\n").write(toFile: self.secret, atomically: true, encoding: .utf8)
        }

        deinit { try? FileManager.default.removeItem(atPath: self.directory) }
    }

    @Test(
        "tokens from meridian token issue: --token, --token-file and MERIDIAN_TOKEN; exit 5 without, 4 when the rules refuse"
    )
    func tokens() async throws {
        let files = try Files()
        let issue = { (subject: String) async throws -> String in
            let r = try await runMeridian([
                "token", "issue", "--key", files.secret, "--sub", subject, "--claim", "team=7", "--ttl", "10m",
            ])
            #expect(r.status == 0, "\(r)")
            return r.stdout.trimmingTrailingNewlines
        }
        let alice = try await issue("alice")
        let bob = try await issue("bob")
        #expect(alice.split(separator: ".").count == 3)
        let bobFile = files.directory + "/bob.token"
        try (bob + "\n").write(toFile: bobFile, atomically: true, encoding: .utf8)
        let audit = files.directory + "/audit.jsonl"
        try await withTestServer(
            schema: files.schema, arguments: ["--auth", "jwt", "--jwt-key", files.secret, "--audit-log", audit]
        ) {
            server in
            let s = server.address
            var r = try await runMeridian(["query", "Note"], server: s)
            #expect(r.status == 5, "\(r)")
            #expect(r.stderr.hasPrefix("error: the call carries no credentials"), "\(r)")
            r = try await runMeridian(["query", "Note", "--token", "not.a.token"], server: s)
            #expect(r.status == 5 && r.stderr.hasPrefix("error: the credentials are not valid"), "\(r)")
            r = try await runMeridian(
                ["insert", "Note", "id=a1", "title=hers", "ownerId=alice", "team=7", "--token", alice], server: s)
            #expect(r.status == 0 && r.stdout == "a1\n", "\(r)")
            r = try await runMeridian(
                ["insert", "Note", "id=b1", "title=his", "ownerId=bob", "team=7", "--token-file", bobFile], server: s)
            #expect(r.status == 0, "\(r)")
            r = try await runMeridian(
                ["insert", "Note", "id=x1", "title=forged", "ownerId=alice", "team=7", "--token-file", bobFile],
                server: s)
            #expect(r.status == 4, "\(r)")
            #expect(r.stderr.contains("rule: insert"), "\(r)")
            r = try await runMeridian(
                ["query", "Note", "--format", "jsonl"], server: s, environment: ["MERIDIAN_TOKEN": alice])
            #expect(r.status == 0 && r.stdout.contains("\"a1\"") && !r.stdout.contains("\"b1\""), "\(r)")
            r = try await runMeridian(["delete", "Note", "a1", "--token-file", bobFile], server: s)
            #expect(r.status == 4 && r.stderr.contains("no such row"), "\(r)")
            r = try await runMeridian(["query", "Note", "--token", alice, "--token-file", bobFile], server: s)
            #expect(r.status == 2, "\(r)")
            // Revoked from another process: refused within about a second.
            let revoke = try ChildProcess(
                product("meridian-server"), ["revoke", "--db", server.directory + "/store.sqlite", "--sub", "bob"])
            #expect(await revoke.waitForExit() == 0, "\(revoke.errorOutput)")
            #expect(await revoke.allOutput() == "revoked bob\n")
            var refused = false
            for _ in 0..<40 where !refused {
                r = try await runMeridian(["query", "Note", "--token-file", bobFile], server: s)
                refused = r.status == 5
                if !refused { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(refused, "\(r)")
            r = try await runMeridian(["query", "Note", "--token", alice], server: s)
            #expect(r.status == 0, "\(r)")
            // Who wrote what, read from the served file: the two inserts, each with its author; the denied one is
            // not there.
            let log = try ChildProcess(
                product("meridian-server"),
                ["log", "--db", server.directory + "/store.sqlite", "--format", "jsonl"])
            #expect(await log.waitForExit() == 0, "\(log.errorOutput)")
            let entries = try await log.allOutput().split(separator: "\n").map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            }
            #expect(
                entries.map { "\($0["author"] ?? "")/\($0["kind"] ?? "")/\($0["id"] ?? "")" } == [
                    "alice/insert/a1", "bob/insert/b1",
                ])
            let bobs = try ChildProcess(
                product("meridian-server"), ["log", "--db", server.directory + "/store.sqlite", "--sub", "bob"])
            #expect(await bobs.waitForExit() == 0, "\(bobs.errorOutput)")
            let line = await bobs.allOutput()
            #expect(line.hasSuffix(" bob insert Note b1 v1\n") && line.split(separator: "\n").count == 1, "\(line)")
        }
        // The audit log: one JSON object per line, every kind of event above, and never a credential.
        let text = try String(contentsOfFile: audit, encoding: .utf8)
        #expect(!text.contains(alice) && !text.contains(bob) && !text.contains(alice.split(separator: ".")[2]))
        let events = try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
        func has(_ event: String, _ fields: [String: String]) -> Bool {
            events.contains { object in
                object["event"] as? String == event
                    && fields.allSatisfy { key, value in "\(object[key] ?? "")" == value }
            }
        }
        #expect(has("authentication_refused", ["rpc": "GetSchema"]), "\(text)")
        #expect(has("authenticated", ["sub": "alice", "method": "jwt"]), "\(text)")
        #expect(has("apply", ["sub": "alice", "operations": "1"]), "\(text)")
        #expect(has("apply_denied", ["sub": "bob", "operation": "0"]), "\(text)")
        #expect(has("revocation", ["sub": "bob"]), "\(text)")
        #expect(has("authentication_refused", ["reason": "revoked (bob)"]), "\(text)")
        #expect(events.allSatisfy { ($0["time"] as? String)?.hasSuffix("Z") == true })
    }

    @Test("token issue refuses a bad key, --ttl or --claim with exit 2")
    func issueErrors() async throws {
        let files = try Files()
        let short = files.directory + "/short.secret"
        try "short".write(toFile: short, atomically: true, encoding: .utf8)
        for arguments in [
            ["--key", short, "--sub", "a"],
            ["--key", files.directory + "/missing", "--sub", "a"],
            ["--key", files.secret, "--sub", "a", "--ttl", "forever"],
            ["--key", files.secret, "--sub", "a", "--claim", "team"],
            ["--key", files.secret, "--sub", "a", "--claim", "exp=1"],
        ] {
            let r = try await runMeridian(["token", "issue"] + arguments)
            #expect(r.status == 2, "\(arguments): \(r)")
            #expect(r.stderr.hasPrefix("error: ") && r.stdout.isEmpty, "\(arguments): \(r)")
        }
    }

    @Test("meridian-server refuses --auth none with rules, on a public address, and jwt without a key: exit 2")
    func serverRefusals() async throws {
        let files = try Files()
        for (arguments, message) in [
            (["--in-memory", "--schema", files.schema, "--listen", "127.0.0.1:0"], "the schema has rules"),
            (
                ["--in-memory", "--schema", repositoryRoot + "/Schemas/demo.yaml", "--listen", "0.0.0.0:0"],
                "not a loopback address"
            ),
            (
                ["--in-memory", "--schema", files.schema, "--listen", "127.0.0.1:0", "--auth", "jwt"],
                "--auth jwt needs --jwt-key"
            ),
            (
                [
                    "--in-memory", "--schema", files.schema, "--listen", "127.0.0.1:0", "--auth", "jwt", "--jwt-key",
                    files.directory + "/nothing-here",
                ], "cannot read the key file"
            ),
            (["revoke", "--db", files.directory + "/missing.sqlite", "--sub", "bob"], "there is no store file"),
            (["revoke", "--db", files.directory + "/missing.sqlite"], "give --sub ID or --token-id ID"),
            (["log", "--db", files.directory + "/missing.sqlite"], "there is no store file"),
            (["log", "--db", files.schema, "--limit", "0"], "--limit must be at least 1"),
            (["log", "--db", files.schema], "cannot read the change log of"),
        ] {
            let child = try ChildProcess(product("meridian-server"), arguments)
            let status = await child.waitForExit()
            // All of it: the exit can be seen before the last message is read from the pipe.
            let errors = await child.allErrorOutput()
            #expect(status == 2, "\(arguments): \(errors)")
            #expect(errors.contains(message), "\(arguments): \(errors)")
        }
    }
}
