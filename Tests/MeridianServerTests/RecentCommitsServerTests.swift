// The fan-out and what the store's committer keeps of its commits for it (`RecentCommits`).

import Foundation
import MeridianCore
import MeridianServer
import MeridianTestSupport
import Testing

@testable import MeridianStore

@Suite("The fan-out and the committer's kept commits", .timeLimit(.minutes(1)))
struct RecentCommitsServerTests {
    @Test("with no client, the fan-out lets go of the kept commits it skips")
    func noClient() async throws {
        let store = try Fixtures.store()
        try await withTestServer(store: store, configuration: Fixtures.configuration()) { _, _ in
            #expect(store.recentCommits.isEnabled)
            for i in 0..<5 {
                try await commit(store, [.insert("Point", id: "p\(i)", Fixtures.point("t\(i)", category: 1, lat: 1))])
            }
            let deadline = ContinuousClock.now + .seconds(20)
            while store.recentCommits.count > 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(store.recentCommits.count == 0)
        }
        #expect(!store.recentCommits.isEnabled, "the stopped server's feed still has commits kept")
    }
}
