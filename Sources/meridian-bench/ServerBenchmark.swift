// MARK: - ServerBenchmark
//
// Commit-to-client-apply latency and delivered changes/s through meridian-server on loopback HTTP/2, for 1, 10 and
// 100 subscribed clients and 1-row and 100-row transactions, each next to the ceiling: a trivial gRPC service that
// streams the same bytes (one pre-encoded SyncResponse per commit, shared by every client) from the same process.
//
// - Latency: a writer commits at 1,000 commits/s for 2 s; every row carries the monotonic time taken just before its
//   commit; each client decodes every message (rows and values by hand, as the client library does) and records
//   now − that time (it keeps no rows: 100 clients' dictionaries of 100,000 rows took 11 GB of this process and
//   measured its allocator more than the server, docs/server.md). p50/p99 over
//   every (row, client). The raw side stamps its message at the same point, so both include the same clock reads.
//   The same arrivals are also timed from the moment each commit was durable — the store's commit observer, on the
//   committing thread before the fan-out is woken — so that what the server adds after the commit is compared with
//   raw gRPC, which stores nothing: "commit to client". The first figure, the flush included, is "write to client".
// - Rules: 100 clients with rules on — 100 principals, each client's read rule bound to its own claims, so no two
//   share a subscription — against the same schema without rules (one subscription shared by all); every row is
//   visible to every principal, so both deliver the same rows.
// - Throughput: the writer commits as fast as it can (2 s, 1-row or 100-row transactions); clients count rows until
//   they have them all; changes/s = rows × clients / time until the last client has everything. One sequential
//   writer waits for each commit (and its flush) before the next; the next column runs the same transactions from
//   `concurrentWriters` tasks at once; the last one sends them through the server, pipelined over one `ApplyStream`
//   call with `pipelineWindow` unanswered (as a context sends a burst of saves, and `meridian import` its chunks).

import CMeridianHeap
import Dispatch
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import GRPCProtobuf
import Logging
import MeridianAuth
import MeridianClient
import MeridianCore
import MeridianProto
import MeridianServer
import MeridianStore
import SwiftProtobuf
import Synchronization

enum ServerBenchmark {
    static let logger = benchLogger

    static func schema() throws -> Schema {
        try Schema(
            version: 1,
            entities: [
                EntitySchema(
                    name: "Bench",
                    attributes: [
                        Attribute(name: "title", type: .string),
                        Attribute(name: "stamp", type: .int),
                        Attribute(name: "qty", type: .int),
                    ])
            ])
    }

    /// The schemas of the rules table: the Bench entity with an owner and a team, with rules (`on`) or without.
    static func rulesSchema(on: Bool) throws -> Schema {
        let auth = """
            auth:
              claims: { sub: string, team: int }

            """
        let rules = """
                rules:
                  read: team == @team AND (ownerId == @sub OR qty >= 0)

            """
        return try Schema.parse(
            yaml: """
                version: 1
                \(on ? auth : "")entities:
                  Bench:
                    attributes:
                      title: string
                      stamp: int
                      qty: int
                      ownerId: string
                      team: int
                \(on ? rules : "")
                """)
    }

    /// Whether a case runs on the plain schema, or on the rules table's schema: rules off (every client on the same
    /// subscription), off with a predicate of its own for each client (`qty > -N`, true of every row: as many
    /// distinct subscriptions as with rules, without claims), or on.
    enum Rules {
        case plain, off, offDistinct, on
    }

    static func now() -> Int64 { Int64(DispatchTime.now().uptimeNanoseconds) }

    /// One measured run.
    struct Figure {
        /// From just before the writer's commit (a durable `Store.apply`) to the row's arrival.
        var p50: Double?
        var p99: Double?
        /// From the moment the commit was durable (``Store/observeCommits(_:)``) to the row's arrival: the latency
        /// cases of an in-process store only (`nil` otherwise; for raw gRPC, `p50` and `p99` are the same thing).
        var commitP50: Double? = nil
        var commitP99: Double? = nil
        var changesPerSecond: Double
        /// Seconds from the first commit until the writer's last commit returned (the rest is the pipeline's drain).
        var writerSeconds: Double = 0
        /// Seconds from the first commit until the last client had every row.
        var seconds: Double = 0
    }

    /// `MERIDIAN_BENCH_ONLY=idle:N[:hello]` connects N clients to a server in this process, each subscribed to a
    /// subscription of its own (or, with `hello`, to none), and prints the heap in use per idle client (glibc's
    /// `mallinfo2`, both sides of the connection: not the resident set, so without its noise): for taking the
    /// regions case's memory figure apart.
    /// `MERIDIAN_BENCH_ONLY=meridian:CLIENTS:ROWS[:RATE[:WRITERS[:RULES]]]` (or `raw:…`; an empty RATE is as fast
    /// as possible; WRITERS `pN` is one writer pipelining through the server with N unanswered; RULES is `off`,
    /// `distinct` or `on`, the rules table's cases) runs one case once, for profiling; `rules` runs the rules table;
    /// `writers[:N[:pW]]` the many-small-writers case (8 writers, or N; each pipelining W unanswered with `pW`);
    /// `lone[:N]` times N lone calls one after another (each waiting for its answer): a unary `GetSchema`, a unary
    /// `Apply`, one `Apply` on an open `ApplyStream`, and the client library's save until confirmed;
    /// `encode[:ROWS]` times the fan-out's row encoding alone (``encodeRows(_:)``);
    /// `writer:ROWS` runs the writer alone (same store, same transactions, no server): the bound on the
    /// throughput cases with a single sequential writer; `commit:RATE` the latency cases' writer alone, with the
    /// p50 and p99 of its commits.
    static func runOnly(_ spec: String) async throws {
        let parts = spec.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        if parts.count == 2, parts[0] == "writer", let rows = Int(parts[1]) { return try await self.writerOnly(rows) }
        if parts.count == 2, parts[0] == "commit", let rate = Int(parts[1]), rate > 0 {
            return try await self.commitLatency(rate: rate)
        }
        if parts[0] == "writers" {
            let writers = parts.count > 1 ? Int(parts[1]) ?? StoreBenchmark.writers : StoreBenchmark.writers
            let window = parts.count > 2 && parts[2].hasPrefix("p") ? Int(parts[2].dropFirst()) : nil
            let (figure, alone) = try await self.smallWriters(writers: writers, pipelineWindow: window)
            print(
                "writers: delivered tx/s", count(figure.changesPerSecond), "store alone", count(alone),
                "writer done s", String(format: "%.2f", figure.writerSeconds), "last row s",
                String(format: "%.2f", figure.seconds))
            return
        }
        if parts[0] == "idle" {
            let clients = parts.count > 1 ? Int(parts[1]) ?? 1_000 : 1_000
            return try await self.idleHeap(clients: clients, subscribe: !(parts.count > 2 && parts[2] == "hello"))
        }
        if parts[0] == "encode" {
            return self.encodeRows(max(1, parts.count > 1 ? Int(parts[1]) ?? 20_000 : 20_000))
        }
        if parts[0] == "applyEncode" {
            return self.encodeApply(max(1, parts.count > 1 ? Int(parts[1]) ?? 20_000 : 20_000))
        }
        if parts[0] == "sortByID" {
            return self.sortByID(max(1, parts.count > 1 ? Int(parts[1]) ?? 20_000 : 20_000))
        }
        if parts[0] == "lone" {
            let calls = parts.count > 1 ? Int(parts[1]) ?? 1_000 : 1_000
            return try await self.loneSaves(calls: calls)
        }
        if spec == "rules" {
            _ = try await self.rulesTable()
            return
        }
        guard parts.count >= 3, let clients = Int(parts[1]), let rows = Int(parts[2]) else { return }
        let rate = parts.count > 3 ? Int(parts[3]) : nil
        let writers = parts.count > 4 ? Int(parts[4]) ?? 1 : 1
        let window = parts.count > 4 && parts[4].hasPrefix("p") ? Int(parts[4].dropFirst()) : nil
        let rules: Rules =
            switch parts.count > 5 ? parts[5] : "" {
            case "off": .off
            case "distinct": .offDistinct
            case "on": .on
            default: .plain
            }
        let cpu = StoreBenchmark.Stopwatch()
        cpu.start()
        let figure =
            parts[0] == "raw"
            ? try await self.raw(clients: clients, rowsPerCommit: rows, rate: rate)
            : try await self.meridian(
                clients: clients, rowsPerCommit: rows, rate: rate, writers: writers, rules: rules,
                pipelineWindow: window)
        cpu.stop()
        let delivered = Double(self.commits(rowsPerCommit: rows, rate: rate) * rows * clients)
        print(
            spec, "p50", ms(figure.p50), "p99", ms(figure.p99), "from commit p50", ms(figure.commitP50), "p99",
            ms(figure.commitP99), "changes/s", count(figure.changesPerSecond),
            "writer done s", String(format: "%.2f", figure.writerSeconds),
            "last row s", String(format: "%.2f", figure.seconds),
            "process cpu s", String(format: "%.2f", cpu.result.cpu),
            "cpu µs/delivered row", String(format: "%.1f", cpu.result.cpu / delivered * 1e6))
    }

