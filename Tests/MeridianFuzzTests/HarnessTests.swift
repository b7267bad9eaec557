// The harness itself: each judge flags what it must (an unclear status, a hang, an unlocated error, a crash exit),
// against hand-made outcomes, a deliberately broken gRPC server and deliberately broken `meridian` binaries.

import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import MeridianCore
import MeridianProto
import Testing

@testable import MeridianFuzz

@Suite("Fuzz harness", .timeLimit(.minutes(5)))
struct HarnessTests {
    // MARK: - Wire judges

    @Test(
        "a status is clear only with a protocol code, a message and a detail that is not INTERNAL",
        arguments: [
            (RPCError(code: .invalidArgument, message: "bad"), true),
            (RPCError(Meridian_V1_ErrorDetail(.malformedRequest, "no Hello")), true),
            (RPCError(code: .internalError, message: "boom"), false),
            (RPCError(code: .unknown, message: "Service method threw an unknown error."), false),
            (RPCError(code: .invalidArgument, message: ""), false),
            (RPCError(Meridian_V1_ErrorDetail(.internal, "store exploded")), false),
            (RPCError(code: .deadlineExceeded, message: "timed out"), false),
            (RPCError(code: .unavailable, message: "Stream unexpectedly closed."), false),
        ])
    func statusJudge(error: RPCError, clear: Bool) {
        if case .acceptable = WireExecutor<HTTP2ClientTransport.Posix>.judge(error) {
            #expect(clear, "\(error) passed as clear")
        } else {
            #expect(!clear, "\(error) flagged")
        }
    }

    @Test("an Apply answer with an INTERNAL, empty or missing outcome is flagged")
    func applyJudge() {
        var response = Meridian_V1_ApplyResponse()
        #expect(WireExecutor<HTTP2ClientTransport.Posix>.judge(response) != .acceptable("answered Apply committed"))
        response.error = Meridian_V1_ErrorDetail(.internal, "the transaction failed: disk I/O error")
        guard case .failure = WireExecutor<HTTP2ClientTransport.Posix>.judge(response) else {
            Issue.record("an INTERNAL rejection passed")
            return
        }
        response.error = Meridian_V1_ErrorDetail(.conflict, "title changed on both sides")
        #expect(WireExecutor<HTTP2ClientTransport.Posix>.judge(response) == .acceptable("answered Apply conflict"))
    }

    // MARK: - Against a broken server

