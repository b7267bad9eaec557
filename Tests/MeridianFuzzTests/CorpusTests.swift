// The regression corpus: every input that once broke a promise, replayed every run.

import MeridianFuzz
import Testing

@Suite("Fuzz corpus", .timeLimit(.minutes(2)))
struct CorpusTests {
    @Test("every corpus file is answered as its campaign requires, and the server still serves a witness after them")
    func replay() async throws {
        let report = try await FuzzCorpus.replay(
            folder: FuzzFixtures.corpus, meridianExecutable: try FuzzFixtures.builtMeridian())
        for failure in report.failures { Issue.record("\(failure)") }
        // Every campaign has files, so a corpus folder that went missing from the bundle fails here.
        #expect(Set(report.campaigns.map(\.campaign)) == Set(FuzzCampaign.allCases), "\(report)")
        #expect(report.inputs >= 12)
    }
}
