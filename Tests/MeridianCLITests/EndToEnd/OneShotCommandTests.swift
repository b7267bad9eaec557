// MARK: - One-shot commands against a real server

import Foundation
import MeridianCore
import Testing

@testable import MeridianCLI

@Suite(.timeLimit(.minutes(3)))
struct OneShotCommandTests {
    @Test("insert, query, update, upsert, delete: outputs and exit codes")
    func writesAndQueries() async throws {
        try await withTestServer { server in
            let s = server.address
            var r = try await runMeridian(
                ["insert", "Point", "id=p1", "title=Café Aurora", "category=2", "latitude=38.711", "longitude=-9.139"],
                server: s)
            #expect(r.status == 0 && r.stdout == "p1\n", "\(r)")
            r = try await runMeridian(["insert", "Point", "title=Bar Lusitano"], server: s)
            #expect(r.status == 0, "\(r)")
            let generated = r.stdout.trimmingTrailingNewlines
            #expect(!generated.isEmpty && !generated.contains(" "))
            // Also with the option before the subcommand.
            r = try await runMeridian(["--server", s, "upsert", "Point", "p3", "title=Miradouro", "category=5"])
            #expect(r.status == 0 && Int(r.stdout.trimmingTrailingNewlines) == 3, "\(r)")

            r = try await runMeridian(["query", "Point", "--sort", "-category,title", "--format", "jsonl"], server: s)
            #expect(r.status == 0, "\(r)")
            #expect(
                r.stdout == """
                    {"id":"p3","values":{"title":"Miradouro","category":5,"latitude":null,"longitude":null,"updatedAt":null}}
                    {"id":"p1","values":{"title":"Café Aurora","category":2,"latitude":38.711,"longitude":-9.139,"updatedAt":null}}
                    {"id":"\(generated)","values":{"title":"Bar Lusitano","category":0,"latitude":null,"longitude":null,"updatedAt":null}}

                    """)

            r = try await runMeridian(["query", "Point", "--where", "category >= 2", "--sort", "title"], server: s)
            #expect(
                r.stdout == """
                    id  title        category  latitude  longitude  updatedAt
                    --  -----------  --------  --------  ---------  ---------
                    p1  Café Aurora         2    38.711     -9.139
                    p3  Miradouro           5
                    (2 rows at seq 3)

                    """, "\(r)")