    @Test("a broken server: unclear statuses, a hang, a stream that never answers and a starved witness are flagged")
    func brokenServer() async throws {
        try await BrokenServer.run { port in
            try await withFuzzClient(host: "127.0.0.1", port: port) { client in
                // A deadline long enough for a loaded machine, except for the call that must hang.
                let executor = WireExecutor(client: client, timeout: .seconds(20), probeEntity: "Point")
                let impatient = WireExecutor(client: client, timeout: .seconds(1), probeEntity: "Point")
                func failure(_ method: WireMethod, _ messages: [[UInt8]]) async -> String {
                    let chosen = method == .query ? impatient : executor
                    guard case .failure(let message) = await chosen.run(WireInput(method: method, messages: messages))
                    else { return "(passed)" }
                    return message
                }
                let apply = await failure(.apply, [[]])
                #expect(apply.contains("unclear error status"), "\(apply)")
                let query = await failure(.query, [[]])
                #expect(query.contains("hang"), "\(query)")
                let sync = await failure(.sync, [[]])
                #expect(sync.contains("without answering the probe"), "\(sync)")
                let applyStream = await failure(.applyStream, [[], []])
                #expect(applyStream.contains("answered 0 of 2"), "\(applyStream)")
                #expect(
                    await executor.run(WireInput(method: .getSchema, messages: [[]]))
                        == .acceptable("answered GetSchema"))
            }
            // A whole campaign against it: failures with their inputs, and the witness check stops it.
            var campaign = WireCampaign(host: "127.0.0.1", port: port, seed: 7)
            campaign.timeout = .seconds(2)
            campaign.batchSize = 5
            let report = try await campaign.run(budget: FuzzBudget(inputs: 50))
            #expect(report.inputs == 6, "the campaign goes on after the first batch: \(report)")
            #expect(report.failures.contains { $0.message.contains("no longer serves another client") })
            #expect(report.failures.contains { $0.corpusText.contains("method ") })
        }
    }

    @Test("a server that is gone is flagged, not passed")
    func goneServer() async throws {
        let port = try await BrokenServer.run { port in port }  // stopped once run returns
        try await withFuzzClient(host: "127.0.0.1", port: port) { client in
            let executor = WireExecutor(client: client, timeout: .milliseconds(500), probeEntity: "Point")
            guard case .failure = await executor.run(WireInput(method: .getSchema, messages: [[]])) else {
                Issue.record("a call to a stopped server passed")
                return
            }
        }
    }

    // MARK: - Text judges

    @Test("a QueryError outside the text or without a message is flagged")
    func predicateJudge() throws {
        #expect(throws: TextFailure.self) {
            try PredicateCampaign.judge(QueryError(.syntax, "x", position: 4), text: "abc").get()
        }
        #expect(throws: TextFailure.self) {
            try PredicateCampaign.judge(QueryError(.syntax, "x", position: -1), text: "abc").get()
        }
        #expect(throws: TextFailure.self) {
            try PredicateCampaign.judge(QueryError(.syntax, "", position: 0), text: "abc").get()
        }
        #expect(throws: TextFailure.self) {
            try PredicateCampaign.judge(QueryError(.syntax, "x", position: 2, length: 5), text: "abc").get()
        }
        #expect(try PredicateCampaign.judge(QueryError(.syntax, "x", position: 3), text: "abc").get() == "syntax")
    }

    @Test("a SchemaError without file, line and column, or past the text, is flagged")
    func schemaJudge() throws {
        let text = "version: 1\nentities: {}\n"
        #expect(throws: TextFailure.self) {
            try SchemaCampaign.judge(SchemaError(.syntax, "bad", file: "fuzz.yaml"), text: text).get()
        }
        #expect(throws: TextFailure.self) {
            try SchemaCampaign.judge(SchemaError(.syntax, "bad", file: "other.yaml", line: 1, column: 1), text: text)
                .get()
        }
        #expect(throws: TextFailure.self) {
            try SchemaCampaign.judge(SchemaError(.syntax, "bad", file: "fuzz.yaml", line: 9, column: 1), text: text)
                .get()
        }
        #expect(
            try SchemaCampaign.judge(SchemaError(.syntax, "bad", file: "fuzz.yaml", line: 3, column: 1), text: text)
                .get() == "syntax")
        #expect(SchemaCampaign.lineCount("a\r\nb\rc\nd\u{2028}e") == 5)
    }

    @Test("the apply parser's verdicts: a located bad-input error, or operations")
    func applyParser() throws {
        let schema = FuzzSchema.schema
        #expect(
            try ApplyCampaign.parse("{\"op\":\"delete\",\"entity\":\"Point\",\"id\":\"p\"}", schema: schema).get()
                == "parsed")
        #expect(try ApplyCampaign.parse("\n{\"op\":\"nope\"}", schema: schema).get() == "rejected")
        #expect(try ApplyCampaign.parse("  \n", schema: schema).get() == "parsed empty")
    }

    @Test(
        "a meridian binary that crashes, exits 1, accepts bad input or hangs is flagged",
        arguments: [
            ("kill -SEGV $$", "signal"),
            ("echo oops >&2; exit 1", "exited 1"),
            ("cat >/dev/null; echo 12", "exited 0"),
            ("exec sleep 30", "did not exit"),
        ])
    func brokenBinary(body: String, expected: String) async throws {
        let path = try FuzzFixtures.script(body)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let outcome = await ApplyCampaign.runBinary(
            "{\"op\":\"nope\"}", binary: (path, "127.0.0.1:1"), parsed: .success("rejected"), timeout: .seconds(2))
        guard case .failure(let failure) = outcome else {
            Issue.record("'\(body)' passed")
            return
        }
        #expect(failure.message.contains(expected), "\(failure.message)")
    }

    // MARK: - Corpus format and replay

    @Test("a wire input survives its corpus text, and a bad corpus file names its line")
    func corpusFormat() throws {
        let input = WireInput(method: .applyStream, messages: [[0, 1, 0xFF], []])
        #expect(try WireInput(corpusText: input.corpusText(comment: "why\nit is here")) == input)
        #expect(throws: CorpusError.self) { try WireInput(corpusText: "method Apply\nmessage zz\n") }
        #expect(throws: CorpusError.self) { try WireInput(corpusText: "message 00\n") }
    }

    @Test("the same seed gives the same inputs; another seed, others")
    func determinism() {
        let generator = WireGenerator(schema: FuzzSchema.schema, oversize: 1_000)
        func inputs(_ seed: UInt64) -> [WireInput] {
            (0..<50).map { index in
                var random = FuzzRandom(seed: seed, campaign: .wire, index: index)
                return generator.input(random: &random)
            }
        }
        #expect(inputs(1) == inputs(1))
        #expect(inputs(1) != inputs(2))
    }
}
