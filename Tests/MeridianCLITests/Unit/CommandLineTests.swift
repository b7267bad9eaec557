// MARK: - Exit statuses, addresses, predicate diagnostics, schema output

import ArgumentParser
import GRPCCore
import MeridianClient
import MeridianCore
import MeridianProto
import Testing

@testable import MeridianCLI

@Suite struct ExitStatusTests {
    @Test("the statuses are the contract's numbers")
    func numbers() {
        #expect(CLIError.Status.failure.code == 1)
        #expect(CLIError.Status.badInput.code == 2)
        #expect(CLIError.Status.unreachable.code == 3)
        #expect(CLIError.Status.rejected.code == 4)
    }

    @Test(
        "a rejected transaction exits 4, a request the server cannot understand 2, a server going away 3",
        arguments: [
            (Meridian_V1_ErrorDetail.Code.validation, CLIError.Status.rejected),
            (.conflict, .rejected), (.notFound, .rejected), (.alreadyExists, .rejected), (.schemaMismatch, .rejected),
            (.badPredicate, .badInput), (.unknownEntity, .badInput), (.unknownAttribute, .badInput),
            (.malformedRequest, .badInput), (.limitExceeded, .badInput), (.shuttingDown, .unreachable),
            (.unavailable, .unreachable), (.internal, .failure),
            (.unspecified, .failure),
        ])
    func details(code: Meridian_V1_ErrorDetail.Code, status: CLIError.Status) {
        let mapped = ServerConnection.map(RPCError(Meridian_V1_ErrorDetail(code, "m")), address: .default)
        #expect(mapped.status == status)
        #expect(mapped.message == "m")
    }

    @Test(
        "gRPC statuses without a Meridian detail",
        arguments: [
            (RPCError.Code.unavailable, CLIError.Status.unreachable), (.deadlineExceeded, .unreachable),
            (.invalidArgument, .badInput), (.aborted, .rejected), (.internalError, .failure), (.unknown, .failure),
        ])
    func statuses(code: RPCError.Code, status: CLIError.Status) {
        #expect(ServerConnection.map(RPCError(code: code, message: "m"), address: .default).status == status)
    }

    @Test("a detail in the trailers wins over the status code")
    func trailers() {
        let error = RPCError(Meridian_V1_ErrorDetail(.conflict, "changed", currentVersion: 7))
        let mapped = ServerConnection.map(error, address: .default)
        #expect(mapped.status == .rejected)
        #expect(mapped.message == "changed (the row is now at version 7)")
    }

    @Test("usage errors exit 2, help exits 0, an unreachable server exits 3")
    func inProcess() async {
        #expect(await MeridianCommand.run(arguments: ["--help"]) == 0)
        #expect(await MeridianCommand.run(arguments: ["query"]) == 2)
        #expect(await MeridianCommand.run(arguments: ["frobnicate"]) == 2)
        #expect(await MeridianCommand.run(arguments: ["query", "Point", "--limit", "0"]) == 2)
        #expect(await MeridianCommand.run(arguments: ["query", "Point", "--format", "xml"]) == 2)
        #expect(await MeridianCommand.run(arguments: ["schema", "--server", "nonsense"]) == 2)
        #expect(await MeridianCommand.run(arguments: ["schema", "--server", "127.0.0.1:1"]) == 3)
    }

    @Test("--server before the subcommand is moved after it")
    func hoisting() {
        #expect(
            MeridianCommand.hoistingGlobalOptions(["--server", "h:1", "query", "Point"])
                == ["query", "--server", "h:1", "Point"])
        #expect(MeridianCommand.hoistingGlobalOptions(["--server=h:1", "schema"]) == ["schema", "--server=h:1"])
        #expect(MeridianCommand.hoistingGlobalOptions(["query", "--server", "h:1"]) == ["query", "--server", "h:1"])
        #expect(MeridianCommand.hoistingGlobalOptions(["--help"]) == ["--help"])
    }
}

