// Each campaign for a fixed seed (MERIDIAN_SEED replays another) and a bounded number of inputs: no failure allowed.

import MeridianFuzz
import Testing

@Suite("Fuzz campaigns", .timeLimit(.minutes(2)))
struct FuzzCampaignTests {
    /// Runs `campaigns` for `inputs` inputs each and returns the report, recording every failure with its seed.
    private func run(
        _ campaigns: [FuzzCampaign], inputs: Int, binaryEvery: Int? = nil
    ) async throws -> FuzzReport {
        var options = FuzzOptions(
            seed: FuzzFixtures.seed, budget: FuzzBudget(inputs: inputs),
            meridianExecutable: try binaryEvery.map { _ in try FuzzFixtures.builtMeridian() })
        options.campaigns = campaigns
        if let binaryEvery { options.binaryEvery = binaryEvery }
        let report = try await FuzzCampaigns.run(options)
        for failure in report.failures {
            Issue.record("\(failure)\nreplay: MERIDIAN_SEED=\(failure.seed)\ncorpus file:\n\(failure.corpusText)")
        }
        return report
    }

    @Test("wire: 400 mutated requests over HTTP/2; every answer clear, the witness client still served")
    func wire() async throws {
        let report = try await self.run([.wire], inputs: 400)
        #expect(report.inputs == 400)
        let outcomes = report.campaigns[0].outcomes
        // The inputs reach past the decoder: valid answers and typed rejections of every method.
        for kind in [
            "answered Sync", "answered Apply committed", "answered ApplyStream", "answered Query",
            "answered GetSchema", "rejected invalidArgument malformedRequest",
            "rejected resourceExhausted messageTooLarge", "answered Apply limitExceeded",
        ] {
            #expect(outcomes[kind, default: 0] > 0, "no input ended '\(kind)': \(report)")
        }
    }

    /// Broken on purpose once — the verifier ignoring `nbf` — 16 of 1,370 inputs failed with "a mutated token was
    /// accepted".
    @Test("token: 600 mutated tokens on every RPC; only the valid token's own bytes are accepted")
    func token() async throws {
        let report = try await self.run([.token], inputs: 600)
        #expect(report.inputs == 600)
        let outcomes = report.campaigns[0].outcomes
        for kind in ["refused", "refused by HTTP/2", "accepted, same token"] {
            #expect(outcomes[kind, default: 0] > 0, "no input ended '\(kind)': \(report)")
        }
    }

    @Test("predicate: 4,000 random and mutated texts give a located QueryError or a working predicate")
    func predicate() async throws {
        let report = try await self.run([.predicate], inputs: 4_000)
        #expect(report.inputs == 4_000)
        let outcomes = report.campaigns[0].outcomes
        for kind in ["bound", "syntax", "unknownAttribute", "typeMismatch", "tooDeep"] {
            #expect(outcomes[kind, default: 0] > 0, "no input ended '\(kind)': \(report)")
        }
    }

    @Test("schema: 2,000 random and mutated YAML and JSON texts load or fail at file:line:col")
    func schema() async throws {
        let report = try await self.run([.schema], inputs: 2_000)
        #expect(report.inputs == 2_000)
        let outcomes = report.campaigns[0].outcomes
        for kind in ["loaded", "syntax", "unknownKey", "typeMismatch", "duplicateName"] {
            #expect(outcomes[kind, default: 0] > 0, "no input ended '\(kind)': \(report)")
        }
    }

    @Test("apply: 600 JSON-lines inputs to the parser, 15 of them through the real meridian apply -")
    func apply() async throws {
        let report = try await self.run([.apply], inputs: 600, binaryEvery: 40)
        #expect(report.inputs == 600)
        let outcomes = report.campaigns[0].outcomes
        #expect(outcomes["parsed", default: 0] > 0 && outcomes["rejected", default: 0] > 0, "\(report)")
        let binaryRuns = outcomes.filter { $0.key.hasPrefix("binary") }.values.reduce(0, +)
        #expect(binaryRuns > 0, "no sampled input reached the binary: \(report)")
    }
}
