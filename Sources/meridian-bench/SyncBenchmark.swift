// MARK: - Initial sync benchmark
//
// `meridian-bench sync [--rows 200000] [--json]`
//
// A new client subscribing to every row of a store: from `controller(for:)` until the controller is loaded and
// ready (the snapshot streamed by meridian-server from SQLite in chunks, decoded, cached and sorted into the
// controller), against the ceiling — a trivial gRPC service streaming the same rows, pre-encoded as snapshot chunks of
// about 1 MiB, to a client that decodes every message and drops it. Both in this process, over loopback HTTP/2. Also
// the client's memory, per row, next to the rows' encoded size: resident bytes once the load has settled minus before,
// and the allocator's bytes in use once the load has settled minus before. The allocator's free memory is given back
// to the system (`malloc_trim`) before each resident reading: the resident set also keeps what was freed, so without
// it the figure swung with what the process had allocated and freed before (the raw run, the snapshot's passage) —
// down to 1 byte a row in one run. The bytes in use are what the loaded rows hold, the server's share of this process
// included.
//
// The figure is a throughput (rows/s); its ratio is Meridian's over the ceiling's (the goal: at least 0.5).

import CMeridianHeap
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import MeridianClient
import MeridianCore
import MeridianProto
import MeridianServer
import MeridianStore
import SwiftProtobuf
import Synchronization

enum SyncBenchmark {
    static func run(arguments: [String]) async throws {
        var rows = 200_000
        var json = false
        var i = 0
        while i < arguments.count {
            switch arguments[i] {
            case "--rows" where i + 1 < arguments.count:
                rows = max(1, Int(arguments[i + 1]) ?? rows)
                i += 1
            case "--json": json = true
            default:
                FileHandle.standardError.write(Data("usage: meridian-bench sync [--rows 200000] [--json]\n".utf8))
                exit(2)
            }
            i += 1
        }
        let printer = FigurePrinter(json: json)
        for figure in try await self.figures(rows: rows, printer: printer) { printer.print(figure) }
    }

    /// The initial sync of `rows` rows and the client's memory, as figures.
    static func figures(rows: Int = 200_000, printer: FigurePrinter) async throws -> [BenchFigure] {
        printer.note("sync: a new client subscribing to \(rows) rows until its controller is ready")
        let store = try Store.temporary(schema: ServerBenchmark.schema(), logger: benchLogger)
        var start = 0
        while start < rows {
            let end = min(rows, start + 10_000)
            try await store.apply(
                (start..<end).map { r in
                    .insert(
                        "Bench", id: "r\(r)",
                        ["title": .string("row \(r)"), "stamp": .int(Int64(r)), "qty": .int(Int64(r % 100))])
                })
            start = end
        }

        // The ceiling first (it allocates less), then Meridian.
        let (rawSeconds, payloadBytes) = try await Self.raw(store: store, rows: rows)
        let (meridianSeconds, residentBytes, heapBytes) = try await Self.meridian(store: store, rows: rows)
        printer.note(
            String(
                format: "  meridian %.3f s, raw gRPC %.3f s; %d rows of %.0f encoded bytes each", meridianSeconds,
                rawSeconds, rows, Double(payloadBytes) / Double(rows)))
        return [
            BenchFigure(
                bench: "sync", name: "\(rows) rows into a ready controller, rows/s",
                value: Double(rows) / meridianSeconds, unit: "rows/s", ceiling: Double(rows) / rawSeconds),
            BenchFigure(
                bench: "sync", name: "client resident bytes per row held (ceiling: the row's encoded bytes)",
                value: Double(residentBytes) / Double(rows), unit: "bytes", ceiling: Double(payloadBytes) / Double(rows)
            ),
            BenchFigure(
                bench: "sync", name: "client heap bytes in use per row held (ceiling: the row's encoded bytes)",
                value: Double(heapBytes) / Double(rows), unit: "bytes", ceiling: Double(payloadBytes) / Double(rows)),
        ]
    }

