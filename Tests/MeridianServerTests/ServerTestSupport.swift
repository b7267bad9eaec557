// Helpers for the server tests: stores, fetch requests, a client-side mirror of subscription results, and running a
// scenario over both transports.

import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import MeridianCore
import MeridianProto
import MeridianServer
import MeridianStore
import MeridianTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The transports every scenario runs over.
enum Wire: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inProcess, http2
    var testDescription: String { self.rawValue }
}

enum Fixtures {
    /// The package root (three levels above this file).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    static let demoSchemaPath = root + "/Schemas/demo.yaml"

    static func demoSchema() throws -> Schema {
        try Schema.load(contentsOf: demoSchemaPath)
    }

    /// A temporary file store with the demo schema.
    static func store() throws -> Store {
        try Store.temporary(schema: demoSchema())
    }

    /// Test configuration: short heartbeats, so that waiting for a seq never waits long.
    static func configuration(_ configure: (inout ServerConfiguration) -> Void = { _ in }) -> ServerConfiguration {
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.heartbeatInterval = .milliseconds(50)
        configure(&configuration)
        return configuration
    }

    /// A wire fetch request.
    static func fetch(
        _ entity: String = "Point", _ predicate: String = "", sort: [(String, Bool)] = [], limit: UInt32? = nil,
        variables: [String: WireVariable] = [:]
    ) -> Meridian_V1_FetchRequest {
        Meridian_V1_FetchRequest(
            entity: entity, predicate: predicate, variables: variables,
            sort: sort.map { (attribute: $0.0, ascending: $0.1) }, limit: limit)
    }

    /// A point row's values.
    static func point(_ title: String, category: Int64 = 0, lat: Double? = nil, lon: Double? = nil) -> [String: Value] {
        var values: [String: Value] = ["title": .string(title), "category": .int(category)]
        if let lat { values["latitude"] = .double(lat) }
        if let lon { values["longitude"] = .double(lon) }
        return values
    }
}

/// Runs `body` against a server for `store` over `wire`, with a client.
func onWire(
    _ wire: Wire,
    store: Store,
    configuration: ServerConfiguration = Fixtures.configuration(),
    _ body: (any Meridian_V1_Meridian.ClientProtocol) async throws -> Void
) async throws {
    switch wire {
    case .inProcess:
        try await withInProcessServer(store: store, configuration: configuration) { _, client in
            try await body(Meridian_V1_Meridian.Client(wrapping: client))
        }
    case .http2:
        try await withTestServer(store: store, configuration: configuration) { _, port in
            try await withHTTP2Client(port: port) { client in
                try await body(Meridian_V1_Meridian.Client(wrapping: client))
            }
        }
    }
}

// MARK: - Mirror

/// What a client holds: each subscription's rows by id, and the seq it is at. Applies the stream by the protocol's
/// one rule (a SnapshotChunk is staged, a Batch applies its deltas and the snapshots it names) and checks that the
/// seq of batches never decreases and that every delta applies to what the subscription shows.
struct Mirror {
    var seq: Int64 = 0
    var results: [String: [String: Meridian_V1_Row]] = [:]
    /// Snapshots being received or received whole, not yet applied by a Batch.
    var chunks: [String: [Meridian_V1_Row]] = [:]
    var complete: [String: Bool] = [:]
    var resnapshotFlags: [String: Bool] = [:]
    var snapshotsReceived: [String: Int] = [:]
    var resnapshots = 0
    /// For each Batch that applied re-snapshots: the subscriptions it re-snapshotted.
    var resnapshotBatches: [Set<String>] = []
    var batches = 0
    var replaced: Set<String> = []
    var errors: [Meridian_V1_SubscriptionError] = []
    /// The parts received of a Batch sent in parts (`continued`), applied with its last part.
    var heldBatch: Meridian_V1_Batch?
    /// How many Batch messages were parts of a larger Batch.
    var batchParts = 0
    /// The seq of each snapshot being received (its first chunk's).
    var snapshotSeqs: [String: Int64] = [:]
    /// The seq of the last snapshot each subscription applied.
    var appliedSnapshotSeqs: [String: Int64] = [:]