    /// The fan-out's row encoding alone (`MERIDIAN_BENCH_ONLY=encode[:ROWS]`): `count` rows of the benchmark's
    /// entity, in the compact form the store's reads give, written as one delta's entered rows (as the fan-out's
    /// `SharedDelta` writes them), as one merged delta (`subscriptionDeltaBody`, what a client's queue writes for
    /// batches merged while it fell behind) and as one snapshot chunk, 20 times each; the median nanoseconds a row of
    /// each.
    static func encodeRows(_ count: Int) {
        // Shaped like the rows, as a store's read shapes its layout by the rows it reads.
        let layout = RowLayout(names: ["qty", "stamp", "title"]).shaped(like: [.int(0), .int(0), .string("")])
        let rows = (0..<count).map { i in
            Row(
                id: "0198c1f2-\(String(i, radix: 16))-7000-8000-\(String(i * 7919, radix: 16))", layout: layout,
                values: [.int(Int64(i % 100)), .int(1_764_000_000_000 + Int64(i)), .string("row \(i / 100)")])
        }
        let entered = rows.map { (row: $0, version: Int64(1)) }
        var delta: [Double] = []
        var merged: [Double] = []
        var chunk: [Double] = []
        var bytes = 0
        for _ in 0..<20 {
            var start = ContinuousClock.now
            var body: [UInt8] = []
            body.reserveCapacity(256)
            for row in rows { DeltaWireEncoding.appendEntered(row, version: 1, to: &body) }  // as `SharedDelta` does
            delta.append(Double((ContinuousClock.now - start).nanoseconds) / Double(count))
            start = ContinuousClock.now
            let mergedBody = DeltaWireEncoding.subscriptionDeltaBody(entered: entered, left: [], updated: [])
            merged.append(Double((ContinuousClock.now - start).nanoseconds) / Double(count))
            start = ContinuousClock.now
            let message = DeltaWireEncoding.snapshotChunkResponse(
                subscriptionID: "s", seq: 1, rowCount: count, last: true, resnapshot: false, chunkIndex: 0, epoch: 1,
                row: { (rows[$0], 1) })
            chunk.append(Double((ContinuousClock.now - start).nanoseconds) / Double(count))
            bytes = body.count + mergedBody.count + message.count
        }
        delta.sort()
        merged.sort()
        chunk.sort()
        print(
            "encode:\(count)", "delta ns/row", String(format: "%.1f", delta[10]), "merged delta ns/row",
            String(format: "%.1f", merged[10]), "snapshot chunk ns/row", String(format: "%.1f", chunk[10]), "bytes",
            bytes)
    }

    /// `MERIDIAN_BENCH_ONLY=applyEncode[:ROWS]`: the CLI's encoding of one `Apply` of ROWS insert operations shaped as
    /// `meridian apply` reads the bulk case's lines (compact, one layout), in one piece and in one piece per core,
    /// alternated, 21 times each; the median wall time of each in ms, and their ratio.
    static func encodeApply(_ count: Int) {
        let layout = RowLayout(names: ["title", "stamp", "qty"])
        let operations = (0..<count).map { i in
            [Value.string("row \(i)"), .int(Int64(i)), .int(Int64(i % 100))].withUnsafeBufferPointer {
                WriteOperation(kind: .insert, entity: "Bench", id: "r\(i)", layout: layout, values: $0)
            }
        }
        let cores = ProcessInfo.processInfo.activeProcessorCount
        var times: [[Double]] = [[], []]
        var bytes = [0, 0]
        for _ in 0..<21 {
            for (i, pieces) in [1, cores].enumerated() {
                let start = ContinuousClock.now
                let request = ApplyRequestWireEncoding.encode(
                    operations, policy: .storeWins, clientTag: "", idempotencyKey: "", seqOnly: true, pieces: pieces)
                times[i].append(Double((ContinuousClock.now - start).nanoseconds) / 1e6)
                bytes[i] = request.count
            }
        }
        let medians = times.map { $0.sorted()[10] }
        print(
            "applyEncode:\(count)", "one piece ms", String(format: "%.2f", medians[0]), "\(cores) pieces ms",
            String(format: "%.2f", medians[1]), "ratio", String(format: "%.2f", medians[1] / medians[0]), "bytes",
            bytes[0], bytes[1])
    }

    /// `MERIDIAN_BENCH_ONLY=sortByID[:ROWS]`: a controller's sort of ROWS rows by id (`LiveResults.sortedByID`, on
    /// eight-byte prefixes) against sorting the rows themselves by `utf8Compare`, for two shapes of id in a shuffled
    /// order: the bulk case's (`r123`) and the store's generated ones (time-ordered UUIDs made in one burst, which share
    /// their first eight bytes); alternated 11 times, the median ms of each and their ratio.
    static func sortByID(_ count: Int) {
        var random = SplitMix64(seed: 7)
        let shapes: [(String, [String])] = [
            ("r<n>", (0..<count).map { "r\($0)" }), ("uuid", (0..<count).map { _ in RandomID.uuidString() }),
        ]
        for (shape, ids) in shapes {
            let shuffled = ids.map { Row(id: $0, values: ["qty": .int(1)]) }.shuffled(using: &random)
            // Also in order already: a snapshot arrives in the results' order.
            self.timeSortByID(shuffled, "\(count) \(shape) shuffled")
            self.timeSortByID(shuffled.sorted { $0.id.utf8Compare($1.id) < 0 }, "\(count) \(shape) in order")
        }
    }

