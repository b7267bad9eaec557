// MARK: - BoundsBenchmark
//
// A client that subscribes to a whole large table and never reads, beside 100 clients that keep receiving: the
// server's memory and the others' latency, with and without it (issue 15's adversarial case at scale).
//
// The store holds `MERIDIAN_BENCH_ROWS` rows (default 1,000,000) before the server starts. 100 clients subscribe to
// the rows a writer inserts at 200 commits/s for 2 s (each row carries its commit time); each reports commit-to-apply
// latency. Phase 1 runs them alone; phase 2 first opens one more client, over a 64 KiB HTTP/2 window, that subscribes
// to every row and then reads nothing. The process's resident memory is sampled every 50 ms: server, clients and
// writer share it, so the difference between the phases is what the hostile subscription costs. Phase 3 runs beside
// five clients that scan every row (`title CONTAINS[cd] "…"`, which no index helps), one `Query` after another: the
// fan-out reads the log on its own connection, so what the scans take from the others is CPU.

import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import MeridianClient
import MeridianCore
import MeridianProto
import MeridianServer
import MeridianStore
import Synchronization

enum BoundsBenchmark {
    static func run() async throws {
        let rows = Int(ProcessInfo.processInfo.environment["MERIDIAN_BENCH_ROWS"] ?? "") ?? 1_000_000
        let store = try Store.temporary(schema: ServerBenchmark.schema(), logger: benchLogger)
        let fill = ContinuousClock.now
        for start in stride(from: 0, to: rows, by: 10_000) {
            try await store.apply(
                (start..<min(rows, start + 10_000)).map {
                    .insert(
                        "Bench", id: "old\($0)", ["title": .string("old row \($0)"), "stamp": .int(0), "qty": .int(1)])
                })
        }
        print("bounds benchmark: \(rows) rows written in \((ContinuousClock.now - fill).spoken); 100 clients")
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.logRetention = .unlimited
        let server = MeridianServer(store: store, configuration: configuration, logger: benchLogger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let port = try await server.listeningAddress.port
            print(
                ServerBenchmark.pad("phase", 62) + ServerBenchmark.pad("p50 ms", 8) + ServerBenchmark.pad("p99 ms", 8)
                    + "process RSS MB (start, peak)")
            let quiet = try await self.phase(port: port, index: 0)
            print(self.line("100 clients", quiet))
            let hostile = Task {
                try await self.hostileClient(port: port)
            }
            // Let it subscribe and its snapshot start before the others connect.
            try await Task.sleep(for: .seconds(1))
            let loud = try await self.phase(port: port, index: 1)
            print(self.line("the same, beside one subscribed to every row, never reading", loud))
            hostile.cancel()
            _ = try? await hostile.value
            // Five clients scanning every row with a predicate no index helps, one Query after another.
            let scans = ScanCounts()
            let scanners = Task {
                try await withThrowingTaskGroup(of: Void.self) { scanners in
                    for _ in 0..<5 {
                        scanners.addTask { try await self.scanner(port: port, counts: scans) }
                    }
                    try await scanners.waitForAll()
                }
            }
            try await Task.sleep(for: .seconds(1))
            let scanned = try await self.phase(port: port, index: 2)
            scanners.cancel()
            _ = try? await scanners.value
            print(self.line("the same, beside five CONTAINS[cd] scans of every row", scanned))
            print(
                "  (\(scans.finished.load(ordering: .relaxed)) scans finished, \(scans.failed.load(ordering: .relaxed)) failed, "
                    + "in the phase and the second before it)")
            server.beginGracefulShutdown()
            try await group.waitForAll()
        }
    }

    struct PhaseFigure {
        var figure: ServerBenchmark.Figure
        var startRSS: Int
        var peakRSS: Int
    }

    static func line(_ name: String, _ phase: PhaseFigure) -> String {
        ServerBenchmark.pad(name, 62) + ServerBenchmark.pad(ServerBenchmark.ms(phase.figure.p50), 8)
            + ServerBenchmark.pad(ServerBenchmark.ms(phase.figure.p99), 8)
            + "\(phase.startRSS >> 20), \(phase.peakRSS >> 20)"
    }

