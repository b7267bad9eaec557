// MARK: - The many-clients case of the server benchmark
//
// `meridian-bench server --case regions [--clients 1000] [--rate 100] [--seconds 5] [--auth] [--json]`
//
// N clients connected to a `meridian-server` process, each subscribed to its own map region (a cell of a grid over
// latitude and longitude: N distinct subscriptions), while a writer commits 1-row transactions through the server's
// Apply at `rate` commits/s; each row lands in the next client's region, round robin. Measured:
// - p99 from just before the writer's Apply to the row's arrival at its client (both clocks are the machine's
//   monotonic clock), against the same run with 10 clients (the ceiling: the goal is within 3x);
// - the server's memory per idle connected client: the server process's resident set (`VmRSS`) once every client is
//   subscribed and idle, minus before the first one connected, over N (the goal: at most 64 KiB);
// - the same for N clients that said Hello and subscribed to nothing (a server of its own): what the stream costs
//   before any subscription, against a trivial gRPC server's idle stream (`raw-server`).
// The server is its own process so that its resident set is its own; the clients share this process and decode by
// hand (as the other server cases do). With `--auth`, the server checks JWTs (`--auth jwt`, an HS256 secret) and every
// client and the writer carry a token of their own subject, valid for an hour.

import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import GRPCProtobuf
import MeridianAuth
import MeridianCore
import MeridianProto
import Synchronization

enum RegionsBenchmark {
    static let schemaYAML = """
        version: 1
        entities:
          Place:
            id: client
            attributes:
              title: string
              stamp: int
              latitude: double
              longitude: double
        """

    struct Options {
        var clients = 1_000
        var rate = 100
        var seconds = 5
        var auth = false
        var json = false
    }

    static let usage =
        "usage: meridian-bench server --case regions [--clients 1000] [--rate 100] [--seconds 5] [--auth] [--json]"

    static func run(arguments: [String]) async throws {
        var options = Options()
        var i = 0
        func number(_ flag: String) -> Int {
            guard i + 1 < arguments.count, let value = Int(arguments[i + 1]), value > 0 else {
                FileHandle.standardError.write(Data("error: \(flag) takes a positive number\n\(usage)\n".utf8))
                exit(2)
            }
            i += 1
            return value
        }
        while i < arguments.count {
            switch arguments[i] {
            case "--clients": options.clients = number("--clients")
            case "--rate": options.rate = number("--rate")
            case "--seconds": options.seconds = number("--seconds")
            case "--auth": options.auth = true
            case "--json": options.json = true
            default:
                FileHandle.standardError.write(Data("error: unknown argument '\(arguments[i])'\n\(usage)\n".utf8))
                exit(2)
            }
            i += 1
        }
        let printer = FigurePrinter(json: options.json)
        for figure in try await self.figures(options, printer: printer) { printer.print(figure) }
    }

    /// The case's figures: p99 with N clients (ceiling: with 10), and the server's bytes per idle client.
    static func figures(_ options: Options, printer: FigurePrinter) async throws -> [BenchFigure] {
        let bin = try BulkBenchmark.binDirectory(needing: ["meridian-server"])
        printer.note(
            "regions: \(options.clients) clients on their own map regions, \(options.rate) 1-row commits/s for "
                + "\(options.seconds) s through a meridian-server process\(options.auth ? " checking JWTs" : ""); "
                + "ceiling: the same with 10 clients")
        let clients = "\(options.clients)\(options.auth ? " authenticated" : "") clients"
        let few = try await self.measure(bin: bin, clients: min(10, options.clients), options)
        let many = try await self.measure(bin: bin, clients: options.clients, options)
        let helloOnly = try await self.measureHelloOnly(bin: bin, clients: options.clients, options)
        let raw = try await self.measureRawIdle(clients: options.clients)
        printer.note(
            String(
                format: "  10 clients: p50 %.2f ms, p99 %.2f ms; %d clients: p50 %.2f ms, p99 %.2f ms",
                few.p50, few.p99, options.clients, many.p50, many.p99))
        printer.note(
            String(
                format: "  server memory per idle client: %.1f KiB; raw gRPC per idle stream (a trivial service, "
                    + "one stream per connection): %.1f KiB",
                many.bytesPerClient / 1024, raw / 1024))
        printer.note(
            String(
                format: "  of which before any subscription (clients that said Hello only): %.1f KiB",
                helloOnly / 1024))
        return [
            BenchFigure(
                bench: "server", name: "p99 write to client (the durable commit included), \(clients) on own regions",
                value: many.p99, unit: "ms", ceiling: few.p99),
            BenchFigure(
                bench: "server", name: "server memory per idle client, \(clients)",
                value: many.bytesPerClient / 1024, unit: "KiB", ceiling: 64),
            BenchFigure(
                bench: "server", name: "server memory per idle client over raw gRPC's, \(clients)",
                value: many.bytesPerClient / 1024, unit: "KiB", ceiling: raw / 1024),
            BenchFigure(
                bench: "server",
                name: "server memory per idle client that said Hello only, over raw gRPC's, \(clients)",
                value: helloOnly / 1024, unit: "KiB", ceiling: raw / 1024),
        ]
    }