    /// Applies one response; returns it for inspection.
    @discardableResult
    mutating func apply(_ response: Meridian_V1_SyncResponse) -> Meridian_V1_SyncResponse {
        switch response.kind {
        case .welcome:
            break
        case .snapshotChunk(let chunk):
            // A snapshot may be older than the batches before it (one streamed from a read that began earlier); the
            // batch that applies it carries what changed since, and is checked below.
            if chunk.chunkIndex == 0 {
                self.chunks[chunk.subscriptionID] = []
                self.snapshotSeqs[chunk.subscriptionID] = chunk.seq
            }
            #expect(chunk.seq == self.snapshotSeqs[chunk.subscriptionID], "a snapshot's chunks at different seqs")
            self.chunks[chunk.subscriptionID, default: []].append(contentsOf: chunk.rows)
            self.complete[chunk.subscriptionID] = chunk.last
            self.resnapshotFlags[chunk.subscriptionID] = chunk.resnapshot
        case .batch(let part):
            if part.continued || self.heldBatch != nil { self.batchParts += 1 }
            var batch = part
            if var held = self.heldBatch {
                #expect(held.seq == part.seq, "a Batch part at \(part.seq) after parts at \(held.seq)")
                held.deltas += part.deltas
                held.continued = part.continued
                batch = held
                self.heldBatch = nil
            }
            if batch.continued {
                self.heldBatch = batch
                return response
            }
            #expect(batch.seq >= self.seq, "a batch at \(batch.seq) after seq \(self.seq)")
            self.seq = max(self.seq, batch.seq)
            self.batches += 1
            var resnapshotted: Set<String> = []
            defer { if !resnapshotted.isEmpty { self.resnapshotBatches.append(resnapshotted) } }
            for delta in batch.deltas {
                if delta.snapshot {
                    #expect(
                        self.complete[delta.subscriptionID] == true,
                        "a batch names the snapshot of \(delta.subscriptionID), which did not arrive whole")
                    let rows = self.chunks.removeValue(forKey: delta.subscriptionID) ?? []
                    self.complete[delta.subscriptionID] = nil
                    let snapshotSeq = self.snapshotSeqs.removeValue(forKey: delta.subscriptionID) ?? 0
                    #expect(snapshotSeq <= batch.seq, "a batch at \(batch.seq) applies a snapshot at \(snapshotSeq)")
                    self.appliedSnapshotSeqs[delta.subscriptionID] = snapshotSeq
                    self.results[delta.subscriptionID] = Dictionary(
                        rows.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
                    self.snapshotsReceived[delta.subscriptionID, default: 0] += 1
                    if self.resnapshotFlags.removeValue(forKey: delta.subscriptionID) == true {
                        self.resnapshots += 1
                        resnapshotted.insert(delta.subscriptionID)
                    }
                }
                if delta.replaced { self.replaced.insert(delta.subscriptionID) }
                var rows = self.results[delta.subscriptionID] ?? [:]
                for id in delta.left {
                    #expect(rows[id] != nil, "\(id) left \(delta.subscriptionID) without being in it")
                    rows[id] = nil
                }
                for row in delta.entered {
                    #expect(rows[row.id] == nil, "\(row.id) entered \(delta.subscriptionID) twice")
                    rows[row.id] = row
                }
                for update in delta.updated {
                    #expect(
                        rows[update.row.id] != nil, "\(update.row.id) updated in \(delta.subscriptionID) but absent")
                    rows[update.row.id] = update.row
                }
                self.results[delta.subscriptionID] = rows
            }
        case .heartbeat(let heartbeat):
            #expect(heartbeat.seq >= self.seq, "a heartbeat at \(heartbeat.seq) after seq \(self.seq)")
            self.seq = max(self.seq, heartbeat.seq)
        case .subscriptionError(let error):
            self.errors.append(error)
        case .goodbye, nil:
            break
        }
        return response
    }

    /// Says Hello on `stream` and subscribes `id` to `fetch` (every Point): the mirror once it applied the snapshot.
    static func subscribed(
        _ stream: SyncStream, _ id: String = "all", _ fetch: Meridian_V1_FetchRequest = Fixtures.fetch("Point")
    ) async throws -> Mirror {
        stream.hello()
        var mirror = Mirror()
        mirror.apply(try await stream.nextMessage())
        stream.subscribe(id, fetch)
        try await mirror.awaitSnapshot(stream, id)
        return mirror
    }

    /// Reads and applies responses until the mirror is at `seq` or later with no snapshot waiting for its batch.
    ///
    /// Throws ``SubscriptionEnded`` when, meanwhile, the server ends a subscription whose snapshot is staged (its
    /// batch would never come).
    mutating func catchUp(_ stream: SyncStream, to seq: Int64) async throws {
        let known = self.errors.count
        while self.seq < seq || !self.chunks.isEmpty {
            self.apply(try await stream.next())
            if let ended = self.errors[known...].first(where: { $0.ended && self.chunks[$0.subscriptionID] != nil }) {
                throw SubscriptionEnded(error: ended)
            }
        }
    }

    /// Reads and applies responses until a Batch has applied `id`'s snapshot (counting from `count`).
    /// Throws ``SubscriptionEnded`` when the server ends the subscription meanwhile (heartbeats would otherwise keep
    /// the wait going until the test's time limit, with no word of why).
    mutating func awaitSnapshot(_ stream: SyncStream, _ id: String, count: Int = 1) async throws {
        let known = self.errors.count
        while self.snapshotsReceived[id, default: 0] < count {
            self.apply(try await stream.next())
            if let ended = self.errors[known...].first(where: { $0.subscriptionID == id && $0.ended }) {
                throw SubscriptionEnded(error: ended)
            }
        }
    }

    /// The ids held for a subscription, sorted.
    func ids(_ id: String) -> [String] {
        (self.results[id] ?? [:]).keys.sorted()
    }
}