    /// One line of ``sortByID(_:)``: `rows` sorted both ways, alternated 11 times.
    private static func timeSortByID(_ rows: [Row], _ label: String) {
        var times: [[Double]] = [[], []]
        for _ in 0..<11 {
            var start = ContinuousClock.now
            let prefixed = LiveResults.sortedByID(rows, ascending: true)
            times[0].append(Double((ContinuousClock.now - start).nanoseconds) / 1e6)
            var plain = rows
            // Its own copy before the clock starts, as the controller's is.
            plain.withUnsafeMutableBufferPointer { _ in }
            start = ContinuousClock.now
            plain.sort { $0.id.utf8Compare($1.id) < 0 }
            times[1].append(Double((ContinuousClock.now - start).nanoseconds) / 1e6)
            precondition(prefixed == plain, "the two sorts disagree")
        }
        let medians = times.map { $0.sorted()[5] }
        print(
            "sortByID:\(label)", "prefixed ms", String(format: "%.2f", medians[0]), "rows compared ms",
            String(format: "%.2f", medians[1]), "ratio", String(format: "%.2f", medians[0] / medians[1]))
    }

    /// The latency cases' writer alone: 1-row commits at `rate` commits/s for 2 s into the same kind of store, no
    /// server, no client; p50 and p99 of each `Store.apply` (a durable commit), in ms — the part of the commit→client
    /// latency that no transport can take away.
    static func commitLatency(rate: Int) async throws {
        let store = try Store.temporary(schema: schema(), logger: logger)
        let commits = self.commits(rowsPerCommit: 1, rate: rate)
        var samples: [Double] = []
        samples.reserveCapacity(commits)
        let interval = Duration.seconds(1) / rate
        var deadline = ContinuousClock.now
        for index in 0..<commits {
            deadline += interval
            try await Task.sleep(until: deadline, clock: .continuous)
            let start = ContinuousClock.now
            try await self.write(store, index: index, stamp: self.now(), rows: 1)
            let elapsed = ContinuousClock.now - start
            samples.append(Double(elapsed.components.seconds) * 1e3 + Double(elapsed.components.attoseconds) / 1e15)
        }
        samples.sort()
        print(
            "commit:\(rate)", "commits", commits, "p50", ms(samples[samples.count / 2]), "p99",
            ms(samples[min(samples.count - 1, samples.count * 99 / 100)]), "max", ms(samples.last))
    }

    /// The writer of the throughput cases alone: `commits × rows` inserts, one `Store.apply` at a time.
    static func writerOnly(_ rowsPerCommit: Int) async throws {
        let store = try Store.temporary(schema: schema(), logger: logger)
        let commits = self.commits(rowsPerCommit: rowsPerCommit, rate: nil)
        let watch = StoreBenchmark.Stopwatch()
        watch.start()
        for index in 0..<commits { try await self.write(store, index: index, stamp: self.now(), rows: rowsPerCommit) }
        watch.stop()
        let rows = Double(commits * rowsPerCommit)
        print(
            "writer:\(rowsPerCommit)", "rows/s", count(rows / watch.result.wall), "wall s",
            String(format: "%.2f", watch.result.wall), "cpu µs/row",
            String(format: "%.1f", watch.result.cpu / rows * 1e6))
    }

    /// One benchmark commit: `rows` inserts (with an owner and a team on the rules table's schema).
    @discardableResult
    static func write(
        _ store: Store, index: Int, stamp: Int64, rows: Int, rules: Rules = .plain
    ) async throws -> CommitResult {
        try await store.apply(self.operations(index: index, stamp: stamp, rows: rows, rules: rules))
    }

    /// One benchmark commit's `rows` inserts (with rules on, with the attributes the rules read): what the in-process
    /// writers apply and the gRPC writers send.
    static func operations(index: Int, stamp: Int64, rows: Int, rules: Rules = .plain) -> [WriteOperation] {
        var operations: [WriteOperation] = []
        operations.reserveCapacity(rows)
        for r in 0..<rows {
            var values: [String: Value] = [
                "title": .string("row \(index)"), "stamp": .int(stamp), "qty": .int(Int64(r)),
            ]
            if rules != .plain {
                values["ownerId"] = .string("user\(r % 100)")
                values["team"] = .int(7)
            }
            operations.append(.insert("Bench", id: "\(index)-\(r)", values))
        }
        return operations
    }

    /// Commits per run: 2 s at `rate`, or a fixed count calibrated to about 2 s.
    static func commits(rowsPerCommit: Int, rate: Int?) -> Int {
        rate.map { $0 * 2 } ?? (rowsPerCommit == 1 ? 8_000 : 1_000)
    }

    /// The writers of the last column of the throughput tables: the same transactions, committed by this many tasks
    /// at once (as a server's many writing clients would), so that group commit shares their flushes; the other
    /// columns have one writer that waits for each commit before the next.
    static let concurrentWriters = 4

    /// Transactions the pipelining writer sends before it waits for an answer: as many as a client context sends
    /// ahead of their answers (`SyncConnection.pipelineWindow`).
    static let pipelineWindow = 16

    static func run(arguments: [String]) async throws {
        if let only = ProcessInfo.processInfo.environment["MERIDIAN_BENCH_ONLY"] { return try await runOnly(only) }
        if arguments.first == "--case", arguments.count > 1, arguments[1] == "regions" {
            return try await RegionsBenchmark.run(arguments: Array(arguments.dropFirst(2)))
        }
        guard arguments.allSatisfy({ $0 == "--json" }) else {
            FileHandle.standardError.write(
                Data(
                    "usage: meridian-bench server [--json]\n       \(RegionsBenchmark.usage.dropFirst("usage: ".count))\n"
                        .utf8))
            exit(2)
        }
        let printer = FigurePrinter(json: arguments.contains("--json"))
        for figure in try await self.figures(printer: printer) { printer.print(figure) }
    }