    struct Measured {
        var p50: Double
        var p99: Double
        var bytesPerClient: Double
    }

    /// A fresh `meridian-server` process taking `clients` connections (its store and schema in a directory of its
    /// own; checking JWTs with `--auth`), stopped once `body` returns: `body` gets its port, its process and the
    /// clients' signer.
    static func withServer<T>(
        bin: String, clients: Int, _ options: Options, name: String,
        _ body: (_ port: Int, _ server: Process, _ signer: SigningKey?) async throws -> T
    ) async throws -> T {
        let directory = NSTemporaryDirectory() + "meridian-bench-\(name)-\(getpid())-\(clients)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.schemaYAML.write(toFile: directory + "/regions.yaml", atomically: true, encoding: .utf8)
        var authentication: [String] = []
        var signer: SigningKey?
        if options.auth {
            let secret = directory + "/hs256.secret"
            try String(repeating: "b", count: 48).write(toFile: secret, atomically: true, encoding: .utf8)
            authentication = ["--auth", "jwt", "--jwt-key", secret]
            signer = try await SigningKey.load(contentsOf: secret)
        }
        let (server, address) = try BulkBenchmark.startServer(
            bin: bin, db: directory + "/store.sqlite", schema: directory + "/regions.yaml",
            ["--max-connections", String(clients + 16)] + authentication)
        defer { BulkBenchmark.stop(server) }
        guard let port = Int(address.split(separator: ":").last ?? "") else {
            throw BulkBenchmark.BenchError(description: "meridian-server printed an address without a port: \(address)")
        }
        return try await body(port, server, signer)
    }

    /// Starts `clients` clients in `group` (`client(index, ready)` each, calling `ready` once it is idle) and returns
    /// once every one is ready.
    static func connect(
        _ clients: Int, in group: inout ThrowingTaskGroup<Void, any Error>,
        _ client: @escaping @Sendable (_ index: Int, _ ready: @escaping @Sendable () -> Void) async throws -> Void
    ) async {
        let (readyStream, readyContinuation) = AsyncStream<Void>.makeStream()
        for index in 0..<clients {
            group.addTask { try await client(index, { readyContinuation.yield() }) }
        }
        var ready = 0
        for await _ in readyStream {
            ready += 1
            if ready == clients { break }
        }
    }

    /// One run on a fresh server process.
    static func measure(bin: String, clients: Int, _ options: Options) async throws -> Measured {
        try await Self.withServer(bin: bin, clients: clients, options, name: "regions") { port, server, signer in
            try await self.measure(port: port, server: server, signer: signer, clients: clients, options)
        }
    }