/// A subscription a test waits on was ended by the server.
struct SubscriptionEnded: Error, CustomStringConvertible {
    var error: Meridian_V1_SubscriptionError
    var description: String {
        "the server ended subscription '\(error.subscriptionID)': \(error.error.code) \(error.error.message)"
    }
}

/// The result of `fetch` on the store right now, by id, as wire rows.
func directQuery(_ store: Store, _ fetch: Meridian_V1_FetchRequest) async throws -> [String: Meridian_V1_Row] {
    let bound = try bindForTest(fetch, store.schema)
    let snapshot = try await store.snapshot(bound)
    var out: [String: Meridian_V1_Row] = [:]
    for (row, version) in zip(snapshot.rows, snapshot.versions) {
        out[row.id] = Meridian_V1_Row(row, version: version)
    }
    return out
}

/// Binds a wire fetch request in a test.
func bindForTest(_ fetch: Meridian_V1_FetchRequest, _ schema: Schema) throws -> BoundFetchRequest {
    let variables = try fetch.decodedVariables().mapValues { variable -> PredicateVariable in
        switch variable {
        case .value(let value): .value(value)
        case .list(let values): .list(values)
        }
    }
    var request = try FetchRequest(
        entity: fetch.entity, where: fetch.predicate, variables: variables,
        limit: fetch.hasLimit ? Int(fetch.limit) : nil)
    request.order = RowOrder(fetch.sort.map { SortKey($0.attribute, ascending: !$0.descending) })
    return try request.bind(to: schema)
}

/// Commits `operations` and returns the commit's seq.
@discardableResult
func commit(_ store: Store, _ operations: [WriteOperation]) async throws -> Int64 {
    try await store.apply(operations).seq
}

/// Runs `sql` in the sqlite3 shell (another process writing the store's file) and returns its exit status; off the
/// cooperative pool, since waiting for a process blocks a thread.
func sqlite3(_ path: String, _ sql: String) async -> Int32 {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
            process.arguments = [path, sql]
            do {
                try process.run()
                process.waitUntilExit()
                continuation.resume(returning: process.terminationStatus)
            } catch {
                continuation.resume(returning: -1)
            }
        }
    }
}

// MARK: - Raw sockets

/// Plain TCP sockets to a local port, for connections that do not speak gRPC (silent ones, hand-made HTTP/2).
enum RawSocket {
    /// HTTP/2's client connection preface and an empty SETTINGS frame: what a client sends first.
    static let http2Preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0]

    /// Opens a blocking TCP connection to 127.0.0.1:`port`.
    static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        return fd
    }

    /// Writes all of `bytes`.
    static func send(_ fd: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }

    /// Waits until the server has closed each of `fds` (a read returns end of file, or the connection was reset),
    /// reading and dropping what the server sent before (its HTTP/2 settings); gives up at `deadline`.
    ///
    /// - Returns: The sockets the server has not closed by then.
    static func awaitClosed(_ fds: [Int32], until deadline: ContinuousClock.Instant) async -> Set<Int32> {
        var open = Set(fds)
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while !open.isEmpty, ContinuousClock.now < deadline {
            var polls = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&polls, nfds_t(polls.count), 0)
            if ready > 0 {
                for entry in polls where entry.revents != 0 {
                    let n = recv(entry.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                    if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { open.remove(entry.fd) }
                }
            }
            if ready <= 0 { try? await Task.sleep(for: .milliseconds(50)) }
        }
        return open
    }
}