    /// Every table of the server benchmark, printed as it runs (as notes, with `--json`), and its figures: Meridian
    /// against raw gRPC for latency and throughput, rules on against off, and the many-clients case.
    static func figures(printer: FigurePrinter) async throws -> [BenchFigure] {
        var figures: [BenchFigure] = []
        printer.note(
            "server benchmark: \(ProcessInfo.processInfo.activeProcessorCount) cores, loopback HTTP/2, one connection per client"
        )
        printer.note("")
        printer.note(
            "latency at 1,000 commits/s (1-row transactions) to the client's decoded batch, ms: from the moment the "
                + "commit was durable, and from just before the writer's durable commit (the flush included)")
        printer.note(
            pad("clients", 8) + pad("from commit p50", 17) + pad("p99", 9) + pad("from write p50", 16)
                + pad("p99", 9) + pad("raw p50", 10) + pad("raw p99", 9))
        // The 10-client p99 from the commit: the ceiling of the 100-client figure (the goal: within 3x of it).
        var tenClientsP99: Double?
        for clients in [1, 10, 100] {
            let meridian = try await self.meridian(clients: clients, rowsPerCommit: 1, rate: 1_000)
            let raw = try await self.raw(clients: clients, rowsPerCommit: 1, rate: 1_000)
            printer.note(
                pad("\(clients)", 8) + pad(ms(meridian.commitP50), 17) + pad(ms(meridian.commitP99), 9)
                    + pad(ms(meridian.p50), 16) + pad(ms(meridian.p99), 9) + pad(ms(raw.p50), 10) + pad(ms(raw.p99), 9))
            if let p99 = meridian.commitP99 {
                figures.append(
                    BenchFigure(
                        bench: "server", name: "p99 commit to client at 1,000 commits/s, \(clients) clients",
                        value: p99, unit: "ms", ceiling: raw.p99))
                if clients == 10 { tenClientsP99 = p99 }
                if clients == 100, let tenClientsP99 {
                    figures.append(
                        BenchFigure(
                            bench: "server",
                            name: "p99 commit to client at 1,000 commits/s, 100 clients (ceiling: 10 clients)",
                            value: p99, unit: "ms", ceiling: tenClientsP99))
                }
            }
            if let p99 = meridian.p99 {
                figures.append(
                    BenchFigure(
                        bench: "server",
                        name: "p99 write to client (the durable commit included) at 1,000 commits/s, "
                            + "\(clients) clients",
                        value: p99, unit: "ms", ceiling: raw.p99))
            }
        }
        for rows in [1, 100] {
            printer.note("")
            printer.note(
                "sustained throughput, \(rows)-row transactions as fast as possible, row changes/s delivered (all clients)"
            )
            printer.note(
                pad("clients", 8) + pad("meridian", 14) + pad("raw gRPC", 14) + pad("per client", 12)
                    + pad("meridian, \(concurrentWriters) writers", 22) + pad("meridian, pipelined", 20))
            for clients in [1, 10, 100] {
                let meridian = try await self.meridian(clients: clients, rowsPerCommit: rows, rate: nil)
                let raw = try await self.raw(clients: clients, rowsPerCommit: rows, rate: nil)
                let concurrent = try await self.meridian(
                    clients: clients, rowsPerCommit: rows, rate: nil, writers: concurrentWriters)
                let pipelined = try await self.meridian(
                    clients: clients, rowsPerCommit: rows, rate: nil, pipelineWindow: pipelineWindow)
                printer.note(
                    pad("\(clients)", 8) + pad(count(meridian.changesPerSecond), 14)
                        + pad(count(raw.changesPerSecond), 14)
                        + pad(count(meridian.changesPerSecond / Double(clients)), 12)
                        + pad(count(concurrent.changesPerSecond), 22) + pad(count(pipelined.changesPerSecond), 20))
                let name = "row changes/s delivered, \(rows)-row transactions, \(clients) clients"
                figures.append(
                    BenchFigure(
                        bench: "server", name: name, value: meridian.changesPerSecond, unit: "rows/s",
                        ceiling: raw.changesPerSecond))
                figures.append(
                    BenchFigure(
                        bench: "server", name: name + ", \(concurrentWriters) writers",
                        value: concurrent.changesPerSecond, unit: "rows/s", ceiling: raw.changesPerSecond))
                figures.append(
                    BenchFigure(
                        bench: "server", name: name + ", one writer pipelining over ApplyStream",
                        value: pipelined.changesPerSecond, unit: "rows/s", ceiling: raw.changesPerSecond))
            }
        }
        printer.note("")
        let (writers, alone) = try await self.smallWriters()
        let (streamedWriters, streamedAlone) = try await self.smallWriters(pipelineWindow: 1)
        let (pipelinedWriters, pipelinedAlone) = try await self.smallWriters(pipelineWindow: pipelineWindow)
        printer.note(
            "8 clients writing 1-row transactions through the server, delivered to a subscriber: "
                + "\(count(writers.changesPerSecond)) transactions/s (each waiting for its answer to a unary Apply), "
                + "\(count(streamedWriters.changesPerSecond)) (each waiting for its answer on one ApplyStream, as the "
                + "client library sends saves), "
                + "\(count(pipelinedWriters.changesPerSecond)) (each pipelining \(pipelineWindow) over ApplyStream); "
                + "the store's group commit alone, 8 writers: \(count(alone)), \(count(streamedAlone)), "
                + "\(count(pipelinedAlone))")
        figures.append(
            BenchFigure(
                bench: "server",
                name:
                    "transactions/s delivered, 8 clients writing 1-row transactions (ceiling: the store's group commit alone)",
                value: writers.changesPerSecond, unit: "tx/s", ceiling: alone))
        figures.append(
            BenchFigure(
                bench: "server",
                name:
                    "transactions/s delivered, 8 clients writing 1-row transactions, each waiting for its answer on one ApplyStream (ceiling: the store's group commit alone)",
                value: streamedWriters.changesPerSecond, unit: "tx/s", ceiling: streamedAlone))
        figures.append(
            BenchFigure(
                bench: "server",
                name:
                    "transactions/s delivered, 8 clients pipelining 1-row transactions over ApplyStream (ceiling: the store's group commit alone)",
                value: pipelinedWriters.changesPerSecond, unit: "tx/s", ceiling: pipelinedAlone))
        printer.note("")
        figures += try await self.rulesTable(printer: printer)
        printer.note("")
        figures += try await RegionsBenchmark.figures(RegionsBenchmark.Options(), printer: printer)
        return figures
    }

    /// The rules table: 100 clients, rules off and on interleaved, latency at 1,000 commits/s then throughput of
    /// 100-row transactions; each ratio is rules on over rules off of the same run.
    static func rulesTable(printer: FigurePrinter = FigurePrinter(json: false)) async throws -> [BenchFigure] {
        printer.note(
            "rules, 100 clients: off (one subscription shared by all) against on (100 principals, 100 bound rules)")
        printer.note(
            pad("case", 38) + pad("off", 10) + pad("off, distinct", 16) + pad("on", 10) + pad("on vs distinct", 13)
                + "on vs off (cost, 1.00x: none)")
        let clients = 100
        var latency: [Rules: Figure] = [:]
        var throughput: [Rules: Figure] = [:]
        for rules in [Rules.off, .offDistinct, .on] {
            latency[rules] = try await self.meridian(clients: clients, rowsPerCommit: 1, rate: 1_000, rules: rules)
        }
        for rules in [Rules.off, .offDistinct, .on] {
            throughput[rules] = try await self.meridian(
                clients: clients, rowsPerCommit: 100, rate: nil, rules: rules)
        }
        func ratio(_ worse: Double?, _ better: Double?) -> String {
            guard let worse, let better, better > 0 else { return "-" }
            return String(format: "%.2fx", worse / better)
        }
        printer.note(
            pad("p99 ms at 1,000 commits/s", 38) + pad(ms(latency[.off]!.p99), 10)
                + pad(ms(latency[.offDistinct]!.p99), 16) + pad(ms(latency[.on]!.p99), 10)
                + pad(ratio(latency[.on]!.p99, latency[.offDistinct]!.p99), 13)
                + ratio(latency[.on]!.p99, latency[.off]!.p99))
        printer.note(
            pad("row changes/s, 100-row transactions", 38) + pad(count(throughput[.off]!.changesPerSecond), 10)
                + pad(count(throughput[.offDistinct]!.changesPerSecond), 16)
                + pad(count(throughput[.on]!.changesPerSecond), 10)
                + pad(ratio(throughput[.offDistinct]!.changesPerSecond, throughput[.on]!.changesPerSecond), 13)
                + ratio(throughput[.off]!.changesPerSecond, throughput[.on]!.changesPerSecond))
        return [
            BenchFigure(
                bench: "server", name: "p99 at 1,000 commits/s, 100 clients, rules on (ceiling: off)",
                value: latency[.on]!.p99 ?? .nan, unit: "ms", ceiling: latency[.off]!.p99),
            BenchFigure(
                bench: "server", name: "row changes/s, 100-row transactions, 100 clients, rules on (ceiling: off)",
                value: throughput[.on]!.changesPerSecond, unit: "rows/s", ceiling: throughput[.off]!.changesPerSecond),
        ]
    }