@Suite struct ServerAddressTests {
    @Test("IPv4, bracketed IPv6 and DNS hosts")
    func parses() throws {
        #expect(try ServerAddress(parsing: "127.0.0.1:7400") == .default)
        #expect(try ServerAddress(parsing: "[::1]:80").host == "::1")
        #expect(try ServerAddress(parsing: "localhost:9").host == "localhost")
        #expect(try ServerAddress(parsing: "[::1]:80").description == "[::1]:80")
        #expect(try ServerAddress(parsing: "db.example.com:7400").description == "db.example.com:7400")
    }

    @Test(
        "malformed addresses are bad input",
        arguments: ["7400", "host:", "host:0", "host:70000", ":80", "::1:80", "[]:80"])
    func rejects(text: String) throws {
        let error = try #require(throws: CLIError.self) { try ConnectionOptions.parse(text) }
        #expect(error.message.hasPrefix("server address '\(text)': "))
    }
}

@Suite struct PredicateDiagnosticTests {
    @Test("a bad predicate shows the text with a caret under the position")
    func caret() throws {
        let options = try FetchOptions.parse(["--where", "title BEGINSWITH 3"])
        do {
            _ = try options.fetchRequest(for: point)
            Issue.record("no error")
        } catch {
            #expect(error.status == .badInput)
            let lines = error.message.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == 3)
            #expect(lines[0].hasPrefix("--where: typeMismatch at position 17: "))
            #expect(lines[1] == "title BEGINSWITH 3")
            #expect(lines[2] == "                 ^")
        }
    }

    @Test("a syntax error and an unknown attribute point at their text")
    func more() throws {
        for (text, caret) in [("category == ", "            ^"), ("titel == \"x\"", "^^^^^")] {
            let options = try FetchOptions.parse(["--where", text])
            do {
                _ = try options.fetchRequest(for: point)
                Issue.record("no error for \(text)")
            } catch {
                #expect(error.message.hasSuffix("\n" + text + "\n" + caret), "\(error.message)")
            }
        }
    }

    @Test("a bad sort key points at the key")
    func sort() throws {
        let options = try FetchOptions.parse(["--sort", "title, -colour"])
        do {
            _ = try options.fetchRequest(for: point)
            Issue.record("no error")
        } catch {
            #expect(error.message.hasPrefix("--sort: unknownAttribute at position 8: unknown sort key 'colour'"))
            #expect(error.message.hasSuffix("\ntitle, -colour\n        ^^^^^^"))
        }
    }

    @Test("a good request goes on the wire as given")
    func wire() throws {
        let options = try FetchOptions.parse(["--where", "category >= 2", "--sort", "-category,title"])
        let request = try options.fetchRequest(for: point, sectionKey: "category", limit: 5)
        #expect(request.entity == "Point")
        #expect(request.predicateText == "category >= 2")
        #expect(request.order.descriptors.map { $0.attribute } == ["category", "title"])
        #expect(request.order.descriptors.map { $0.ascending } == [false, true])
        #expect(request.sectionKey == "category")
        #expect(request.limit == 5)
    }
}

@Suite struct SchemaRenderingTests {
    @Test("the YAML and JSON output load back as the same schema")
    func roundTrip() throws {
        for schema in [demoSchema, allTypesSchema] {
            let yaml = SchemaRendering.yaml(schema, fingerprint: schema.fingerprint)
            #expect(try Schema.parse(yaml: yaml) == schema, "\(yaml)")
            let json = SchemaRendering.json(schema)
            #expect(try Schema.parse(yaml: json) == schema, "\(json)")
        }
    }

    @Test("YAML output of the demo schema")
    func yaml() {
        let text = SchemaRendering.yaml(demoSchema, fingerprint: "f")
        #expect(text.hasPrefix("# fingerprint f\nversion: 1\nentities:\n  Point:\n    id: auto\n    attributes:\n"))
        #expect(text.contains("      category: { type: int, default: 0 }\n"))
        #expect(text.contains("      coordinate: { coordinate: [latitude, longitude] }"))
    }
}
