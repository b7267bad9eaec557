// One validation: the same invalid writes get the same code and message from the client library (before anything is
// shown), from the server (Apply), and from the CLI (which passes the server's message on, exit 4).

import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import MeridianClient
import MeridianCore
import MeridianProto
import Testing

@Suite("One write validation", .timeLimit(.minutes(3)))
struct WriteValidationAgreementTests {
    /// An invalid write: what it writes, the code every layer answers with, and the message.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var operation: WriteOperation
        var code: String
        var message: String
        /// The `meridian apply` line that writes it, when the CLI can express it.
        var applyLine: String?
        var testDescription: String { self.name }
    }

    static let cases: [Case] = [
        Case(
            name: "NUL in a string",
            operation: WriteOperation(kind: .insert, entity: "Point", id: "n1", values: ["title": "a\u{0}b"]),
            code: "validation",
            message:
                "operation 0 (insert Point 'n1'): attribute 'title' contains a NUL character (U+0000), which strings may not hold",
            applyLine: #"{"op": "insert", "entity": "Point", "id": "n1", "values": {"title": "a\u0000b"}}"#),
        Case(
            name: "NUL in an id",
            operation: WriteOperation(kind: .insert, entity: "Point", id: "n\u{0}1", values: ["title": "A"]),
            code: "validation",
            message:
                "operation 0 (insert Point 'n\u{0}1'): the id contains a NUL character (U+0000), which ids may not hold",
            applyLine: #"{"op": "insert", "entity": "Point", "id": "n\u00001", "values": {"title": "A"}}"#),
        Case(
            name: "an id not in normalization form C",
            operation: WriteOperation(kind: .insert, entity: "Point", id: "cafe\u{301}", values: ["title": "A"]),
            code: "validation",
            message:
                "operation 0 (insert Point 'cafe\u{301}'): the id is not in Unicode normalization form C (NFC): Swift compares strings by canonical equivalence, so ids that differ only in normalization would be one row to every client; write its NFC form",
            applyLine: #"{"op": "insert", "entity": "Point", "id": "cafe\u0301", "values": {"title": "A"}}"#),
        Case(
            name: "an empty id",
            operation: WriteOperation(kind: .update, entity: "Point", id: "", values: ["title": "A"]),
            // The CLI refuses an empty id itself, as bad input naming the line (exit 2, docs/cli.md).
            code: "validation", message: "operation 0 (update Point ''): the id is empty", applyLine: nil),
        Case(
            name: "an int a double cannot hold exactly",
            operation: WriteOperation(
                kind: .insert, entity: "Point", id: "n2",
                values: ["title": "A", "latitude": .int(9_007_199_254_740_993)]),
            code: "validation",
            message:
                "operation 0 (insert Point 'n2'): attribute 'latitude' is double, and 9007199254740993 is beyond what a "
                + "double holds exactly (±2^53); write it as a double if rounding is meant",
            applyLine: nil),
        Case(
            name: "null for a required attribute",
            operation: WriteOperation(kind: .update, entity: "Point", id: "p1", values: ["title": .null]),
            code: "validation",
            message: "operation 0 (update Point 'p1'): attribute 'title' is required and cannot be nil",
            applyLine: nil),
        Case(
            name: "a required attribute missing",
            operation: WriteOperation(kind: .insert, entity: "Point", id: "n3", values: ["category": 1]),
            code: "validation", message: "operation 0 (insert Point 'n3'): required attribute 'title' missing",
            applyLine: nil),
        Case(
            name: "a wrong type",
            operation: WriteOperation(kind: .insert, entity: "Point", id: "n4", values: ["title": 5]),
            code: "validation", message: "operation 0 (insert Point 'n4'): attribute 'title' is string, got int 5",
            applyLine: nil),
        Case(
            name: "an unknown attribute",
            operation: WriteOperation(kind: .insert, entity: "Point", id: "n5", values: ["title": "A", "colour": 1]),
            code: "unknownAttribute", message: "operation 0 (insert Point 'n5'): unknown attribute 'colour'",
            applyLine: nil),
        Case(
            name: "an unknown entity",
            operation: WriteOperation(kind: .insert, entity: "Planet", id: "n6", values: ["title": "A"]),
            code: "unknownEntity", message: "operation 0 (insert Planet 'n6'): unknown entity 'Planet'",
            applyLine: nil),
    ]

    @Test("the client, the server and the CLI refuse each invalid write with one code and one message")
    func agreement() async throws {
        let schema = try Schema.load(contentsOf: repositoryRoot + "/Schemas/demo.yaml")
        try await withTestServer { server in
            let address = try ServerAddress(parsing: server.address)
            try await withGRPCClient(transport: try address.transport()) { client in
                let stub = Meridian_V1_Meridian.Client(wrapping: client)
                for testCase in Self.cases {
                    let operation = testCase.operation

                    // The client: refused when staged, before any controller could show it.
                    let container = try await MeridianContainer(.init(server: server.address, schema: schema))
                    let context = container.context
                    let clientError = await #expect(throws: ClientError.self, "\(testCase.name)") {
                        switch operation.kind {
                        case .insert:
                            try await context.insert(into: operation.entity, id: operation.id, values: operation.values)
                        default:
                            try await context.update(operation.entity, id: operation.id!, values: operation.values)
                        }
                    }
                    #expect(clientError?.code.description == testCase.code, "\(testCase.name)")
                    #expect(clientError?.message == testCase.message, "\(testCase.name)")
                    #expect(await !context.hasChanges)

                    // The server.
                    var request = Meridian_V1_ApplyRequest()
                    request.operations = [Meridian_V1_Operation(operation)]
                    let response = try await stub.apply(request)
                    guard case .error(let detail) = response.outcome else {
                        Issue.record("\(testCase.name): the server accepted it")
                        continue
                    }
                    let serverCode: String =
                        switch detail.code {
                        case .validation: "validation"
                        case .unknownAttribute: "unknownAttribute"
                        case .unknownEntity: "unknownEntity"
                        default: "\(detail.code)"
                        }
                    #expect(serverCode == testCase.code, "\(testCase.name)")
                    #expect(detail.message == testCase.message, "\(testCase.name)")
                    #expect(detail.operationIndex == 0)

                    // The CLI, where a line of `meridian apply` can say it: the server's message after the line it
                    // names (docs/cli.md), exit 4.
                    if let line = testCase.applyLine {
                        let file = server.directory + "/case.jsonl"
                        try (line + "\n").write(toFile: file, atomically: true, encoding: .utf8)
                        let result = try await runMeridian(["apply", file], server: server.address)
                        #expect(result.status == 4, "\(testCase.name): \(result)")
                        #expect(
                            result.stderr == "error: line 1: \(testCase.message)\n", "\(testCase.name): \(result)")
                    }
                }
            }
        }
    }
}