    // MARK: - Meridian

    /// One case through a server on loopback: `clients` subscribed clients; commits by `writers` in-process tasks
    /// calling `Store.apply`, or, with `pipelineWindow`, by one gRPC client pipelining them over `ApplyStream`.
    static func meridian(
        clients: Int, rowsPerCommit: Int, rate: Int?, writers: Int = 1, rules: Rules = .plain,
        pipelineWindow: Int? = nil
    ) async throws -> Figure {
        precondition(
            pipelineWindow == nil || (rules == .plain && rate == nil),
            "the pipelining writer runs plain, as fast as it can")
        let store = try Store.temporary(
            schema: rules == .plain ? schema() : rulesSchema(on: rules == .on), logger: logger)
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.clientQueueLimit = 1_000_000
        configuration.logRetention = .unlimited
        configuration.maxStreamsPerPrincipal = 0
        configuration.applyRatePerPrincipal = 0
        // With rules: 100 principals signed with an HS256 secret, one token for each client.
        var authenticator: Authenticator? = nil
        var tokens: [String] = []
        if rules == .on {
            let path = NSTemporaryDirectory() + "meridian-bench-\(UUID().uuidString).secret"
            try String(repeating: "b", count: 48).write(toFile: path, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let signer = try await SigningKey.load(contentsOf: path)
            authenticator = Authenticator(
                tokens: TokenVerifier(keys: try await VerificationKeys.load(contentsOf: path)), apiKeys: nil)
            let expiry = Int64(Date().timeIntervalSince1970) + 3_600
            for i in 0..<clients {
                tokens.append(
                    try await signer.sign(
                        claims: ["sub": .string("user\(i)"), "team": .int(7), "exp": .int(expiry)]))
            }
        }
        let server = MeridianServer(
            store: store, configuration: configuration, logger: logger, authenticator: authenticator)
        let nextClient = Atomic<Int>(0)
        // The latency cases also time each row from its commit's durable moment.
        let clock = rate == nil ? nil : CommitClock()
        if let clock { store.observeCommits { seq in clock.committed(seq) } }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { server.beginGracefulShutdown() }
            let port = try await server.listeningAddress.port
            let writerConnection = try pipelineWindow.map { _ in try self.connection(port: port) }
            if let writerConnection { group.addTask { try await writerConnection.runConnections() } }
            defer { writerConnection?.beginGracefulShutdown() }
            var writeAll: (@Sendable (Int) async throws -> Void)? = nil
            if let writerConnection, let pipelineWindow {
                writeAll = { commits in
                    try await self.pipeline(
                        writerConnection, indices: Array(0..<commits), window: pipelineWindow, rows: rowsPerCommit)
                }
            }
            var commitInstant: (@Sendable (Int64) -> Int64?)? = nil
            if let clock { commitInstant = { stamp in clock.instant(ofStamp: stamp) } }
            let results = try await self.drive(
                clients: clients, rowsPerCommit: rowsPerCommit, rate: rate, writers: writers,
                connect: { [tokens] collector, ready, expected in
                    let index = nextClient.add(1, ordering: .relaxed).oldValue
                    let metadata: Metadata = tokens.isEmpty ? [:] : ["authorization": "Bearer \(tokens[index])"]
                    try await self.meridianClient(
                        port: port, collector: collector, ready: ready, expected: expected,
                        predicate: rules == .offDistinct ? "qty > \(-1 - index)" : "", metadata: metadata)
                },
                write: { index, stamp in
                    let result = try await self.write(
                        store, index: index, stamp: stamp, rows: rowsPerCommit, rules: rules)
                    clock?.wrote(stamp: stamp, seq: result.seq)
                },
                writeAll: writeAll, commitInstant: commitInstant)
            writerConnection?.beginGracefulShutdown()
            server.beginGracefulShutdown()
            try await group.waitForAll()
            return results
        }
    }

