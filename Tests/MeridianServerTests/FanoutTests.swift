// Fan-out under load: many concurrent clients with different predicates, a stalled client past its queue bound, and
// a write by another process (the sqlite3 shell) reaching a subscriber.

import Foundation
import GRPCCore
import MeridianCore
import MeridianProto
import MeridianServer
import MeridianStore
import MeridianTestSupport
import MetricsTestKit
import Synchronization
import Testing

@Suite("Fan-out", .timeLimit(.minutes(5)))  // a hang guard: 50 clients take seconds alone, a minute on a loaded machine
struct FanoutTests {
    /// The fetch request of client `i`: a different predicate (and for some a sort and a limit) per client.
    static func fetch(_ i: Int) -> Meridian_V1_FetchRequest {
        switch i % 5 {
        case 0: Fixtures.fetch("Point", "category == \(i % 7)")
        case 1: Fixtures.fetch("Point", "category < \(i % 7) AND title BEGINSWITH \"t\(i % 3)\"")
        case 2:
            Fixtures.fetch(
                "Point", "title CONTAINS \"\(i % 10)\"", sort: [("title", i % 2 == 0)], limit: UInt32(5 + i % 7))
        case 3: Fixtures.fetch("Point", "latitude > \(Double(i % 20)) OR category == \(i % 4)")
        default: Fixtures.fetch("Point", "NOT (category IN {1, 3, \(i % 7)})", sort: [("category", true)], limit: 20)
        }
    }

