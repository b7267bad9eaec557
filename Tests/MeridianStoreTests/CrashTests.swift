import Foundation
import MeridianCore
import MeridianProcessIO
import MeridianStore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct CrashTests {
    /// The crash writer's schema (Sources/meridian-store-testhelper/main.swift declares the same one).
    static let schema = try! Schema(
        version: 1,
        entities: [
            EntitySchema(
                name: "Tagged",
                attributes: [
                    Attribute(name: "tag", type: .int),
                    Attribute(name: "n", type: .int),
                    Attribute(name: "payload", type: .string),
                    Attribute(name: "score", type: .double, isOptional: true),
                ],
                indexes: [Index(attributes: ["tag"])],
                idPolicy: .client
            )
        ])
    static let rowsPerTransaction = 4

    /// Reads the child's standard output until it has reported `count` commits; returns the highest seq reported.
    static func waitForCommits(_ handle: FileHandle, count: Int) async -> Int64 {
        await Task.detached {
            var seen = 0
            var highest: Int64 = 0
            var pending = ""
            while seen < count {
                let data = handle.nextChunk()
                if data.isEmpty { break }
                pending += String(decoding: data, as: UTF8.self)
                while let newline = pending.firstIndex(of: "\n") {
                    let line = pending[..<newline]
                    pending = String(pending[pending.index(after: newline)...])
                    if line.hasPrefix("committed "), let seq = Int64(line.dropFirst(10)) {
                        seen += 1
                        highest = max(highest, seq)
                    }
                }
            }
            return highest
        }.value
    }

    @Test(
        "a writer killed with kill -9 at random moments loses no commit, half-applies none, leaves no seq gap",
        .timeLimit(.minutes(5)))
    func killNine() async throws {
        let directory = try TemporaryDirectory()
        var reported: Int64 = 0
        for run in 0..<5 {
            let process = Process()
            process.executableURL = ChildProcess.helper
            process.arguments = ["crash-writer", directory.storePath, String(run)]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let commits = Int.random(in: 1...120)
            let highest = await Self.waitForCommits(output.fileHandleForReading, count: commits)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal, "run \(run): the writer exited by itself")
            #expect(highest > 0, "run \(run): no commit reported")
            reported = max(reported, highest)
        }

        let store = try Store.open(path: directory.storePath, schema: Self.schema)
        // Every reported commit survived.
        let latest = try await store.latestSeq()
        #expect(latest >= reported)
        // The log has no gap: seqs are exactly 1...latest.
        let log = try await allChanges(store).changes
        #expect(log.map(\.seq) == Array(1...latest))
        // Replaying the log from empty reproduces the table, rows and versions.
        var replayed: [String: (Row, Int64)] = [:]
        for change in log {
            if let after = change.after {
                replayed[change.id] = (after, change.version)
            } else {
                replayed[change.id] = nil
            }
        }
        let table = try await tableState(store, "Tagged")
        #expect(table.count == replayed.count)
        for (id, (row, version)) in table {
            #expect(replayed[id]?.0 == row && replayed[id]?.1 == version, "row \(id)")
        }
        // No transaction is half-applied: each tag has 0 or all of its rows.
        var perTag: [Int64: Set<Int64>] = [:]
        for (row, _) in table.values {
            guard case .int(let tag) = row["tag"], case .int(let n) = row["n"] else {
                Issue.record("row without tag: \(row)")
                continue
            }
            perTag[tag, default: []].insert(n)
        }
        for (tag, ns) in perTag {
            #expect(ns == Set(0..<Int64(Self.rowsPerTransaction)), "tag \(tag) has rows \(ns.sorted())")
        }
        // Updates of one transaction are all-or-nothing too: the rows of a tag share one score.
        let scores = Dictionary(grouping: table.values.map(\.0), by: { $0["tag"] }).mapValues {
            Set($0.map { $0["score"] })
        }
        #expect(scores.values.allSatisfy { $0.count == 1 })
        try store.close()
    }
}