    /// Many small writers: `writers` gRPC clients commit 1-row transactions through the server's Apply as fast as
    /// they can (each waits for its answer, or, with `pipelineWindow`, sends its share over one `ApplyStream` with that
    /// many unanswered), one subscribed client receives them; and, as the ceiling, the store's own group commit with as
    /// many concurrent writers and no server (`meridian-bench store`'s case, durable commits on both sides). Returns
    /// the run, and the ceiling in transactions/s.
    static func smallWriters(
        writers: Int = StoreBenchmark.writers, pipelineWindow: Int? = nil
    ) async throws -> (Figure, Double) {
        let (wall, _) = try await StoreBenchmark.timed {
            try await StoreBenchmark.storeConcurrent($0, $1, groupCommit: true)
        }
        let alone = Double(StoreBenchmark.singleRowCommits) / wall
        let store = try Store.temporary(schema: schema(), logger: logger)
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.logRetention = .unlimited
        configuration.applyRatePerPrincipal = 0
        let server = MeridianServer(store: store, configuration: configuration, logger: logger)
        let figure = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { server.beginGracefulShutdown() }
            let port = try await server.listeningAddress.port
            var connections: [GRPCClient<HTTP2ClientTransport.Posix>] = []
            for _ in 0..<writers {
                let client = try self.connection(port: port)
                connections.append(client)
                group.addTask { try await client.runConnections() }
            }
            let clients = connections
            var writeAll: (@Sendable (Int) async throws -> Void)? = nil
            if let pipelineWindow {
                writeAll = { commits in
                    // Each client sends every `writers`-th transaction, as the waiting writers do.
                    try await withThrowingTaskGroup(of: Void.self) { writing in
                        for (w, client) in clients.enumerated() {
                            writing.addTask {
                                try await self.pipeline(
                                    client, indices: Array(stride(from: w, to: commits, by: writers)),
                                    window: pipelineWindow, rows: 1)
                            }
                        }
                        try await writing.waitForAll()
                    }
                }
            }
            let results = try await self.drive(
                clients: 1, rowsPerCommit: 1, rate: nil, writers: writers,
                connect: { collector, ready, expected in
                    try await self.meridianClient(port: port, collector: collector, ready: ready, expected: expected)
                },
                write: { index, stamp in
                    let response = try await Meridian_V1_Meridian.Client(wrapping: clients[index % writers]).apply(
                        Meridian_V1_ApplyRequest(self.operations(index: index, stamp: stamp, rows: 1)))
                    if case .error(let detail) = response.outcome {
                        throw BulkBenchmark.BenchError(description: "an Apply failed: \(detail.message)")
                    }
                },
                writeAll: writeAll)
            for client in clients { client.beginGracefulShutdown() }
            server.beginGracefulShutdown()
            try await group.waitForAll()
            return results
        }
        return (figure, alone)
    }

    /// Lone calls, one after another, each waiting for its answer (`MERIDIAN_BENCH_ONLY=lone[:N]`): what one call
    /// costs on its own, where the throughput cases measure many in flight. Prints the median and the mean per call
    /// of a unary `GetSchema` (gRPC's own cost of a call: the server does next to nothing), a unary `Apply` of one
    /// row, one `Apply` of one row on an `ApplyStream` already open (the mean only: the stream is timed whole), and
    /// the client library's lone save of one row (`insert`, `save`, `confirmed()`: its controller shows the committed
    /// row) — in rounds of each in turn.
    static func loneSaves(calls: Int) async throws {
        let store = try Store.temporary(schema: schema(), logger: logger)
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.logRetention = .unlimited
        configuration.applyRatePerPrincipal = 0
        let server = MeridianServer(store: store, configuration: configuration, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { server.beginGracefulShutdown() }
            let port = try await server.listeningAddress.port
            let client = try self.connection(port: port)
            group.addTask { try await client.runConnections() }
            let stub = Meridian_V1_Meridian.Client(wrapping: client)
            let container = try await MeridianContainer(
                .init(server: "127.0.0.1:\(port)", schema: try Self.schema(), logger: logger))
            let connection = Task { await container.run() }
            defer { connection.cancel() }
            let controller = try await container.controller(for: try FetchRequest(entity: "Bench"))
            try await controller.waitUntilLoaded()
            var next = 0
            func microseconds(_ duration: Duration) -> Double {
                Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
            }
            func timed(_ body: () async throws -> Void) async throws -> [Double] {
                var times: [Double] = []
                times.reserveCapacity(calls)
                for _ in 0..<calls {
                    let start = ContinuousClock.now
                    try await body()
                    times.append(microseconds(ContinuousClock.now - start))
                }
                return times
            }
            func say(_ name: String, _ times: [Double]) {
                let sorted = times.sorted()
                let mean = times.reduce(0, +) / Double(times.count)
                print(
                    pad(name, 34) + "median " + String(format: "%7.0f", sorted[sorted.count / 2]) + " µs   mean "
                        + String(format: "%7.0f", mean) + " µs")
            }
            for round in 1...3 {
                print("round \(round), \(calls) calls each")
                say("unary GetSchema", try await timed { _ = try await stub.getSchema(Meridian_V1_GetSchemaRequest()) })
                say(
                    "unary Apply",
                    try await timed {
                        next += 1
                        let response = try await stub.apply(
                            Meridian_V1_ApplyRequest(self.operations(index: next, stamp: 0, rows: 1)))
                        if case .error(let detail) = response.outcome {
                            throw BulkBenchmark.BenchError(description: "an Apply failed: \(detail.message)")
                        }
                    })
                let first = next + 1
                next += calls
                // One stream, each transaction sent once the one before was answered: the mean only.
                let start = ContinuousClock.now
                try await self.pipeline(client, indices: Array(first...next), window: 1, rows: 1)
                let mean = microseconds(ContinuousClock.now - start) / Double(calls)
                print(
                    pad("Apply on an open ApplyStream", 34) + "               mean " + String(format: "%7.0f", mean)
                        + " µs")
                say(
                    "client library save until confirmed",
                    try await timed {
                        next += 1
                        try await container.context.insert(
                            into: "Bench", id: "\(next)-0",
                            values: ["title": .string("row \(next)"), "stamp": 0, "qty": 0])
                        _ = try await container.context.save().confirmed()
                    })
            }
            client.beginGracefulShutdown()
        }
    }

    /// A plaintext gRPC client of the server on loopback `port` (the caller runs its connections).
    static func connection(port: Int) throws -> GRPCClient<HTTP2ClientTransport.Posix> {
        GRPCClient(transport: try Self.clientTransport(port: port))
    }

    /// Sends the transactions `indices` over one `ApplyStream` call, at most `window` unanswered, each stamped as it is
    /// sent; throws at the first rejection. Each request is written from its Core operations and each answer read as
    /// the client library's pipelined writer does (`MeridianConnection.applyPipelined`: `ApplyRequestWireEncoding`,
    /// `ApplyResponseDeserializer`), not through generated messages, so that the figure is that of what a user runs.
    static func pipeline(
        _ client: GRPCClient<HTTP2ClientTransport.Posix>, indices: [Int], window: Int, rows: Int
    ) async throws {
        guard !indices.isEmpty else { return }
        let (credits, grant) = AsyncStream<Void>.makeStream()
        for _ in 0..<window { grant.yield() }
        try await client.bidirectionalStreaming(
            request: StreamingClientRequest<[UInt8]> { writer in
                var credit = credits.makeAsyncIterator()
                for index in indices {
                    guard await credit.next() != nil else { return }
                    try await writer.write(
                        ApplyRequestWireEncoding.encode(
                            self.operations(index: index, stamp: self.now(), rows: rows), policy: .storeWins))
                }
            },
            descriptor: Meridian_V1_Meridian.Method.ApplyStream.descriptor,
            serializer: EncodedMessageSerializer(), deserializer: ApplyResponseDeserializer(), options: .defaults,
            onResponse: { response in
                defer { grant.finish() }
                var answered = 0
                for try await message in response.messages {
                    if case .error(let detail) = message.outcome {
                        throw BulkBenchmark.BenchError(description: "an Apply failed: \(detail.message)")
                    }
                    answered += 1
                    if answered == indices.count { return }
                    grant.yield()
                }
                throw BulkBenchmark.BenchError(description: "ApplyStream ended after \(answered) answers")
            })
    }

    /// `idle:N[:hello]` (see ``runOnly(_:)``).
    static func idleHeap(clients: Int, subscribe: Bool) async throws {
        let store = try Store.temporary(schema: schema(), logger: logger)
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.maxStreamsPerPrincipal = 0
        configuration.maxConnections = clients + 16
        let server = MeridianServer(store: store, configuration: configuration, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { server.beginGracefulShutdown() }
            let port = try await server.listeningAddress.port
            meridian_heap_trim()
            let before = meridian_heap_in_use()
            let (readyStream, readyContinuation) = AsyncStream<Void>.makeStream()
            let clientTasks = Task {
                try await withThrowingTaskGroup(of: Void.self) { clientGroup in
                    for index in 0..<clients {
                        clientGroup.addTask {
                            try await self.idleClient(
                                port: port, predicate: subscribe ? "qty > \(-1 - index)" : nil,
                                ready: { readyContinuation.yield() })
                        }
                    }
                    try await clientGroup.waitForAll()
                }
            }
            var ready = 0
            for await _ in readyStream {
                ready += 1
                if ready == clients { break }
            }
            try await Task.sleep(for: .seconds(1))
            meridian_heap_trim()
            let after = meridian_heap_in_use()
            print(
                "idle:\(clients)\(subscribe ? "" : ":hello") heap in use per client (both sides)",
                String(format: "%.2f KiB", Double(after - before) / Double(clients) / 1024))
            clientTasks.cancel()
            _ = await clientTasks.result
            server.beginGracefulShutdown()
            try await group.waitForAll()
        }
    }

    /// A client that says Hello (subscribing with `predicate` when given), says when it is ready — its snapshot shown,
    /// or its Welcome without a subscription — and stays connected until cancelled.
    static func idleClient(
        port: Int, predicate: String?, metadata: Metadata = [:], ready: @escaping @Sendable () -> Void
    ) async throws {
        let (requests, continuation) = AsyncStream<Meridian_V1_SyncRequest>.makeStream()
        var hello = Meridian_V1_SyncRequest()
        hello.hello.protocolVersion = ProtocolVersion.current
        if let predicate {
            var subscribe = Meridian_V1_Subscribe()
            subscribe.subscriptionID = "idle"
            subscribe.fetch = Meridian_V1_FetchRequest(entity: "Bench")
            subscribe.fetch.predicate = predicate
            hello.hello.subscriptions = [subscribe]
        }
        continuation.yield(hello)
        defer { continuation.finish() }
        try await self.syncCall(port: port, metadata: metadata, requests: requests) { response in
            for try await message in response.messages {
                switch message.kind {
                case .welcome where predicate == nil: ready()
                case .batch(let batch) where batch.deltas.contains(where: \.snapshot): ready()
                default: break
                }
            }
        }
    }

    /// A `Sync` call on a connection of its own to 127.0.0.1:`port` (rows decoded by hand), sending `requests` as
    /// they come until the stream finishes; `onResponse` reads the server's messages.
    static func syncCall(
        port: Int, metadata: Metadata = [:], requests: AsyncStream<Meridian_V1_SyncRequest>,
        onResponse: @Sendable @escaping (StreamingClientResponse<Meridian_V1_SyncResponse>) async throws -> Void
    ) async throws {
        let transport = try ServerBenchmark.clientTransport(port: port)
        try await withGRPCClient(transport: transport) { client in
            try await Meridian_V1_Meridian.Client(wrapping: client).syncDecodingRowsByHand(
                metadata: metadata,
                requestProducer: { writer in for await request in requests { try await writer.write(request) } },
                onResponse: onResponse)
        }
    }

    /// A client that subscribes to every Bench row (or those matching `predicate`), decodes each batch, and reports
    /// per-row latency.
    static func meridianClient(
        port: Int, collector: Collector, ready: @escaping @Sendable () -> Void, expected: Int, predicate: String = "",
        metadata: Metadata = [:]
    ) async throws {
        let (requests, continuation) = self.helloAndSubscribe("all", entity: "Bench", predicate: predicate)
        try await self.syncCall(port: port, metadata: metadata, requests: requests) { response in
            var received = 0
            var latencies: [Int64] = []
            var arrivals: [Arrival] = []
            let keepsArrivals = collector.keepsArrivals
            for try await message in response.messages {
                switch message.kind {
                case .batch(let batch):
                    let now = self.now()
                    for delta in batch.deltas {
                        // The snapshot (staged from its chunks, empty here) shows with this batch.
                        if delta.snapshot { ready() }
                        for row in delta.entered {
                            if case .intValue(let stamp) = row.values["stamp"]?.kind {
                                latencies.append(now - stamp)
                                if keepsArrivals { arrivals.append(Arrival(stamp: stamp, at: now)) }
                            }
                        }
                        received += delta.entered.count
                    }
                default: break
                }
                if received >= expected { break }
            }
            continuation.finish()
            collector.finish(latencies: latencies, arrivals: arrivals, rows: received)
        }
    }

    /// A Sync stream's requests: Hello, then one Subscribe to `entity` rows matching `predicate`; finish the
    /// continuation to end the stream.
    static func helloAndSubscribe(_ id: String, entity: String, predicate: String) -> (
        AsyncStream<Meridian_V1_SyncRequest>, AsyncStream<Meridian_V1_SyncRequest>.Continuation
    ) {
        let (requests, continuation) = AsyncStream<Meridian_V1_SyncRequest>.makeStream()
        var hello = Meridian_V1_SyncRequest()
        hello.hello.protocolVersion = ProtocolVersion.current
        continuation.yield(hello)
        var subscribe = Meridian_V1_SyncRequest()
        subscribe.subscribe.subscriptionID = id
        subscribe.subscribe.fetch = Meridian_V1_FetchRequest(entity: entity)
        subscribe.subscribe.fetch.predicate = predicate
        continuation.yield(subscribe)
        return (requests, continuation)
    }

    // MARK: - Raw gRPC

    /// A plaintext client transport to 127.0.0.1:`port`, configured as the client library's
    /// (`ServerAddress.transportConfig`): the benchmark's clients, Meridian's and raw gRPC's alike.
    static func clientTransport(port: Int) throws -> HTTP2ClientTransport.Posix {
        try HTTP2ClientTransport.Posix(
            target: .ipv4(address: "127.0.0.1", port: port), transportSecurity: .plaintext,
            config: ServerAddress.transportConfig)
    }

    /// The raw ceiling's server transport on 127.0.0.1 (a port of the OS's choosing), flushing as `meridian-server`
    /// does by default (``ServerConfiguration/flushCoalescing``), so that the ceiling and Meridian send alike.
    static func rawTransport() -> HTTP2ServerTransport.Posix {
        HTTP2ServerTransport.Posix(
            address: .ipv4(host: "127.0.0.1", port: 0), transportSecurity: .plaintext,
            config: .defaults {
                $0.connection.flushCoalescing = ServerConfiguration(host: "127.0.0.1", port: 0).flushCoalescing
            })
    }

    /// The ceiling: the same bytes (one SyncResponse{batch} per commit, encoded once) streamed by a trivial service.
    static func raw(clients: Int, rowsPerCommit: Int, rate: Int?) async throws -> Figure {
        let broadcast = Broadcast()
        let transport = ServerBenchmark.rawTransport()
        let server = GRPCServer(transport: transport, services: [RawService(broadcast: broadcast)])
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            let port = try await transport.listeningAddress.ipv4!.port
            let seq = Mutex<Int64>(0)
            let results = try await self.drive(
                clients: clients, rowsPerCommit: rowsPerCommit, rate: rate,
                connect: { collector, ready, expected in
                    try await self.rawClient(port: port, collector: collector, ready: ready, expected: expected)
                },
                write: { index, stamp in
                    let seq = seq.withLock { seq in
                        seq += 1
                        return seq
                    }
                    var delta = Meridian_V1_SubscriptionDelta()
                    delta.subscriptionID = "all"
                    for r in 0..<rowsPerCommit {
                        var row = Meridian_V1_Row()
                        row.id = "\(index)-\(r)"
                        row.version = 1
                        row.values = [
                            "title": Meridian_V1_Value(.string("row \(index)")),
                            "stamp": Meridian_V1_Value(.int(stamp)),
                            "qty": Meridian_V1_Value(.int(Int64(r))),
                        ]
                        delta.entered.append(row)
                    }
                    var response = Meridian_V1_SyncResponse()
                    response.batch.seq = seq
                    response.batch.deltas = [delta]
                    broadcast.send(try response.serializedBytes())
                })
            broadcast.finish()
            server.beginGracefulShutdown()
            try await group.waitForAll()
            return results
        }
    }

    static func rawClient(port: Int, collector: Collector, ready: @escaping @Sendable () -> Void, expected: Int)
        async throws
    {
        let transport = try ServerBenchmark.clientTransport(port: port)
        try await withGRPCClient(transport: transport) { client in
            try await client.serverStreaming(
                request: ClientRequest(message: [UInt8]()),
                descriptor: RawService.method,
                serializer: BytesCoding(),
                deserializer: SyncResponseDeserializer(),
                options: .defaults
            ) { response in
                var received = 0
                var latencies: [Int64] = []
                var first = true
                for try await message in response.messages {
                    if first {
                        first = false
                        ready()
                        continue
                    }
                    let now = self.now()
                    for delta in message.batch.deltas {
                        for row in delta.entered {
                            if case .intValue(let stamp) = row.values["stamp"]?.kind { latencies.append(now - stamp) }
                        }
                        received += delta.entered.count
                    }
                    if received >= expected { break }
                }
                collector.finish(latencies: latencies, arrivals: [], rows: received)
            }
        }
    }

    // MARK: - Driving a run

    /// Connects the clients, waits until every one is subscribed, writes (at `rate` commits/s for 2 s, or as fast as
    /// possible for 2 s — the row count is then fixed by a short calibration), and waits for every client.
    static func drive(
        clients: Int, rowsPerCommit: Int, rate: Int?,
        writers: Int = 1,
        connect: @escaping @Sendable (Collector, @escaping @Sendable () -> Void, Int) async throws -> Void,
        write: @escaping @Sendable (Int, Int64) async throws -> Void,
        writeAll: (@Sendable (Int) async throws -> Void)? = nil,
        commitInstant: (@Sendable (Int64) -> Int64?)? = nil
    ) async throws -> Figure {
        let commits = self.commits(rowsPerCommit: rowsPerCommit, rate: rate)
        let expected = commits * rowsPerCommit
        let collector = Collector(keepsArrivals: commitInstant != nil)
        let (readyStream, readyContinuation) = AsyncStream<Void>.makeStream()
        return try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<clients {
                group.addTask { try await connect(collector, { readyContinuation.yield() }, expected) }
            }
            var readyCount = 0
            for await _ in readyStream {
                readyCount += 1
                if readyCount == clients { break }
            }
            let start = self.now()
            let interval = rate.map { Duration.seconds(1) / $0 }
            var deadline = ContinuousClock.now
            if let writeAll {
                // The writer takes every commit at once (and stamps each as it sends it).
                try await writeAll(commits)
            } else if rate == nil, writers > 1 {
                // Concurrent writers, each committing every `writers`-th transaction as fast as it can.
                try await StoreBenchmark.concurrently(commits, writers: writers) { index in
                    try await write(index, self.now())
                }
            } else {
                for index in 0..<commits {
                    if let interval {
                        deadline += interval
                        try await Task.sleep(until: deadline, clock: .continuous)
                    }
                    try await write(index, self.now())
                }
            }
            let writerDone = self.now()
            try await group.waitForAll()
            let seconds = Double(collector.lastFinish - start) / 1e9
            let latencies = collector.latencies.sorted()
            func percentile(_ latencies: [Int64], _ p: Double) -> Double? {
                latencies.isEmpty
                    ? nil : Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) / 1e6
            }
            var figure = Figure(
                p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99),
                changesPerSecond: Double(expected * clients) / seconds, writerSeconds: Double(writerDone - start) / 1e9,
                seconds: seconds)
            if let commitInstant {
                let arrivals = collector.arrivals
                var fromCommit: [Int64] = []
                fromCommit.reserveCapacity(arrivals.count)
                for arrival in arrivals {
                    guard let committed = commitInstant(arrival.stamp) else {
                        throw BulkBenchmark.BenchError(description: "a row arrived whose commit was not observed")
                    }
                    fromCommit.append(arrival.at - committed)
                }
                fromCommit.sort()
                figure.commitP50 = percentile(fromCommit, 0.5)
                figure.commitP99 = percentile(fromCommit, 0.99)
            }
            return figure
        }
    }

    /// A row's arrival at a client: the stamp its writer gave it and the time it arrived (`now()`, nanoseconds).
    struct Arrival {
        var stamp: Int64
        var at: Int64
    }

    /// Gathers every client's latencies (and, for the cases timed from the commit, its arrivals) and the time the
    /// last one finished. Only the latency cases keep arrivals: twice the bytes per row of a latency, kept for the
    /// throughput cases' millions of rows, cost the benchmark's own process (the server's) about 2% of a 100-client
    /// run.
    final class Collector: Sendable {
        let keepsArrivals: Bool
        private let state = Mutex<(latencies: [Int64], arrivals: [Arrival], last: Int64)>(([], [], 0))

        init(keepsArrivals: Bool) { self.keepsArrivals = keepsArrivals }

        func finish(latencies: [Int64], arrivals: [Arrival], rows: Int) {
            let now = ServerBenchmark.now()
            self.state.withLock {
                $0.latencies += latencies
                $0.arrivals += arrivals
                $0.last = max($0.last, now)
            }
        }
        var latencies: [Int64] { self.state.withLock { $0.latencies } }
        var arrivals: [Arrival] { self.state.withLock { $0.arrivals } }
        var lastFinish: Int64 { self.state.withLock { $0.last } }
    }

    /// When each commit of a latency case became durable, by the stamp its rows carry: the store's commit observer
    /// (``Store/observeCommits(_:)``, called on the committing thread before the fan-out is woken) gives each `seq`
    /// its moment, and the writer each stamp its `seq` once `Store.apply` returns.
    final class CommitClock: Sendable {
        private let state = Mutex<(seqByStamp: [Int64: Int64], instantBySeq: [Int64: Int64])>(([:], [:]))

        func committed(_ seq: Int64) {
            let now = ServerBenchmark.now()
            self.state.withLock { $0.instantBySeq[seq] = now }
        }

        func wrote(stamp: Int64, seq: Int64) {
            self.state.withLock { $0.seqByStamp[stamp] = seq }
        }

        func instant(ofStamp stamp: Int64) -> Int64? {
            self.state.withLock { state in state.seqByStamp[stamp].flatMap { state.instantBySeq[$0] } }
        }
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    static func ms(_ value: Double?) -> String { value.map { String(format: "%.2f", $0) } ?? "-" }

    static func count(_ value: Double) -> String {
        value >= 1e6 ? String(format: "%.2fM", value / 1e6) : String(format: "%.0fk", value / 1e3)
    }
}

