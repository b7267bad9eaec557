// MARK: - scripts/demo.sh, run without a terminal

import Foundation
import Testing

@Suite(.timeLimit(.minutes(3)))
struct DemoTests {
    @Test("the demo loads places, writes, watches, and stops everything by itself after --duration")
    func demo() async throws {
        let data = NSTemporaryDirectory() + "meridian-demo-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: data) }
        let demo = try ChildProcess(
            repositoryRoot + "/scripts/demo.sh",
            [
                "--bin", productsFolder, "--duration", "10", "--port", "0", "--points", "500", "--data", data, "--view",
                "none",
            ])
        let status = await demo.waitForExit(timeout: .seconds(150))
        let log = await demo.allErrorOutput()
        #expect(status == 0, "\(log)")
        #expect(log.contains("==> loading 500 places"), "\(log)")
        #expect(log.contains("imported 500 rows into Point in 1 transaction"), "\(log)")
        #expect(log.contains("meridian watch Point"), "\(log)")
        // It names the server's status page, last of all before it waits.
        let lastLine = log.split(separator: "\n").last { $0.hasPrefix("==> ") } ?? ""
        #expect(lastLine.contains("the status page is at http://127.0.0.1:"), "\(log)")

        let address = try #require(
            try String(contentsOfFile: data + "/server.out", encoding: .utf8).split(separator: "\n").first?
                .dropFirst("listening on ".count))
        // Everything it started is gone: the server no longer answers.
        let after = try await runMeridian(["schema"], server: String(address))
        #expect(after.status == 3, "\(after)")

        // The writer wrote, and (once watch exists) the watcher saw it.
        let rows = try await Self.count(data + "/watch.jsonl")
        if meridianCLIHasWatch {
            #expect(rows.snapshot == 1)
            #expect(rows.changes > 3, "the writer's changes reached the watcher")
            // The writer stamps updatedAt on what it writes, and the loader on what it loads.
            let text = try String(contentsOfFile: data + "/watch.jsonl", encoding: .utf8)
            #expect(text.contains(#""updatedAt":"20"#), "no updatedAt in the watch stream")
            #expect(!text.contains(#""updatedAt":null"#), "a row without updatedAt")
        }
    }

    @Test("the demo with --users: alice and bob each see only their categories, and both see the writer's changes")
    func demoWithTwoUsers() async throws {
        let data = NSTemporaryDirectory() + "meridian-demo-users-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: data) }
        let demo = try ChildProcess(
            repositoryRoot + "/scripts/demo.sh",
            [
                "--bin", productsFolder, "--duration", "10", "--port", "0", "--points", "500", "--data", data, "--view",
                "none", "--users",
            ])
        let status = await demo.waitForExit(timeout: .seconds(150))
        let log = await demo.allErrorOutput()
        #expect(status == 0, "\(log)")
        #expect(log.contains("imported 500 rows into Point in 1 transaction"), "\(log)")
        #expect(log.contains("--token \"$ALICE\""), "\(log)")
        guard meridianCLIHasWatch else { return }
        // Every category a watcher's stream names is one its user may read; both saw the writer's changes.
        for (file, allowed) in [("watch.jsonl", Set([0, 1])), ("watch-bob.jsonl", Set([2, 3, 4]))] {
            let text = try String(contentsOfFile: data + "/" + file, encoding: .utf8)
            let seen = Set(
                text.matches(of: /"category":(\d+)/).compactMap { Int($0.output.1) })
            #expect(!seen.isEmpty && seen.isSubset(of: allowed), "\(file) shows categories \(seen.sorted())")
            let rows = try await Self.count(data + "/" + file)
            #expect(rows.snapshot == 1 && rows.changes > 0, "\(file): \(rows)")
        }
    }

    static func count(_ path: String) async throws -> (snapshot: Int, changes: Int) {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        let lines = text.split(separator: "\n")
        return (
            lines.filter { $0.hasPrefix(#"{"event":"snapshot""#) }.count,
            lines.filter { $0.hasPrefix(#"{"event":"change""#) }.count
        )
    }
}

#if canImport(MeridianClient)
    let meridianCLIHasWatch = true
#else
    let meridianCLIHasWatch = false
#endif
