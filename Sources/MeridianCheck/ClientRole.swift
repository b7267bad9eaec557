// MARK: - ClientRole: `meridian-check client`, one replicating client that reports every state it reaches

internal import Foundation
public import Logging
internal import MeridianClient
internal import MeridianCore
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// One client process: every controller of ``Workload/controllers`` plus a map in region mode whose region moves,
/// each driving a model that changes only by applying change sets (so an invalid change set throws). After every
/// change it prints the model's digest at the change's seq; the checker compares it with the store at that seq.
public struct ClientRole: Sendable {
    public var server: String
    public var cachePath: String
    public var seed: UInt64
    /// Skips applying one remote change to one list model: a deliberate discrepancy the checker must catch.
    public var corrupt: Bool
    /// Under `--auth`: who the client connects as.
    public var identity: Identity?

    public init(server: String, cachePath: String, seed: UInt64, corrupt: Bool, identity: Identity? = nil) {
        self.server = server
        self.cachePath = cachePath
        self.seed = seed
        self.corrupt = corrupt
        self.identity = identity
    }

    public func run(logger: Logger) async throws {
        var configuration = try MeridianContainer.Configuration(
            server: self.server, cache: .file(self.cachePath), schema: Workload.schema, clientName: "meridian-check",
            logger: logger)
        configuration.validatesChangeSets = true
        configuration.credentials = try await self.identity?.credentials()
        let container = try await MeridianContainer(configuration)
        var ready = Report(kind: "ready")
        ready.process = "client"
        ReportOutput.print(ready)

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await container.run() }
            group.addTask { await exitWhenOrphaned() }
            group.addTask {
                for await status in container.connectionStatusUpdates() where status == .connected {
                    ResyncClock.shared.mark()
                    ReportOutput.print(Report(kind: "connected"))
                }
            }
            var controllers: [String: ResultsController<Row>] = [:]
            for spec in Workload.controllers {
                let controller: ResultsController<Row>
                if let parent = spec.narrows.flatMap({ controllers[$0] }) {
                    controller = try await container.controller(for: spec.request, as: Row.self, narrowing: parent)
                } else {
                    controller = try await container.controller(for: spec.request)
                }
                controllers[spec.name] = controller
                let corruptThis = self.corrupt && spec.name == "all-by-id"
                group.addTask {
                    try await Self.follow(controller, name: spec.name, corrupt: corruptThis)
                }
            }
            var firstRegion = SeededRandom(seed: self.seed, stream: 1)
            let regions = RegionState(Workload.randomRegion(&firstRegion))
            let map = try await container.mapController(
                for: try FetchRequest(entity: Workload.entity),
                configuration: MapConfiguration(
                    latitude: Workload.mapAttributes.latitude, longitude: Workload.mapAttributes.longitude,
                    title: Workload.mapAttributes.title),
                region: Self.region(regions.current))
            group.addTask { try await Self.follow(map, regions: regions) }
            let seed = self.seed
            group.addTask {
                var random = SeededRandom(seed: seed, stream: 2)
                while !Task.isCancelled {
                    try await Task.sleep(for: .milliseconds(random.int(in: 300...1500)))
                    let next = Workload.randomRegion(&random)
                    regions.begin(next)
                    do {
                        try await map.setRegion(Self.region(next))
                        regions.finish(atSeq: map.controller.seq)
                    } catch {
                        regions.abandon()
                    }
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    private static func region(_ box: [Double]) -> MapRegion {
        MapRegion(south: box[0], west: box[1], north: box[2], east: box[3])
    }

    /// Applies every change of `controller` to a list model and reports its state.
    private static func follow(_ controller: ResultsController<Row>, name: String, corrupt: Bool) async throws {
        var list = ListModel<Row>(sectioned: controller.request.sectionKey != nil)
        var remoteChanges = 0
        // A controller whose subscription has no rows yet (not cached) starts empty at the cached seq: that is "not
        // loaded", not a claim about the store, so its initial state is not reported.
        var skipInitial = !controller.isLoaded
        var diverged = false
        for try await change in controller.changes() {
            if change.cause == .remote { remoteChanges += 1 }
            if corrupt, remoteChanges == 20, change.cause == .remote, !change.changeSet.isEmpty {
                continue  // the self-test's deliberate discrepancy: this change never reaches the list
            }
            do {
                try list.apply(change)
            } catch {
                var report = Report(kind: "violation")
                report.controller = name
                report.seq = change.seq
                report.message = "the \(change.cause) change set at seq \(change.seq) does not apply: \(error)"
                ReportOutput.print(report)
                list = ListModel(controller.snapshot().list, seq: change.seq, sectioned: list.isSectioned)
            }
            if change.cause == .initial, skipInitial {
                skipInitial = false
                continue
            }
            // Cached rows the server has not confirmed for a new request: not a claim about the store.
            if change.isProvisional { continue }
            // When no later change has been applied yet, the list must equal what the controller shows: a
            // difference means the change stream itself diverged from the controller's state (checked after every
            // snapshot, replace or initial change, and every tenth remote one, to bound the cost).
            let compare = !diverged && (change.cause != .remote || remoteChanges % 10 == 0)
            let (seq, shown) = compare ? controller.snapshot() : (-1, SectionedList())
            if compare, seq == change.seq, shown != list.list {
                diverged = true
                var report = Report(kind: "violation")
                report.controller = name
                report.seq = seq
                report.message =
                    "controller '\(name)': after the \(change.cause) change at seq \(seq) the list built from change sets "
                    + "(\(list.list.count) rows) differs from the controller (\(shown.count) rows): "
                    + (list.inconsistency(with: controller) ?? "values differ")
                ReportOutput.print(report)
            }
            if change.cause == .snapshot { ResyncClock.shared.mark() }
            var report = Report(kind: "state")
            report.sinceResync = ResyncClock.shared.elapsedMilliseconds
            report.controller = name
            report.seq = change.seq
            report.cause = change.cause.description
            report.count = list.list.count
            report.digest = StateDigest.of(list.list)
            ReportOutput.print(report)
        }
    }

    /// Applies every map update to a map model and reports the placed annotations.
    private static func follow(_ map: MapController, regions: RegionState) async throws {
        var iterator = map.updates().makeAsyncIterator()
        var skipInitial = !map.controller.isLoaded
        while let update = try await iterator.next() {
            if update.cause == .initial, skipInitial {
                skipInitial = false
                continue
            }
            // Annotations the server has not confirmed for a new region (moved offline, or before the first
            // snapshot): not a claim about the store.
            if update.isProvisional { continue }
            let annotations = iterator.model.annotations.values.map {
                (id: $0.id, latitude: $0.coordinate.latitude, longitude: $0.coordinate.longitude, title: $0.title)
            }
            if update.cause == .snapshot { ResyncClock.shared.mark() }
            var report = Report(kind: "map")
            report.sinceResync = ResyncClock.shared.elapsedMilliseconds
            report.seq = update.seq
            report.cause = update.cause.description
            report.regions = regions.candidates(at: update.seq)
            report.count = annotations.count
            report.digest = StateDigest.ofAnnotations(annotations)
            ReportOutput.print(report)
        }
    }
}

/// The map's regions, each with the seq the controller had reached when `setRegion` returned (so the region was in
/// force at that seq at the latest). Region k's replace took effect at some seq X(k) with
/// Y(k-1) <= X(k) <= Y(k), so at seq S region k may be in force only if Y(k-1) <= S <= Y(k+1): the candidates
/// for an update follow from seqs alone, however late the update is read.
final class RegionState: Sendable {
    private let entries: Mutex<[(region: [Double], installedBy: Int64?)]>

    init(_ initial: [Double]) {
        self.entries = Mutex([(initial, Int64.min)])
    }

    var current: [Double] { self.entries.withLock { $0.last!.region } }

    /// The regions that may be in force at `seq`.
    func candidates(at seq: Int64) -> [[Double]] {
        self.entries.withLock { entries in
            entries.indices.filter { k in
                let low = k == 0 || (entries[k - 1].installedBy ?? .max) <= seq
                let high = k + 1 >= entries.count || (entries[k + 1].installedBy ?? .max) >= seq
                return low && high
            }.map { entries[$0].region }
        }
    }

    /// A move starts.
    func begin(_ region: [Double]) {
        self.entries.withLock { entries in
            entries.append((region, nil))
            if entries.count > 500 { entries.removeFirst(entries.count - 500) }
        }
    }

    /// The move returned with the controller at `seq`.
    func finish(atSeq seq: Int64) {
        self.entries.withLock { $0[$0.count - 1].installedBy = seq }
    }

    /// The move failed: the old region stays in force.
    func abandon() {
        self.entries.withLock { _ = $0.popLast() }
    }
}

/// When the client last (re)connected or applied a snapshot: reports carry the time since, so that the checker can
/// tell violations inside a resynchronisation window from others.
final class ResyncClock: Sendable {
    static let shared = ResyncClock()
    private let last = Mutex<ContinuousClock.Instant?>(nil)

    func mark() { self.last.withLock { $0 = .now } }

    var elapsedMilliseconds: Int? {
        self.last.withLock { last in
            last.map { Int(($0.duration(to: .now)).components.seconds * 1000) }
        }
    }
}

// MARK: - Output

/// Prints reports to stdout, one whole line per write, from any task.
public enum ReportOutput {
    private static let lock = Mutex(())

    public static func print(_ report: Report) {
        let data = Data((report.line + "\n").utf8)
        self.lock.withLock { _ in FileHandle.standardOutput.write(data) }
    }
}

/// Returns (ending the role) when the checker that started this process is gone, so no child outlives it.
func exitWhenOrphaned() async {
    let parent = getppid()
    while !Task.isCancelled {
        if getppid() != parent { exit(3) }
        try? await Task.sleep(for: .milliseconds(500))
    }
}

/// A log handler that forwards warnings and errors to stderr (or, with `MERIDIAN_CHECK_LOG_LEVEL` set in the
/// soak's environment, every message from that level up) and turns the client's change-set validation failures
/// (`validatesChangeSets`) and its refusals of what the server sent (a Batch it cannot apply as the protocol says,
/// which the client answers by reconnecting, so that nothing wrong shows) into violation reports.
public struct ViolationLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    private let label: String

    public init(label: String) {
        self.label = label
        let name = ProcessInfo.processInfo.environment["MERIDIAN_CHECK_LOG_LEVEL"] ?? ""
        self.logLevel = Logger.Level(rawValue: name) ?? .warning
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = self.metadata
        for (key, value) in event.metadata ?? [:] { all[key] = value }
        let text = "\(event.level) \(self.label): \(event.message) \(all.isEmpty ? "" : "\(all)")"
        FileHandle.standardError.write(Data((text + "\n").utf8))
        if Self.isViolation("\(event.message)") {
            var report = Report(kind: "violation")
            report.message = "the client logged: \(text)"
            ReportOutput.print(report)
        }
    }

    /// Whether a client's log message reports a violation.
    package static func isViolation(_ message: String) -> Bool {
        message.contains("failed validation") || message.hasPrefix(ConnectionLog.protocolBreach)
    }
}
