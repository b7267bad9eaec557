// MARK: - The meridian binary without a server: help, usage errors, an unreachable server

import Foundation
import Testing

@Suite(.timeLimit(.minutes(2))) struct BinaryContractTests {
    @Test("meridian --help lists every command")
    func help() async throws {
        let result = try await runMeridian(["--help"])
        #expect(result.status == 0)
        var expected = expectedRootHelp
        if !meridianCLIHasWatch {
            // watch and map are compiled in once MeridianClient is part of the package.
            expected = expected.split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !["watch", "map", "interrupted."].contains($0.split(separator: " ").first ?? "") }
                .joined(separator: "\n")
        }
        #expect(result.stdout.trimmingTrailingNewlines == expected.trimmingTrailingNewlines, "\(result.stdout)")
        #expect(result.stderr == "")
    }

    @Test("meridian query --help")
    func queryHelp() async throws {
        let result = try await runMeridian(["query", "--help"])
        #expect(result.status == 0)
        #expect(
            result.stdout.trimmingTrailingNewlines == expectedQueryHelp.trimmingTrailingNewlines, "\(result.stdout)")
    }

    @Test("an unreachable server exits 3 and says where it tried")
    func unreachable() async throws {
        let result = try await runMeridian(["query", "Point"], server: "127.0.0.1:1")
        #expect(result.status == 3)
        #expect(result.stdout == "")
        #expect(result.stderr.hasPrefix("error: cannot reach the server at 127.0.0.1:1"), "\(result)")
        let viaEnvironment = try await runMeridian(["schema"], environment: ["MERIDIAN_SERVER": "127.0.0.1:1"])
        #expect(viaEnvironment.status == 3)
        #expect(viaEnvironment.stderr.hasPrefix("error: cannot reach the server at 127.0.0.1:1"))
    }

    @Test(
        "usage errors exit 2 with the message",
        arguments: [
            (["query"], "Error: Missing expected argument '<entity>'"),
            (["nonsense"], "Error: Unexpected argument 'nonsense'"),
            (["query", "Point", "--limit", "0"], "Error: --limit must be at least 1"),
            (["query", "Point", "--format", "xml"], "Error: The value 'xml' is invalid for '--format <format>'"),
            (
                ["--server", "localhost", "schema"],
                "error: server address 'localhost': expected HOST:PORT, such as 127.0.0.1:7400"
            ),
            (["apply", "/nonexistent/ops.jsonl"], "error: cannot read '/nonexistent/ops.jsonl': "),
        ])
    func usage(arguments: [String], message: String) async throws {
        let result = try await runMeridian(arguments)
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.hasPrefix(message), "\(result)")
    }
}

let expectedRootHelp = """
    OVERVIEW: A client for a Meridian replication server.

    Every command talks to the server at --server HOST:PORT (default:
    $MERIDIAN_SERVER, else 127.0.0.1:7400). Values in key=value are parsed by the
    attribute's type in the served schema; key= sets null.

    The identity sent with every call: --token TOKEN, --token-file PATH, or
    $MERIDIAN_TOKEN.

    Exit status: 0 success; 2 usage or bad input; 3 server unreachable; 4 write
    rejected (conflict, validation, not found, not allowed by the rules); 5
    credentials refused (none, invalid or expired); 1 any other failure.

    USAGE: meridian <subcommand>

    OPTIONS:
      --version               Show the version.
      -h, --help              Show help information.

    SUBCOMMANDS:
      schema                  Print the served schema (as a schema file the server
                              can load).
      health                  Ask whether the server serves (grpc.health.v1): exit
                              0 when it does.
      insert                  Insert a row and print its id.
      update                  Change attributes of a row and print the commit seq.
      upsert                  Insert a row with this id, or update it if it exists;
                              print the commit seq.
      delete                  Delete a row and print the commit seq.
      apply                   Apply JSON lines as one transaction and print the
                              commit seq.
      query                   Fetch rows once.
      watch                   Show a live query: its rows, then every change, until
                              interrupted.
      map                     Show a live map of the rows' coordinates, until
                              interrupted.
      import                  Insert rows from a CSV or JSON-lines file, in chunked
                              transactions.
      export                  Write rows as CSV or JSON lines, for import.
      token                   Make development tokens (JWTs) for a server started
                              with --auth jwt.

      See 'meridian help <subcommand>' for detailed help.
    """

let expectedQueryHelp = """
    OVERVIEW: Fetch rows once.

    table prints an aligned table and a (N rows at seq S) line; jsonl prints one
    {"id":ID,"values":{…}} object per row, every attribute in schema order.

    USAGE: meridian query [--server <host:port>] [--token <token>] [--token-file <path>] [--tls-ca <path>] [--tls-cert <path>] [--tls-key <path>] <entity> [--where <predicate>] [--sort <keys>] [--limit <n>] [--format <format>]

    ARGUMENTS:
      <entity>                The entity.

    OPTIONS:
      --server <host:port>    The server's address (default: $MERIDIAN_SERVER, else
                              127.0.0.1:7400).
      --token <token>         The token (a JWT or an API key) sent as
                              'authorization: Bearer …' (default: $MERIDIAN_TOKEN).
      --token-file <path>     A file holding the token (read again before the token
                              it holds expires).
      --tls-ca <path>         Connect with TLS, verifying the server with these CA
                              certificates (PEM); https://HOST:PORT uses the
                              system's.
      --tls-cert <path>       A client certificate (PEM), for a server that
                              requires one.
      --tls-key <path>        The client certificate's private key (PEM).
      --where <predicate>     A predicate selecting rows (docs/predicates.md).
      --sort <keys>           Sort keys, comma-separated; -key for descending (the
                              id breaks ties).
      --limit <n>             At most this many rows (the first in sort order).
      --format <format>       Output format. (values: table, jsonl; default: table)
      --version               Show the version.
      -h, --help              Show help information.
    """

extension String {
    /// The string without its final line breaks.
    var trimmingTrailingNewlines: String {
        var s = self
        while s.last == "\n" { s.removeLast() }
        return s
    }
}

@Suite struct LiveCommandsPresenceTests {
    @Test("watch and map are compiled in as soon as the package has MeridianClient")
    func present() {
        let clientExists = FileManager.default.fileExists(atPath: repositoryRoot + "/Sources/MeridianClient")
        #expect(
            meridianCLIHasWatch == clientExists,
            "add \"MeridianClient\" to the dependencies of the MeridianCLI target in Package.swift")
    }
}