    /// Meridian: seconds from `controller(for:)` to a loaded controller, the resident bytes it added, and the heap
    /// bytes in use it added once settled.
    static func meridian(store: Store, rows: Int) async throws -> (Double, Int, Int) {
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.logRetention = .unlimited
        let server = MeridianServer(store: store, configuration: configuration, logger: benchLogger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { server.beginGracefulShutdown() }
            let port = try await server.listeningAddress.port
            let container = try await MeridianContainer(
                .init(server: "127.0.0.1:\(port)", schema: try ServerBenchmark.schema(), logger: benchLogger))
            let connection = Task { await container.run() }
            defer { connection.cancel() }
            meridian_heap_trim()
            let before = ClientBenchmark.heapInUse()
            let heapBefore = meridian_heap_in_use()
            let started = ContinuousClock.now
            let controller = try await container.controller(for: try FetchRequest(entity: "Bench"))
            try await controller.waitUntilLoaded()
            let elapsed = ContinuousClock.now - started
            guard controller.count == rows else {
                throw BulkBenchmark.BenchError(description: "the controller holds \(controller.count) of \(rows) rows")
            }
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            // The step that loaded the controller finishes after waking its waiters (the first load's change set,
            // delivered to no one here, is freed then).
            try await Task.sleep(for: .milliseconds(200))
            let heapAfter = meridian_heap_in_use()
            meridian_heap_trim()
            let after = ClientBenchmark.heapInUse()
            withExtendedLifetime(controller) {}
            server.beginGracefulShutdown()
            connection.cancel()
            try await group.waitForAll()
            return (seconds, after - before, Int(heapAfter) - Int(heapBefore))
        }
    }

    /// The ceiling: the same rows as snapshot chunks of about 1 MiB, streamed by a trivial service and decoded (then
    /// dropped) by the client. Seconds from the first message sent to the last decoded, and the rows' encoded bytes.
    static func raw(store: Store, rows: Int) async throws -> (Double, Int) {
        let snapshot = try await store.snapshot(entity: "Bench")
        var messages: [[UInt8]] = []
        var chunk = Meridian_V1_SnapshotChunk()
        chunk.subscriptionID = "all"
        var chunkBytes = 0
        var payload = 0
        var index: UInt32 = 0
        func flush(last: Bool) throws {
            chunk.chunkIndex = index
            chunk.last = last
            var response = Meridian_V1_SyncResponse()
            response.snapshotChunk = chunk
            messages.append(try response.serializedBytes())
            index += 1
            chunk.rows.removeAll(keepingCapacity: true)
            chunkBytes = 0
        }
        for (row, version) in zip(snapshot.rows, snapshot.versions) {
            let encoded = Meridian_V1_Row(row, version: version)
            let size = (try encoded.serializedBytes() as [UInt8]).count
            payload += size
            chunk.rows.append(encoded)
            chunkBytes += size
            if chunkBytes >= 1 << 20 { try flush(last: false) }
        }
        try flush(last: true)

        let broadcast = Broadcast()
        let transport = ServerBenchmark.rawTransport()
        let server = GRPCServer(transport: transport, services: [RawService(broadcast: broadcast)])
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            let port = try await transport.listeningAddress.ipv4!.port
            let (subscribed, signal) = AsyncStream<Void>.makeStream()
            let done = Mutex<ContinuousClock.Instant?>(nil)
            group.addTask {
                let client = try ServerBenchmark.clientTransport(port: port)
                try await withGRPCClient(transport: client) { client in
                    try await client.serverStreaming(
                        request: ClientRequest(message: [UInt8]()), descriptor: RawService.method,
                        serializer: BytesCoding(), deserializer: SyncResponseDeserializer(), options: .defaults
                    ) { response in
                        var received = 0
                        var first = true
                        for try await message in response.messages {
                            if first {
                                first = false
                                signal.yield()
                                continue
                            }
                            if case .snapshotChunk(let chunk) = message.kind { received += chunk.rows.count }
                            if received >= rows { break }
                        }
                        done.withLock { $0 = .now }
                    }
                }
            }
            for await _ in subscribed { break }
            let started = ContinuousClock.now
            for message in messages { broadcast.send(message) }
            broadcast.finish()
            try await group.next()
            server.beginGracefulShutdown()
            try await group.waitForAll()
            let elapsed = (done.withLock { $0 } ?? .now) - started
            return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, payload)
        }
    }
}