    /// 100 clients on the rows of this phase, a writer at 200 commits/s for 2 s, and the process's peak RSS.
    static func phase(port: Int, index: Int) async throws -> PhaseFigure {
        let start = Self.residentBytes()
        let peak = Mutex(start)
        let sampler = Task {
            while !Task.isCancelled {
                let now = Self.residentBytes()
                peak.withLock { $0 = max($0, now) }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        defer { sampler.cancel() }
        let title = "phase \(index)"
        let transport = try ServerBenchmark.clientTransport(port: port)
        let figure = try await withGRPCClient(transport: transport) { writerClient in
            let writer = Meridian_V1_Meridian.Client(wrapping: writerClient)
            return try await ServerBenchmark.drive(
                clients: 100, rowsPerCommit: 1, rate: 200,
                connect: { collector, ready, expected in
                    try await ServerBenchmark.meridianClient(
                        port: port, collector: collector, ready: ready, expected: expected,
                        predicate: "title == \"\(title)\"")
                },
                write: { commit, stamp in
                    let operation = WriteOperation.insert(
                        "Bench", id: "p\(index)-\(commit)",
                        ["title": .string(title), "stamp": .int(stamp), "qty": .int(0)])
                    _ = try await writer.apply(Meridian_V1_ApplyRequest([operation]))
                })
        }
        sampler.cancel()
        return PhaseFigure(figure: figure, startRSS: start, peakRSS: peak.withLock { $0 })
    }

    /// Subscribes to every row over a 64 KiB window and never reads past the Welcome, until cancelled.
    static func hostileClient(port: Int) async throws {
        let transport = try HTTP2ClientTransport.Posix(
            target: .ipv4(address: "127.0.0.1", port: port), transportSecurity: .plaintext,
            config: {
                var config = ServerAddress.transportConfig
                config.http2.targetWindowSize = 64 << 10
                return config
            }())
        try await withGRPCClient(transport: transport) { client in
            let meridian = Meridian_V1_Meridian.Client(wrapping: client)
            try await meridian.sync(
                requestProducer: { writer in
                    var hello = Meridian_V1_SyncRequest()
                    hello.hello = Meridian_V1_Hello()
                    hello.hello.protocolVersion = ProtocolVersion.current
                    try await writer.write(hello)
                    var subscribe = Meridian_V1_SyncRequest()
                    subscribe.subscribe.subscriptionID = "everything"
                    subscribe.subscribe.fetch = Meridian_V1_FetchRequest(entity: "Bench")
                    try await writer.write(subscribe)
                    try await Task.sleep(for: .seconds(3_600))
                },
                onResponse: { response in
                    for try await _ in response.messages {
                        // Reads the Welcome, then nothing: the server must not hold the snapshot for it.
                        try await Task.sleep(for: .seconds(3_600))
                    }
                })
        }
    }

    /// The scans that finished and failed.
    final class ScanCounts: Sendable {
        let finished = Atomic<Int>(0)
        let failed = Atomic<Int>(0)
    }

    /// Runs `Query`s of every row whose title contains a text no row holds (a full scan each) until cancelled.
    static func scanner(port: Int, counts: ScanCounts) async throws {
        let transport = try ServerBenchmark.clientTransport(port: port)
        try await withGRPCClient(transport: transport) { client in
            let meridian = Meridian_V1_Meridian.Client(wrapping: client)
            var request = Meridian_V1_QueryRequest()
            request.fetch = Meridian_V1_FetchRequest(entity: "Bench")
            request.fetch.predicate = "title CONTAINS[cd] \"no such title\""
            while !Task.isCancelled {
                do {
                    try await meridian.query(request) { response in
                        for try await _ in response.messages {}
                    }
                    counts.finished.add(1, ordering: .relaxed)
                } catch is CancellationError {
                    return
                } catch {
                    if Task.isCancelled { return }
                    counts.failed.add(1, ordering: .relaxed)
                }
            }
        }
    }

    /// The process's resident set (`VmRSS`), in bytes.
    static func residentBytes() -> Int { RegionsBenchmark.residentBytes(of: getpid()) }
}