// MARK: - The raw service

/// Sends every message given to `send` to every connected stream (each stream's queue is unbounded).
final class Broadcast: Sendable {
    private let state = Mutex<(streams: [AsyncStream<[UInt8]>.Continuation], finished: Bool)>(([], false))

    func subscribe() -> AsyncStream<[UInt8]> {
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream()
        self.state.withLock { $0.streams.append(continuation) }
        return stream
    }

    func send(_ bytes: [UInt8]) {
        for continuation in self.state.withLock({ $0.streams }) { continuation.yield(bytes) }
    }

    func finish() {
        for continuation in self.state.withLock({ $0.streams }) { continuation.finish() }
    }
}

/// Bytes in, bytes out.
struct BytesCoding: MessageSerializer, MessageDeserializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Bytes { Bytes(message) }
    func deserialize<Bytes: GRPCContiguousBytes>(_ bytes: Bytes) throws -> [UInt8] {
        bytes.withUnsafeBytes { Array($0) }
    }
}

/// A server-streaming method that writes an empty hello, then every broadcast message as it is.
struct RawService: RegistrableRPCService {
    static let method = MethodDescriptor(fullyQualifiedService: "bench.Raw", method: "Stream")
    let broadcast: Broadcast

    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        router.registerHandler(
            forMethod: Self.method, deserializer: BytesCoding(), serializer: BytesCoding(),
            handler: { request, context in
                for try await _ in request.messages {}
                let messages = self.broadcast.subscribe()
                return StreamingServerResponse { writer in
                    var hello = Meridian_V1_SyncResponse()
                    hello.heartbeat = Meridian_V1_Heartbeat()
                    try await writer.write(try hello.serializedBytes())
                    for await bytes in messages { try await writer.write(bytes) }
                    return [:]
                }
            })
    }
}