    private static func measure(
        port: Int, server: Process, signer: SigningKey?, clients: Int, _ options: Options
    ) async throws -> Measured {
        let grid = Grid(cells: clients)
        let commits = options.rate * options.seconds
        let collector = Latencies()
        return try await withThrowingTaskGroup(of: Void.self) { group in
            let before = self.residentBytes(of: server.processIdentifier)
            await self.connect(clients, in: &group) { index, ready in
                try await self.client(
                    port: port, predicate: grid.predicate(index),
                    metadata: try await self.metadata(signer, subject: "client\(index)"), collector: collector,
                    ready: ready)
            }
            try await Task.sleep(for: .seconds(1))
            let idle = self.residentBytes(of: server.processIdentifier)
            try await self.write(
                port: port, commits: commits, rate: options.rate, grid: grid,
                metadata: try await self.metadata(signer, subject: "writer"))
            let deadline = ContinuousClock.now + .seconds(30)
            while collector.count < commits, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            group.cancelAll()
            let latencies = collector.sorted
            guard latencies.count == commits else {
                throw BulkBenchmark.BenchError(
                    description: "\(latencies.count) of \(commits) rows reached their client within 30 s")
            }
            func percentile(_ p: Double) -> Double {
                Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) / 1e6
            }
            return Measured(
                p50: percentile(0.5), p99: percentile(0.99),
                bytesPerClient: Double(idle - before) / Double(clients))
        }
    }

    /// The server's resident bytes per idle stream of `clients` clients that said Hello, subscribed to nothing and
    /// got their Welcome, on a fresh server process: the part of ``measure(bin:clients:_:)``'s figure a stream costs
    /// before its first subscription.
    static func measureHelloOnly(bin: String, clients: Int, _ options: Options) async throws -> Double {
        try await Self.withServer(bin: bin, clients: clients, options, name: "regions-hello") { port, server, signer in
            try await self.idleBytesPerClient(of: server, clients: clients) { index, ready in
                try await ServerBenchmark.idleClient(
                    port: port, predicate: nil, metadata: try await self.metadata(signer, subject: "client\(index)"),
                    ready: ready)
            }
        }
    }

    /// The resident bytes `server` gained per client once `clients` clients (`client(index, ready)` each) were all
    /// ready, and a second later.
    static func idleBytesPerClient(
        of server: Process, clients: Int,
        _ client: @escaping @Sendable (_ index: Int, _ ready: @escaping @Sendable () -> Void) async throws -> Void
    ) async throws -> Double {
        try await withThrowingTaskGroup(of: Void.self) { group in
            let before = self.residentBytes(of: server.processIdentifier)
            await self.connect(clients, in: &group, client)
            try await Task.sleep(for: .seconds(1))
            let idle = self.residentBytes(of: server.processIdentifier)
            group.cancelAll()
            return Double(idle - before) / Double(clients)
        }
    }

    /// The transport's own floor: the resident bytes per idle stream of a trivial gRPC server process
    /// (`meridian-bench raw-server`, the raw service of the server cases), with `clients` connections each holding one
    /// server-streaming call that has written its first message and waits for more.
    static func measureRawIdle(clients: Int) async throws -> Double {
        let (server, output) = try BulkBenchmark.start(CommandLine.arguments[0], ["raw-server"])
        defer { BulkBenchmark.stop(server) }
        let line = BulkBenchmark.readLine(output)
        guard line.hasPrefix("listening on "), let port = Int(line.split(separator: ":").last ?? "") else {
            throw BulkBenchmark.BenchError(description: "meridian-bench raw-server did not start (said '\(line)')")
        }
        return try await self.idleBytesPerClient(of: server, clients: clients) { _, ready in
            let transport = try ServerBenchmark.clientTransport(port: port)
            try await withGRPCClient(transport: transport) { client in
                try await client.serverStreaming(
                    request: ClientRequest(message: [UInt8]()), descriptor: RawService.method,
                    serializer: BytesCoding(), deserializer: BytesCoding(), options: .defaults
                ) { response in
                    for try await _ in response.messages { ready() }
                }
            }
        }
    }

    /// Serves the raw service (`meridian-bench raw-server`) on 127.0.0.1, a port of the OS's choosing, until killed;
    /// prints `listening on 127.0.0.1:PORT` first.
    static func serveRaw() async throws {
        let transport = ServerBenchmark.rawTransport()
        let server = GRPCServer(transport: transport, services: [RawService(broadcast: Broadcast())])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            let port = try await transport.listeningAddress.ipv4!.port
            print("listening on 127.0.0.1:\(port)")
            fflush(nil)
            try await group.waitForAll()
        }
    }

    /// A call's metadata for `subject`: its token (valid for an hour) when the server checks them, else none.
    static func metadata(_ signer: SigningKey?, subject: String) async throws -> Metadata {
        guard let signer else { return [:] }
        let token = try await signer.sign(subject: subject, claims: [:], lifetime: .seconds(3_600))
        return ["authorization": "Bearer \(token)"]
    }

    /// The writer: `commits` 1-row inserts at `rate` commits/s, row i in region i mod the cells, stamped just before
    /// its Apply.
    static func write(port: Int, commits: Int, rate: Int, grid: Grid, metadata: Metadata) async throws {
        let transport = try ServerBenchmark.clientTransport(port: port)
        try await withGRPCClient(transport: transport) { client in
            let meridian = Meridian_V1_Meridian.Client(wrapping: client)
            let interval = Duration.seconds(1) / rate
            var deadline = ContinuousClock.now
            for index in 0..<commits {
                deadline += interval
                try await Task.sleep(until: deadline, clock: .continuous)
                let (latitude, longitude) = grid.center(index % grid.cells)
                var request = Meridian_V1_ApplyRequest()
                request.operations = [
                    Meridian_V1_Operation(
                        kind: .insert, entity: "Place", id: "p\(index)",
                        values: [
                            "title": .string("place \(index)"), "stamp": .int(ServerBenchmark.now()),
                            "latitude": .double(latitude), "longitude": .double(longitude),
                        ])
                ]
                let response = try await meridian.apply(request, metadata: metadata)
                if case .error(let detail) = response.outcome {
                    throw BulkBenchmark.BenchError(description: "the writer's Apply failed: \(detail.message)")
                }
            }
        }
    }

    /// A client on its own region: subscribes, says when its (empty) snapshot shows, then records each row's latency
    /// until cancelled (it stays connected while the others receive).
    static func client(
        port: Int, predicate: String, metadata: Metadata, collector: Latencies,
        ready: @escaping @Sendable () -> Void
    ) async throws {
        let (requests, continuation) = ServerBenchmark.helloAndSubscribe(
            "region", entity: "Place", predicate: predicate)
        defer { continuation.finish() }
        try await ServerBenchmark.syncCall(port: port, metadata: metadata, requests: requests) { response in
            for try await message in response.messages {
                switch message.kind {
                case .batch(let batch):
                    let now = ServerBenchmark.now()
                    for delta in batch.deltas {
                        if delta.snapshot { ready() }
                        for row in delta.entered {
                            if case .intValue(let stamp) = row.values["stamp"]?.kind {
                                collector.add(now - stamp)
                            }
                        }
                    }
                case .subscriptionError(let error):
                    throw BulkBenchmark.BenchError(
                        description: "subscription refused: \(error.error.message) (\(predicate))")
                default: break
                }
            }
        }
    }

    /// Cells of a grid over latitude −80…80 and longitude −180…180, one per client.
    struct Grid: Sendable {
        var cells: Int
        var columns: Int
        var rows: Int

        init(cells: Int) {
            self.cells = cells
            self.columns = max(1, Int(Double(cells * 2).squareRoot().rounded(.up)))
            self.rows = (cells + self.columns - 1) / self.columns
        }

        func bounds(_ index: Int) -> (south: Double, north: Double, west: Double, east: Double) {
            let height = 160 / Double(self.rows)
            let width = 360 / Double(self.columns)
            let south = -80 + Double(index / self.columns) * height
            let west = -180 + Double(index % self.columns) * width
            return (south, south + height, west, west + width)
        }

        func predicate(_ index: Int) -> String {
            let b = self.bounds(index)
            return
                "latitude >= \(b.south) AND latitude < \(b.north) AND longitude >= \(b.west) AND longitude < \(b.east)"
        }

        func center(_ index: Int) -> (Double, Double) {
            let b = self.bounds(index)
            return ((b.south + b.north) / 2, (b.west + b.east) / 2)
        }
    }

    /// Every client's latencies, in nanoseconds.
    final class Latencies: Sendable {
        private let values = Mutex<[Int64]>([])
        func add(_ value: Int64) { self.values.withLock { $0.append(value) } }
        var count: Int { self.values.withLock { $0.count } }
        var sorted: [Int64] { self.values.withLock { $0.sorted() } }
    }

    /// A process's resident set (`VmRSS` of /proc/PID/status), in bytes.
    static func residentBytes(of pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return (line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0) << 10
        }
        return 0
    }
}