    @Test(
        "50 concurrent clients with different predicates all equal direct queries at the end", .timeLimit(.minutes(5)))
    func fiftyClients() async throws {
        let store = try Fixtures.store()
        var seed: [WriteOperation] = []
        for i in 0..<200 {
            seed.append(
                .insert("Point", id: "p\(i)", Fixtures.point("t\(i)", category: Int64(i % 7), lat: Double(i % 30))))
        }
        try await commit(store, seed)
        let sentinel = Fixtures.fetch("Author", "id == \"done\"")
        try await withTestServer(store: store, configuration: Fixtures.configuration()) { _, port in
            let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<50 {
                    group.addTask {
                        try await withHTTP2Client(port: port) { client in
                            try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: client)) { stream in
                                stream.hello(name: "client \(i)")
                                var mirror = Mirror()
                                mirror.apply(try await stream.nextMessage())
                                stream.subscribe("q", Self.fetch(i))
                                stream.subscribe("done", sentinel)
                                try await mirror.awaitSnapshot(stream, "q")
                                try await mirror.awaitSnapshot(stream, "done")
                                readyContinuation.yield()
                                while mirror.results["done"]?.isEmpty != false { mirror.apply(try await stream.next()) }
                                let expected = try await directQuery(store, Self.fetch(i))
                                #expect(mirror.results["q"] == expected, "client \(i): \(Self.fetch(i).predicate)")
                            }
                        }
                    }
                }
                group.addTask {
                    var count = 0
                    for await _ in ready {
                        count += 1
                        if count == 50 { break }
                    }
                    var generator = SystemRandomNumberGenerator()
                    for round in 0..<300 {
                        var operations: [WriteOperation] = []
                        for _ in 0..<3 {
                            let id = "p\(Int.random(in: 0..<200, using: &generator))"
                            operations.append(
                                .update(
                                    "Point", id: id,
                                    [
                                        "category": .int(Int64.random(in: 0..<7, using: &generator)),
                                        "title": .string("t\(Int.random(in: 0..<1000, using: &generator))"),
                                        "latitude": .double(Double(Int.random(in: 0..<30, using: &generator))),
                                    ]))
                        }
                        operations.append(
                            .insert("Point", id: "n\(round)", Fixtures.point("t\(round)", category: Int64(round % 7))))
                        if round % 3 == 0 { operations.append(.delete("Point", id: "n\(round)")) }
                        try await commit(store, operations)
                    }
                    try await commit(store, [.insert("Author", id: "done", ["firstName": "a", "lastName": "b"])])
                }
                try await group.waitForAll()
            }
        }
    }

    @Test("a stalled client past its queue bound is re-snapshotted; another keeps full speed")
    func stalledClient() async throws {
        let store = try Fixtures.store()
        let padding = String(repeating: "x", count: 400)
        let configuration = Fixtures.configuration { $0.clientQueueLimit = 50 }
        let all = Fixtures.fetch("Point")
        let sentinel = Fixtures.fetch("Author")
        let metrics = TestMetrics()
        try await withTestServer(store: store, configuration: configuration, metricsFactory: metrics) { _, port in
            try await withHTTP2Client(port: port, windowSize: 65_535) { slowClient in
                try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: slowClient), capacity: 1) { slow in
                    slow.hello(name: "slow")
                    var slowMirror = Mirror()
                    slowMirror.apply(try await slow.nextMessage())
                    slow.subscribe("all", all)
                    slow.subscribe("done", sentinel)
                    try await slowMirror.awaitSnapshot(slow, "all")
                    try await slowMirror.awaitSnapshot(slow, "done")
                    // The slow client stops reading here.
                    var doneSeq: Int64 = 0
                    try await withHTTP2Client(port: port) { fastClient in
                        try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: fastClient)) { fast in
                            fast.hello(name: "fast")
                            var fastMirror = Mirror()
                            fastMirror.apply(try await fast.nextMessage())
                            fast.subscribe("all", all)
                            fast.subscribe("done", sentinel)
                            try await fastMirror.awaitSnapshot(fast, "all")
                            try await fastMirror.awaitSnapshot(fast, "done")
                            for t in 0..<300 {
                                var operations: [WriteOperation] = []
                                for r in 0..<10 {
                                    operations.append(
                                        .insert("Point", id: "p\(t)-\(r)", Fixtures.point("\(padding)\(t)")))
                                }
                                if t > 0 {
                                    operations.append(.update("Point", id: "p\(t - 1)-0", ["category": .int(Int64(t))]))
                                }
                                try await commit(store, operations)
                            }
                            doneSeq = try await commit(
                                store, [.insert("Author", id: "done", ["firstName": "a", "lastName": "b"])])
                            // The fast client gets everything while the slow one is still stalled.
                            while fastMirror.results["done"]?.isEmpty != false {
                                fastMirror.apply(try await fast.next())
                            }
                            #expect(fastMirror.resnapshots == 0)
                            #expect(fastMirror.results["all"]?.count == 3_000)
                            #expect(fastMirror.results["all"] == (try await directQuery(store, all)))
                        }
                    }
                    // The slow client reads again: a resnapshot of its subscriptions brings it to the right state,
                    // possibly more than once (the queue can overflow again while the writer runs), so read until
                    // both show the final state. Each overflow re-snapshots both subscriptions as one group: one
                    // Batch makes both snapshots visible (docs/protocol.md, "The client's one rule").
                    while slowMirror.seq < doneSeq || slowMirror.snapshotsReceived["all", default: 0] < 2
                        || slowMirror.snapshotsReceived["done", default: 0] < 2 || !slowMirror.chunks.isEmpty
                        || slowMirror.results["done"]?.count != 1 || slowMirror.results["all"]?.count != 3_000
                    {
                        slowMirror.apply(try await slow.next())
                    }
                    #expect(slowMirror.results["done"]?.count == 1)
                    // Each case counted.
                    #expect(metrics.counterTotal(label: "meridian_client_overflows_total") >= 1)
                    #expect(metrics.counterTotal(label: "meridian_resnapshots_total") >= 2)
                    #expect(metrics.counterTotal(label: "meridian_coalesced_row_changes_total") >= 1)
                    #expect(metrics.counterTotal(label: "meridian_fanout_batches_total") >= 1)
                    #expect(slowMirror.resnapshots >= 1)
                    #expect(!slowMirror.resnapshotBatches.isEmpty)
                    #expect(slowMirror.resnapshotBatches.allSatisfy { $0 == ["all", "done"] })
                    #expect(slowMirror.results["all"] == (try await directQuery(store, all)))
                }
            }
        }
    }

    @Test("commits of the sqlite3 shell reach a subscriber in order, each batch at a state the store had")
    func externalWriter() async throws {
        let store = try Fixtures.store()
        let path = try #require(store.path)
        try await withTestServer(store: store, configuration: Fixtures.configuration()) { _, port in
            try await withHTTP2Client(port: port) { client in
                try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: client)) { stream in
                    stream.hello()
                    var mirror = Mirror()
                    mirror.apply(try await stream.nextMessage())
                    stream.subscribe("all", Fixtures.fetch("Point", "category == 5"))
                    try await mirror.awaitSnapshot(stream, "all")
                    let base = try await store.latestSeq()
                    // Eleven commits of another process (the shell commits each statement alone): ten inserts, then
                    // an update of the first row.
                    var sql = "PRAGMA busy_timeout = 5000;"
                    for i in 0..<10 {
                        sql += " INSERT INTO Point (id, title, category) VALUES ('ext\(i)', 'shell', 5);"
                    }
                    sql += " UPDATE Point SET title = 'shell again' WHERE id = 'ext0';"
                    try #require(await sqlite3(path, sql) == 0)
                    let read = try await store.changes(after: base)
                    guard case .changes(let logged) = read else {
                        Issue.record("the log was pruned: \(read)")
                        return
                    }
                    let changes = logged.changes
                    try #require(changes.map(\.id) == (0..<10).map { "ext\($0)" } + ["ext0"])
                    try #require(changes.map(\.seq) == Array(base + 1...base + 11))

                    // Every batch leaves the subscriber at the state the store had at the batch's seq: (title,
                    // version) by id, from the log.
                    func state(at seq: Int64) -> [String: [String]] {
                        var rows: [String: [String]] = [:]
                        for change in changes where change.seq <= seq {
                            rows[change.id] = [change.kind == .insert ? "shell" : "shell again", "\(change.version)"]
                        }
                        return rows
                    }
                    var entered: [String] = []
                    var batchSeqs: [Int64] = []
                    while mirror.seq < base + 11 {
                        guard case .batch(let batch) = mirror.apply(try await stream.next()).kind else { continue }
                        batchSeqs.append(batch.seq)
                        entered += batch.deltas.flatMap { $0.entered.map(\.id) }
                        let shown = (mirror.results["all"] ?? [:]).mapValues {
                            [$0.values["title"]?.stringValue ?? "", "\($0.version)"]
                        }
                        #expect(shown == state(at: batch.seq), "the batch at \(batch.seq)")
                    }
                    // The rows entered in the order they were committed, each once, in batches of increasing seqs.
                    #expect(entered == (0..<10).map { "ext\($0)" })
                    #expect(batchSeqs == batchSeqs.sorted() && Set(batchSeqs).count == batchSeqs.count)
                    #expect(batchSeqs.last == base + 11)
                }
            }
        }
    }

    @Test(
        "lone commits fan out on the committing thread and concurrent ones on the fan-out's: every row once, in order",
        arguments: [true, false])
    func inlineFanout(inline: Bool) async throws {
        let store = try Fixtures.store()
        // A budget no run reaches (every lone commit's fan-out on the committing thread), or none (never there).
        let configuration = Fixtures.configuration { $0.inlineFanoutBudget = inline ? .seconds(600) : .zero }
        let metrics = TestMetrics()
        let all = Fixtures.fetch("Point")
        try await withTestServer(store: store, configuration: configuration, metricsFactory: metrics) { _, port in
            try await withHTTP2Client(port: port) { client in
                try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: client)) { stream in
                    var mirror = try await Mirror.subscribed(stream, "all", all)
                    let deadline = ContinuousClock.now + .seconds(60)
                    // Heartbeats come every 50 ms: a commit that never arrives fails the test at the deadline.
                    struct NeverArrived: Error {}
                    func read(through seq: Int64) async throws {
                        while mirror.seq < seq {
                            guard ContinuousClock.now < deadline else {
                                Issue.record("seq \(seq) never arrived (at \(mirror.seq))")
                                throw NeverArrived()
                            }
                            mirror.apply(try await stream.next())
                        }
                    }
                    // Lone commits, each waited for by the client before the next.
                    for i in 0..<20 {
                        let seq = try await commit(store, [.insert("Point", id: "lone\(i)", Fixtures.point("t\(i)"))])
                        try await read(through: seq)
                        #expect(mirror.results["all"]?.count == i + 1)
                    }
                    // Eight writers at once: their transactions share group commits, fanned out on its own thread.
                    let last = try await withThrowingTaskGroup(of: Int64.self) { group in
                        for w in 0..<8 {
                            group.addTask {
                                var seq: Int64 = 0
                                for k in 0..<25 {
                                    seq = try await commit(
                                        store,
                                        [
                                            .insert("Point", id: "w\(w)-\(k)", Fixtures.point("w\(w)", category: 1)),
                                            // A value no other update writes, so that each changes the row.
                                            .update(
                                                "Point", id: "lone\(k % 20)", ["category": .int(Int64(w * 100 + k))]),
                                        ])
                                }
                                return seq
                            }
                        }
                        return try await group.reduce(0) { max($0, $1) }
                    }
                    try await read(through: last)
                    #expect(mirror.results["all"] == (try await directQuery(store, all)))
                    #expect(mirror.results["all"]?.count == 220)
                    let inlineRuns = metrics.counterTotal(label: "meridian_fanout_inline_runs_total")
                    if inline {
                        #expect(inlineRuns >= 1)
                    } else {
                        #expect(inlineRuns == 0)
                    }
                }
            }
        }
    }

    /// The committing thread runs a lone commit's fan-out when the last run's cost per row change, times the
    /// commit's rows, is under the budget: small commits run there, and a large one after them does not (the last run's
    /// time alone let it, and the committer waited for its whole fan-out).
    @Test("a large lone commit after small ones fans out on the fan-out's thread, not the committing one")
    func largeCommitStaysOnThread() async throws {
        let store = try Fixtures.store()
        let configuration = Fixtures.configuration { $0.inlineFanoutBudget = .milliseconds(50) }
        let metrics = TestMetrics()
        try await withTestServer(store: store, configuration: configuration, metricsFactory: metrics) { _, port in
            try await withHTTP2Client(port: port) { client in
                try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: client)) { stream in
                    var mirror = try await Mirror.subscribed(stream, "all", Fixtures.fetch("Point"))
                    for i in 0..<5 {
                        let seq = try await commit(store, [.insert("Point", id: "s\(i)", Fixtures.point("s"))])
                        try await mirror.catchUp(stream, to: seq)
                    }
                    let small = metrics.counterTotal(label: "meridian_fanout_inline_runs_total")
                    #expect(small >= 1, "no small commit's fan-out ran on the committing thread")
                    // 5,000 rows: at the last small run's cost per row (a read transaction and a Batch, well over
                    // 10 µs), far over 50 ms.
                    let seq = try await commit(
                        store, (0..<5_000).map { .insert("Point", id: "l\($0)", Fixtures.point("l")) })
                    try await mirror.catchUp(stream, to: seq)
                    #expect(mirror.results["all"]?.count == 5_005)
                    #expect(metrics.counterTotal(label: "meridian_fanout_inline_runs_total") == small)
                }
            }
        }
    }

    /// Before any run has been timed, the estimate is ``FanoutThread/firstEstimatePerRow`` per row, not nothing: a new
    /// server's first commit, when large, fans out on the fan-out's thread (it ran on the committing one whatever its
    /// size). Small commits on a new server still run inline (``largeCommitStaysOnThread()``).
    @Test("a new server's first commit, when large, fans out on the fan-out's thread")
    func largeFirstCommitStaysOnThread() async throws {
        let store = try Fixtures.store()
        let configuration = Fixtures.configuration { $0.inlineFanoutBudget = .milliseconds(50) }
        let metrics = TestMetrics()
        try await withTestServer(store: store, configuration: configuration, metricsFactory: metrics) { _, port in
            try await withHTTP2Client(port: port) { client in
                try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: client)) { stream in
                    var mirror = try await Mirror.subscribed(stream, "all", Fixtures.fetch("Point"))
                    // 5,000 rows at the first estimate's 20 µs a row: 100 ms, over the budget.
                    let seq = try await commit(
                        store, (0..<5_000).map { .insert("Point", id: "f\($0)", Fixtures.point("f")) })
                    try await mirror.catchUp(stream, to: seq)
                    #expect(mirror.results["all"]?.count == 5_000)
                    #expect(metrics.counterTotal(label: "meridian_fanout_inline_runs_total") == 0)
                }
            }
        }
    }

    /// `flushDelay` reaches the transport: with nothing else written (no heartbeat due), a commit's Batch is held
    /// for the whole delay. (Off, the default, it goes at once; every other test runs so.)
    @Test("with a flush delay the transport holds a lone Batch for the delay")
    func flushDelay() async throws {
        let store = try Fixtures.store()
        let configuration = Fixtures.configuration {
            $0.flushDelay = .milliseconds(400)
            $0.heartbeatInterval = .seconds(600)
        }
        try await withTestServer(store: store, configuration: configuration) { _, port in
            try await withHTTP2Client(port: port) { client in
                try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: client)) { stream in
                    var mirror = try await Mirror.subscribed(stream, "all", Fixtures.fetch("Point"))
                    // Whatever the subscription wrote has gone out by now.
                    try await Task.sleep(for: .milliseconds(500))
                    let start = ContinuousClock.now
                    let seq = try await commit(store, [.insert("Point", id: "held", Fixtures.point("held"))])
                    try await mirror.catchUp(stream, to: seq)
                    let waited = ContinuousClock.now - start
                    #expect(mirror.results["all"]?["held"] != nil)
                    #expect(waited >= .milliseconds(350), "the Batch came after \(waited), not held for 400 ms")
                }
            }
        }
    }

    /// An update that writes every value as it was, changes that undo each other in one commit, and a delete and
    /// re-insert of the same row each move the row's version and leave its values: the client must hold the new
    /// version, or its next write that expects the version it holds is refused as a conflict.
    @Test(
        "a change that leaves a row's values as they were still brings the client the row's new version",
        arguments: [false, true])
    func versionOnlyChanges(limited: Bool) async throws {
        let store = try Fixtures.store()
        try await commit(store, (0..<8).map { .insert("Point", id: "p\($0)", Fixtures.point("t\($0)", category: 1)) })
        let fetch = limited ? Fixtures.fetch("Point", sort: [("title", true)], limit: 4) : Fixtures.fetch("Point")
        try await withTestServer(store: store, configuration: Fixtures.configuration()) { _, port in
            try await withHTTP2Client(port: port) { client in
                try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: client)) { stream in
                    var mirror = try await Mirror.subscribed(stream, "q", fetch)
                    let writes: [(String, [WriteOperation])] = [
                        ("a no-op update", [.update("Point", id: "p1", ["category": 1])]),
                        (
                            "two updates that undo each other",
                            [
                                .update("Point", id: "p2", ["category": 5]),
                                .update("Point", id: "p2", ["category": 1]),
                            ]
                        ),
                        (
                            // p1 is at version 2 by now; its re-insert is at 1.
                            "a delete and a re-insert",
                            [.delete("Point", id: "p1"), .insert("Point", id: "p1", Fixtures.point("t1", category: 1))]
                        ),
                    ]
                    for (what, operations) in writes {
                        let before = try await directQuery(store, fetch)
                        let seq = try await commit(store, operations)
                        try await mirror.catchUp(stream, to: seq)
                        let after = try await directQuery(store, fetch)
                        let id = try #require(operations[0].id)
                        #expect(after[id]?.version != before[id]?.version, "\(what): the store's version moved")
                        #expect(mirror.results["q"]?[id]?.version == after[id]?.version, "\(what)")
                        #expect(mirror.results["q"] == after, "\(what)")
                    }
                }
            }
        }
    }
}