            r = try await runMeridian(["update", "Point", "p1", "title=Café Aurora II", "latitude="], server: s)
            #expect(r.status == 0 && r.stdout == "4\n", "\(r)")
            r = try await runMeridian(["query", "Point", "--where", "id == \"p1\"", "--format", "jsonl"], server: s)
            #expect(
                r.stdout
                    == #"{"id":"p1","values":{"title":"Café Aurora II","category":2,"latitude":null,"longitude":-9.139,"updatedAt":null}}"#
                    + "\n")
            r = try await runMeridian(
                ["query", "Point", "--limit", "1", "--sort", "title", "--format", "jsonl"], server: s)
            #expect(r.stdout.hasPrefix(#"{"id":"\#(generated)","#), "\(r)")

            r = try await runMeridian(["delete", "Point", "p3"], server: s)
            #expect(r.status == 0 && r.stdout == "5\n", "\(r)")
        }
    }

    @Test("rejected writes exit 4 with the server's message")
    func rejected() async throws {
        try await withTestServer { server in
            let s = server.address
            _ = try await runMeridian(["insert", "Point", "id=p1", "title=A"], server: s)
            _ = try await runMeridian(["update", "Point", "p1", "title=B"], server: s)

            var r = try await runMeridian(["update", "Point", "p1", "title=C", "--expect-version", "1"], server: s)
            #expect(r.status == 4 && r.stdout == "", "\(r)")
            #expect(r.stderr.hasPrefix("error: ") && r.stderr.contains("version 2"), "\(r)")

            r = try await runMeridian(["delete", "Point", "nope"], server: s)
            #expect(r.status == 4, "\(r)")
            #expect(r.stderr.hasPrefix("error: ") && r.stderr.contains("nope"), "\(r)")

            r = try await runMeridian(["insert", "Point", "category=1"], server: s)
            #expect(r.status == 4, "\(r)")
            #expect(r.stderr.hasPrefix("error: ") && r.stderr.contains("title"), "\(r)")

            r = try await runMeridian(["insert", "Point", "id=p1", "title=again"], server: s)
            #expect(r.status == 4, "\(r)")

            r = try await runMeridian(["insert", "Author", "firstName=Ada", "lastName=Lovelace"], server: s)
            #expect(r.status == 4, "an Author needs a client-chosen id: \(r)")
        }
    }

    @Test("bad input exits 2: values, entities, predicates with a caret, sort keys")
    func badInput() async throws {
        try await withTestServer { server in
            let s = server.address
            var r = try await runMeridian(["insert", "Point", "title=x", "category=abc"], server: s)
            #expect(r.status == 2)
            #expect(
                r.stderr
                    == "error: argument 'category=abc': \"abc\" is not an int (expected a whole number such as 42)\n")

            r = try await runMeridian(["query", "Pont"], server: s)
            #expect(r.status == 2)
            #expect(
                r.stderr
                    == "error: unknown entity 'Pont' (did you mean 'Point'?); the entities are Point, FamilyMember, Author\n"
            )

            r = try await runMeridian(["query", "Point", "--where", "title BEGINSWITH 3"], server: s)
            #expect(r.status == 2 && r.stdout == "")
            let lines = r.stderr.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == 4, "\(r)")
            #expect(lines[0].hasPrefix("error: --where: typeMismatch at position 17: "), "\(r)")
            #expect(lines[1] == "title BEGINSWITH 3")
            #expect(lines[2] == "                 ^")

            r = try await runMeridian(["export", "Point", "--where", "category == ", "--format", "jsonl"], server: s)
            #expect(r.status == 2)
            #expect(r.stderr.hasSuffix("\ncategory == \n            ^\n"), "\(r)")

            r = try await runMeridian(["query", "Point", "--sort", "title,-nope"], server: s)
            #expect(r.status == 2)
            #expect(r.stderr.hasSuffix("\ntitle,-nope\n       ^^^^\n"), "\(r)")
        }
    }

    @Test("apply: one transaction from JSON lines; errors name the line")
    func apply() async throws {
        try await withTestServer { server in
            let s = server.address
            let script = """
                {"op":"insert","entity":"Point","id":"a","values":{"title":"A","category":1}}
                {"op":"insert","entity":"Point","id":"b","values":{"title":"B","latitude":38.7,"longitude":-9.1}}
                {"op":"upsert","entity":"Author","id":"ada","values":{"firstName":"Ada","lastName":"Lovelace"}}

                """
            var r = try await runMeridian(["apply", "-"], server: s, stdin: script)
            #expect(r.status == 0 && r.stdout == "3\n", "seq counts row changes: \(r)")

            r = try await runMeridian(
                ["apply", "-"], server: s,
                stdin: #"{"op":"delete","entity":"Point","id":"a"}"# + "\n" + #"{"op":"update","entity":"Point"}"#)
            #expect(r.status == 2)
            #expect(r.stderr == "error: line 2: update needs an \"id\"\n")

            // The second operation is rejected: nothing is written, and the error names its line.
            r = try await runMeridian(
                ["apply", "-"], server: s,
                stdin: #"{"op":"delete","entity":"Point","id":"a"}"# + "\n\n"
                    + #"{"op":"update","entity":"Point","id":"zz","values":{"title":"x"}}"#)
            #expect(r.status == 4, "\(r)")
            #expect(r.stderr.hasPrefix("error: line 3: "), "\(r)")
            r = try await runMeridian(["query", "Point", "--format", "jsonl"], server: s)
            #expect(r.stdout.split(separator: "\n").count == 2)

            let file = server.directory + "/ops.jsonl"
            try #"{"op":"delete","entity":"Point","id":"a"}"#.write(toFile: file, atomically: true, encoding: .utf8)
            r = try await runMeridian(["apply", file], server: s)
            #expect(r.status == 0 && r.stdout == "4\n", "\(r)")
        }
    }

    @Test("import CSV and JSON lines; export round-trips")
    func importExport() async throws {
        try await withTestServer { server in
            let s = server.address
            let csv = server.directory + "/points.csv"
            try #"""
            id,title,category,latitude,longitude
            p1,"Café, ""Aurora""",2,38.711,-9.139
            p2,"",0,,
            p3,Miradouro,5,38.72,-9.13

            """#.write(toFile: csv, atomically: true, encoding: .utf8)
            var r = try await runMeridian(["import", "Point", csv, "--batch-size", "2"], server: s)
            #expect(r.status == 0, "\(r)")
            #expect(r.stdout == "imported 3 rows into Point in 2 transactions (last seq 3)\n")
            #expect(r.stderr == "", "no progress bar without a terminal")

            r = try await runMeridian(["export", "Point"], server: s)
            let exported = r.stdout
            #expect(
                exported == #"""
                    id,title,category,latitude,longitude,updatedAt
                    p1,"Café, ""Aurora""",2,38.711,-9.139,
                    p2,"",0,,,
                    p3,Miradouro,5,38.72,-9.13,

                    """#, "\(r)")
            r = try await runMeridian(["export", "Point", "--format", "jsonl", "--where", "category > 0"], server: s)
            let jsonl = r.stdout
            #expect(jsonl.split(separator: "\n").count == 2)

            // Into a fresh server: the CSV export imports back to the same export.
            try await withTestServer { other in
                let file = other.directory + "/export.csv"
                try exported.write(toFile: file, atomically: true, encoding: .utf8)
                var r = try await runMeridian(["import", "Point", file], server: other.address)
                #expect(r.status == 0, "\(r)")
                r = try await runMeridian(["export", "Point"], server: other.address)
                #expect(r.stdout == exported)
                r = try await runMeridian(
                    ["import", "Point", "-", "--format", "jsonl", "--upsert"], server: other.address, stdin: jsonl)
                #expect(r.stdout == "imported 2 rows into Point in 1 transaction (last seq 5)\n", "\(r)")
            }

            // A row the server rejects names its line and what was committed before it.
            let bad = server.directory + "/bad.csv"
            try "id,title\nq1,x\np1,taken\n".write(toFile: bad, atomically: true, encoding: .utf8)
            r = try await runMeridian(["import", "Point", bad, "--batch-size", "1"], server: s)
            #expect(r.status == 4, "\(r)")
            #expect(r.stderr.hasPrefix("error: line 3: "), "\(r)")
            #expect(r.stderr.hasSuffix("; the 1 row before its transaction was imported (seq 4)\n"), "\(r)")

            // Pipelined: transactions sent before the rejection was known may commit after it; the message names
            // them, and the store holds exactly what it says. One at a time (--in-flight 1), nothing after it.
            let later = server.directory + "/later.csv"
            try "id,title\nr1,x\np1,taken\nr3,y\nr4,z\n".write(toFile: later, atomically: true, encoding: .utf8)
            r = try await runMeridian(["import", "Point", later, "--batch-size", "1"], server: s)
            #expect(r.status == 4, "\(r)")
            #expect(r.stderr.hasPrefix("error: line 3: "), "\(r)")
            // "… the 2 rows of lines 4, 5, sent before the rejection was known, were imported": lines 4 and 5 are r3, r4.
            let named = r.stderr.firstMatch(of: /of lines? ([0-9, ]+), sent before the rejection was known/)
            let lines =
                named.map {
                    $0.output.1.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
                } ?? []
            let claimed = Set(lines.map { "r\($0 - 1)" })
            r = try await runMeridian(
                ["query", "Point", "--where", #"id BEGINSWITH "r""#, "--format", "jsonl"], server: s)
            let stored = Set(r.stdout.matches(of: /"id":"(r\d)"/).map { String($0.output.1) })
            #expect(stored == Set(["r1"]).union(claimed), "stored \(stored), claimed \(claimed)")
            let single = server.directory + "/single.csv"
            try "id,title\ns1,x\np1,taken\ns3,y\n".write(toFile: single, atomically: true, encoding: .utf8)
            r = try await runMeridian(["import", "Point", single, "--batch-size", "1", "--in-flight", "1"], server: s)
            #expect(r.status == 4, "\(r)")
            #expect(
                r.stderr.hasSuffix("; the 1 row before its transaction was imported (seq \(4 + 1 + stored.count))\n"),
                "\(r)"
            )
            r = try await runMeridian(
                ["query", "Point", "--where", #"id BEGINSWITH "s""#, "--format", "jsonl"], server: s)
            #expect(r.stdout.split(separator: "\n").count == 1, "only s1: \(r)")
            r = try await runMeridian(["import", "Point", single, "--in-flight", "0"], server: s)
            #expect(r.status == 2 && r.stderr.contains("--in-flight must be at least 1"), "\(r)")

            // A malformed line, even the last, stops the import before its first row is sent.
            let malformed = server.directory + "/malformed.csv"
            try "id,title\nm1,x\nm2,y\nm3,\"open\n".write(toFile: malformed, atomically: true, encoding: .utf8)
            r = try await runMeridian(["import", "Point", malformed, "--batch-size", "1"], server: s)
            #expect(r.status == 2, "\(r)")
            #expect(r.stderr == "error: line 4: unterminated quoted field\n", "\(r)")
            r = try await runMeridian(
                ["query", "Point", "--where", #"id BEGINSWITH "m""#, "--format", "jsonl"], server: s)
            #expect(r.status == 0 && r.stdout.isEmpty, "nothing imported: \(r)")
        }
    }

    @Test("schema prints a schema file equal to the served one")
    func schema() async throws {
        try await withTestServer { server in
            var r = try await runMeridian(["schema"], server: server.address)
            #expect(r.status == 0)
            #expect(r.stdout.hasPrefix("# fingerprint \(demoSchema.fingerprint)\n"), "\(r)")
            #expect(try Schema.parse(yaml: r.stdout) == demoSchema)
            r = try await runMeridian(["schema", "--format", "json"], server: server.address)
            #expect(try Schema.parse(yaml: r.stdout) == demoSchema)
        }
    }
}
