// MARK: - WriterRole: `meridian-check writer`, random seeded transactions through a client context

internal import Foundation
public import Logging
internal import MeridianClient
internal import MeridianCore
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// One writer process: random transactions through `CacheContext` writes and `save(policy:)` — inserts, updates
/// that move rows into and out of predicates and across sections, deletes, updates with expected versions (some
/// deliberately stale) under both policies, and now and then a bulk insert or delete of hundreds of rows. Each
/// transaction's outcome (confirmed at a seq, or reverted with a code) is reported; one that stays pending longer
/// than `stuckAfter` is reported as a violation. SIGTERM ends it after the transaction in flight.
public struct WriterRole: Sendable {
    public var server: String
    public var index: Int
    public var seed: UInt64
    public var pauseMs: Int
    public var stuckAfter: Duration
    /// Under `--auth`: who the writer commits as.
    public var identity: Identity?

    public init(
        server: String, index: Int, seed: UInt64, pauseMs: Int, stuckAfter: Duration = .seconds(60),
        identity: Identity? = nil
    ) {
        self.server = server
        self.index = index
        self.seed = seed
        self.pauseMs = pauseMs
        self.stuckAfter = stuckAfter
        self.identity = identity
    }

    public func run(logger: Logger, stop: StopFlag) async throws {
        var configuration = try MeridianContainer.Configuration(
            server: self.server, schema: Workload.schema, clientName: "meridian-check-writer", logger: logger)
        configuration.validatesChangeSets = true
        configuration.credentials = try await self.identity?.credentials()
        let container = try await MeridianContainer(configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await container.run() }
            group.addTask { await exitWhenOrphaned() }
            // Every row, so that updates can expect the version the writer last saw.
            let rows = try await container.controller(for: try FetchRequest(entity: Workload.entity))
            try await rows.waitUntilLoaded()
            var ready = Report(kind: "ready")
            ready.process = "writer"
            ReportOutput.print(ready)

            var random = SeededRandom(seed: self.seed, stream: 100 + UInt64(self.index))
            // The bulks inserted (confirmed) and not deleted yet.
            var bulk: [[String]] = []
            var bulkCounter = 0
            while !stop.isSet {
                let context = container.context
                let operation: String
                var ops = 0
                let policy: ConflictPolicy = random.chance(0.5) ? .storeWins : .clientWins
                let roll = random.int(in: 0...99)
                // Remembered once the insert is confirmed; put back when the delete is reverted (a server kill, a
                // full disk): a table meant to stay about one size grew to 35,000 rows in a 600 s soak, every
                // bulk a reverted transaction touched being left in the store for good.
                var insertedBulk: [String]?
                var deletedBulk: [String]?
                if roll < 3 {
                    operation = "bulk-insert"
                    bulkCounter += 1
                    let ids = (0..<random.int(in: 100...300)).map { "w\(self.index)-b\(bulkCounter)-\($0)" }
                    for id in ids {
                        try await context.insert(into: Workload.entity, id: id, values: Workload.randomValues(&random))
                    }
                    insertedBulk = ids
                    ops = ids.count
                } else if roll < 7, !bulk.isEmpty {
                    // A bulk delete is a little likelier than a bulk insert, so that the table stays about the same
                    // size however long the soak runs (it used to grow to 130,000 rows in 30 minutes, and every
                    // client incarnation then spent its life loading its cache).
                    operation = "bulk-delete"
                    // Only the rows the writer still sees (a single delete may have taken some): deleting a missing
                    // row reverts the whole transaction.
                    // None seen: not yet (a bulk just confirmed), or gone one by one; kept for later either way.
                    let present = Set(rows.rows.lazy.map(\.id))
                    let oldest = bulk.removeFirst()
                    let ids = oldest.filter(present.contains)
                    if ids.isEmpty {
                        bulk.append(oldest)
                        continue
                    }
                    for id in ids { try await context.delete(Workload.entity, id: id) }
                    deletedBulk = ids
                    ops = ids.count
                } else if roll < 30 {
                    operation = "insert"
                    for _ in 0..<random.int(in: 1...3) {
                        try await context.insert(
                            into: Workload.entity, id: Workload.randomID(&random),
                            values: Workload.randomValues(&random))
                        ops += 1
                    }
                } else if roll < 70 {
                    operation = "update"
                    for _ in 0..<random.int(in: 1...3) {
                        let id = Self.existingID(rows, &random)
                        let version = await context.version(of: Workload.entity, id: id)
                        try await context.update(
                            Workload.entity, id: id, values: Workload.randomUpdate(&random),
                            expectedVersion: random.chance(0.5) ? version : nil)
                        ops += 1
                    }
                } else if roll < 85 {
                    operation = "stale-update-\(policy)"
                    let id = Self.existingID(rows, &random)
                    let version = await context.version(of: Workload.entity, id: id)
                    try await context.update(
                        Workload.entity, id: id, values: Workload.randomUpdate(&random),
                        expectedVersion: version.map { max(1, $0 - Int64(random.int(in: 1...2))) })
                    ops = 1
                } else {
                    operation = "delete"
                    let id = Self.existingID(rows, &random)
                    let version = await context.version(of: Workload.entity, id: id)
                    try await context.delete(
                        Workload.entity, id: id, expectedVersion: random.chance(0.5) ? version : nil)
                    ops = 1
                }
                let transaction = await context.save(policy: policy)
                var report = Report(kind: "txn")
                report.operation = operation
                report.ops = ops
                switch await Self.outcome(of: transaction, within: self.stuckAfter) {
                case .confirmed(let seq):
                    report.outcome = "confirmed"
                    report.seq = seq
                    if let insertedBulk { bulk.append(insertedBulk) }
                case .reverted(let code, let message):
                    if let deletedBulk { bulk.append(deletedBulk) }  // tried again after the others
                    report.outcome = "reverted"
                    report.code = code
                    report.message = String(message.prefix(300))
                case .stuck:
                    var violation = Report(kind: "violation")
                    violation.message =
                        "writer \(self.index): a \(operation) transaction of \(ops) operations is still pending after \(self.stuckAfter)"
                    ReportOutput.print(violation)
                    report.outcome = "stuck"
                }
                ReportOutput.print(report)
                if self.pauseMs > 0 { try await Task.sleep(for: .milliseconds(random.int(in: 0...(2 * self.pauseMs)))) }
            }
            ReportOutput.print(Report(kind: "done"))
            group.cancelAll()
        }
    }

    /// An id that is probably cached (so expected versions are real), else a random one.
    private static func existingID(_ rows: ResultsController<Row>, _ random: inout SeededRandom) -> String {
        let count = rows.count
        guard count > 0, random.chance(0.9) else { return Workload.randomID(&random) }
        return rows.rows[random.int(in: 0...(count - 1))].id
    }

    enum Outcome: Sendable {
        case confirmed(Int64)
        case reverted(String, String)
        case stuck
    }

    /// Waits for the transaction's outcome, at most `limit`. `confirmed()` does not end on cancellation, so the two
    /// waits are unstructured tasks racing to resume one continuation (the loser's result is dropped).
    static func outcome(of transaction: PendingTransaction, within limit: Duration) async -> Outcome {
        let slot = ContinuationSlot()
        return await withCheckedContinuation { continuation in
            slot.set(continuation)
            Task {
                do {
                    slot.resume(.confirmed(try await transaction.confirmed()))
                } catch let error as ClientError {
                    slot.resume(.reverted(error.code.description, error.message))
                } catch {
                    slot.resume(.reverted("unknown", "\(error)"))
                }
            }
            Task {
                try? await Task.sleep(for: limit)
                slot.resume(.stuck)
            }
        }
    }
}

/// A continuation resumed once, by whichever caller comes first.
final class ContinuationSlot: Sendable {
    private let continuation = Mutex<CheckedContinuation<WriterRole.Outcome, Never>?>(nil)

    func set(_ continuation: CheckedContinuation<WriterRole.Outcome, Never>) {
        self.continuation.withLock { $0 = continuation }
    }

    func resume(_ outcome: WriterRole.Outcome) {
        self.continuation.withLock { $0.take() }?.resume(returning: outcome)
    }
}

/// Set by SIGTERM: the writer finishes the transaction in flight, reports `done` and exits.
public final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    public var isSet: Bool { self.flag.load(ordering: .sequentiallyConsistent) }

    public func set() { self.flag.store(true, ordering: .sequentiallyConsistent) }
}
