// MARK: - Oracle: the store's state at any seq, rebuilt from its change log

internal import Foundation
internal import MeridianClient
public import MeridianCore
public import MeridianStore

/// Replays the store's change log (read through `Store.changes(after:)` on the same file the server serves) into a
/// per-row history, so the state at any `seq` — the one a client reports, however old — can be rebuilt and the
/// client's fetch requests evaluated on it in memory by a plain filter and sort, independent of the order-statistic
/// engine (`LiveResults`) the server and the clients use.
///
/// Evaluating every report from scratch cost a sort of every row per (request, seq), and a soak's clients report
/// several states per commit, at seqs of their own: the checker fell minutes behind a soak of a few minutes. So each
/// request's sorted rows are kept in views, each at a position in the log, and a report's state is read from the
/// nearest view moved along the log to its seq (each change between: the row's old image out, its new one in, by
/// binary search in the request's order) — or from a new view built from scratch when every view is further away
/// than ``longestMove`` changes. Every ``fullCheckInterval``-th state is also evaluated from scratch and compared, so a view
/// that drifted is a failure of the checker, never a wrong verdict.
///
/// Expected digests are cached by (request, seq): every client holds the same controllers, so each state is
/// evaluated once.
public struct Oracle: Sendable {
    /// One replayed change: the row before and after it (nil where it did not exist).
    private struct Step {
        var seq: Int64
        var before: Row?
        var after: Row?
    }

    /// A request's matching rows at one point of the log, sorted by the request's order, without its limit.
    private struct View {
        /// The number of log steps the rows reflect (the state after `log[..<position]`).
        var position: Int
        var rows: [Row]
        var lastUse: Int
    }

    /// Views kept for one request (one controller or map region, one reader): clients at different seqs each keep
    /// one near them.
    static let viewsPerRequest = 6
    /// Requests whose views are kept; the least recently used go first (a map's region moves every second or so).
    static let keptRequests = 64
    /// Every this many states evaluated from a view are also evaluated from scratch and compared.
    static let fullCheckInterval = 100
    /// The most changes a view is moved through; a state further from every view is evaluated from scratch. An
    /// insert or a delete moves the view's rows after it (32 bytes a row): at 35,000 rows, about 50 µs a change,
    /// where a view from scratch takes about 40 ms. (A bound of the store's row count let views move through
    /// 10,000 changes and more, and a 600 s soak's checker spent half its time in `memmove`.)
    static let longestMove = 512

    private let store: Store
    /// Per row id, its versions in seq order: `(seq, row after the change or nil when deleted)`.
    private var history: [String: [(seq: Int64, row: Row?)]] = [:]
    /// Every id ever seen, in UTF-8 order (the order's final tie-break), so rows come out pre-sorted by id.
    private var ids: [String] = []
    /// Every change replayed, in seq order.
    private var log: [Step] = []
    /// The last seq replayed.
    public private(set) var seq: Int64 = 0
    /// The number of changes replayed.
    public var changeCount: Int { self.log.count }
    private var rowsCache: (seq: Int64, rows: [Row])?
    private var expectedCache: [String: (count: Int, digest: String)] = [:]
    private let bound: [String: BoundFetchRequest]
    private var views: [String: [View]] = [:]
    private var uses = 0
    /// The states read from views, and how many of them were also evaluated from scratch.
    private(set) var viewReads = 0
    private(set) var viewBuilds = 0
    private(set) var fullChecks = 0

    /// Opens the store file alongside the server (the schema must match the server's).
    public init(path: String) throws {
        try self.init(store: Store.open(path: path, schema: Workload.schema))
    }

    /// Reads the change log of `store` (which must have ``Workload/schema``).
    init(store: Store) throws {
        self.store = store
        var bound: [String: BoundFetchRequest] = [:]
        for spec in Workload.controllers {
            bound[spec.name] = try spec.request.bind(to: Workload.schema)
        }
        self.bound = bound
    }

    /// The changes after the oracle's seq (at most 5,000); apply them with ``apply(_:)``.
    ///
    /// - Throws: ``CheckError`` when the log no longer holds the changes after `seq` (it must never be pruned during
    ///   a run), or the store's error.
    public func fetchNext() async throws -> ChangeBatch {
        switch try await self.store.changes(after: self.seq, entities: [Workload.entity], limit: 5000) {
        case .tooOld(let prunedThrough):
            throw CheckError(
                "the store's change log was pruned through seq \(prunedThrough), past the oracle's seq \(self.seq)")
        case .changes(let batch):
            return batch
        }
    }

    /// Replays a batch read by ``fetchNext()``.
    public mutating func apply(_ batch: ChangeBatch) {
        for change in batch.changes where change.seq > self.seq {
            if self.history[change.id] == nil {
                let at = Self.firstIndex(in: self.ids.count) { !Self.utf8Order(self.ids[$0], change.id) }
                self.ids.insert(change.id, at: at)
            }
            let before = self.history[change.id]?.last?.row
            self.history[change.id, default: []].append((change.seq, change.after))
            self.log.append(Step(seq: change.seq, before: before, after: change.after))
        }
        self.seq = max(self.seq, batch.throughSeq)
    }

    /// Every row of the store at `seq` (which must not be beyond ``seq``), in id order.
    public mutating func rows(at seq: Int64) -> [Row] {
        if let cached = self.rowsCache, cached.seq == seq { return cached.rows }
        var rows: [Row] = []
        rows.reserveCapacity(self.history.count)
        for id in self.ids {
            let versions = self.history[id]!
            // The last version at or before `seq` (versions are in seq order).
            let after = Self.firstIndex(in: versions.count) { versions[$0].seq > seq }
            if after > 0, let row = versions[after - 1].row { rows.append(row) }
        }
        self.rowsCache = (seq, rows)
        return rows
    }

    /// The count and digest a controller named `name` must show at `seq` — to `reader`, when given: only the rows its
    /// read rule lets it see (``Workload/access(_:)``, the rules evaluated in Core, not by the server).
    public mutating func expected(controller name: String, at seq: Int64, reader: Principal? = nil) throws -> (
        count: Int, digest: String
    ) {
        let key = "\(name)@\(seq)/\(reader?.subject ?? "")"
        if let cached = self.expectedCache[key] { return cached }
        guard var bound = self.bound[name] else {
            throw CheckError("a client reported an unknown controller '\(name)'")
        }
        if let reader { bound = bound.restricted(by: Workload.access(reader)) }
        var rows = try self.matching(bound, key: "\(name)/\(reader?.subject ?? "")", at: seq)
        // A prefix copied, not the view's rows cut down (which would copy them all first).
        if let limit = bound.limit, rows.count > limit { rows = Array(rows.prefix(limit)) }
        let list = Self.sectioned(rows, by: bound.sectionKey)
        let expected = (list.count, StateDigest.of(list))
        if self.viewReads % Self.fullCheckInterval == 0 {
            self.fullChecks += 1
            let full = Self.sectioned(bound.evaluate(self.rows(at: seq)), by: bound.sectionKey)
            guard full.count == expected.0, StateDigest.of(full) == expected.1 else {
                throw CheckError(
                    "the oracle's view of controller '\(name)' at seq \(seq) differs from a full evaluation "
                        + "(\(expected.0) rows against \(full.count)): a fault of the checker")
            }
        }
        self.remember(key, expected)
        return expected
    }

    /// The count and digest of the annotations a map over `region` must show at `seq` (to `reader`, when given): the
    /// rows in the region whose coordinate is valid.
    public mutating func expectedMap(region: [Double], at seq: Int64, reader: Principal? = nil) throws -> (
        count: Int, digest: String
    ) {
        let key = "map\(region)@\(seq)/\(reader?.subject ?? "")"
        if let cached = self.expectedCache[key] { return cached }
        var bound = try Workload.mapRequest(region: region).bind(to: Workload.schema)
        if let reader { bound = bound.restricted(by: Workload.access(reader)) }
        let configuration = MapConfiguration(
            latitude: Workload.mapAttributes.latitude, longitude: Workload.mapAttributes.longitude,
            title: Workload.mapAttributes.title)
        let inRegion = try self.matching(bound, key: "map\(region)/\(reader?.subject ?? "")", at: seq)
        if self.viewReads % Self.fullCheckInterval == 0 {
            self.fullChecks += 1
            guard self.rows(at: seq).filter(bound.matches).map(\.id) == inRegion.map(\.id).sorted(by: Self.utf8Order)
            else {
                throw CheckError(
                    "the oracle's view of the map region \(region) at seq \(seq) differs from a full evaluation: "
                        + "a fault of the checker")
            }
        }
        let annotations = inRegion.compactMap { configuration.annotation(for: $0) }
            .map {
                (id: $0.id, latitude: $0.coordinate.latitude, longitude: $0.coordinate.longitude, title: $0.title)
            }
        let expected = (annotations.count, StateDigest.ofAnnotations(annotations))
        self.remember(key, expected)
        return expected
    }

    // MARK: - Views

    /// The rows matching `request` at `seq`, in its order, without its limit: read from the nearest of `key`'s views,
    /// moved along the log to `seq`, or from a new view evaluated from scratch when every view is more than
    /// ``longestMove`` changes from `seq`.
    ///
    /// - Throws: ``CheckError`` when a view misses a row it must hold (a fault of the checker).
    private mutating func matching(_ request: BoundFetchRequest, key: String, at seq: Int64) throws -> [Row] {
        self.uses += 1
        self.viewReads += 1
        let target = self.position(of: seq)
        var views = self.views.removeValue(forKey: key) ?? []
        let nearest = views.indices.min { abs(views[$0].position - target) < abs(views[$1].position - target) }
        let chosen: Int
        if let nearest, abs(views[nearest].position - target) <= Self.longestMove {
            chosen = nearest
            try self.move(&views[chosen], to: target, request: request, key: key)
        } else {
            self.viewBuilds += 1
            let order = request.order
            let rows = self.rows(at: seq).filter(request.matches).sorted { order.compare($0, $1) < 0 }
            let view = View(position: target, rows: rows, lastUse: 0)
            if views.count < Self.viewsPerRequest {
                views.append(view)
                chosen = views.count - 1
            } else {
                chosen = views.indices.min { views[$0].lastUse < views[$1].lastUse }!
                views[chosen] = view
            }
        }
        views[chosen].lastUse = self.uses
        let rows = views[chosen].rows
        self.views[key] = views
        if self.views.count > Self.keptRequests {
            let oldest = self.views.min { a, b in
                a.value.map(\.lastUse).max()! < b.value.map(\.lastUse).max()!
            }!
            self.views.removeValue(forKey: oldest.key)
        }
        return rows
    }

    private static func utf8Order(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

    /// The first index of `0..<count` where `isAtOrPast` holds (binary search: it must hold from some index on).
    private static func firstIndex(in count: Int, where isAtOrPast: (Int) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let mid = (low + high) / 2
            if isAtOrPast(mid) { high = mid } else { low = mid + 1 }
        }
        return low
    }

    /// The number of replayed changes at or before `seq`.
    private func position(of seq: Int64) -> Int {
        Self.firstIndex(in: self.log.count) { self.log[$0].seq > seq }
    }

    /// Moves `view` along the log to `target`: forward, each change's old image leaves and its new one enters; back,
    /// the other way round — each only where it matches the request.
    private func move(_ view: inout View, to target: Int, request: BoundFetchRequest, key: String) throws {
        let order = request.order
        func slot(of row: Row, in rows: [Row]) -> Int {
            Self.firstIndex(in: rows.count) { order.compare(rows[$0], row) >= 0 }
        }
        func replace(_ old: Row?, with new: Row?, in rows: inout [Row]) throws {
            if let old, request.matches(old) {
                let i = slot(of: old, in: rows)
                guard i < rows.count, rows[i] == old else {
                    throw CheckError(
                        "the oracle's view of '\(key)' does not hold row '\(old.id)': a fault of the checker")
                }
                if let new, request.matches(new) {
                    // Where the new image goes once the old one is out: an update that keeps its place (most do)
                    // is written over the old one, without moving the rows after it.
                    let c = order.compare(new, old)
                    let j = c == 0 ? i : c < 0 ? slot(of: new, in: rows) : slot(of: new, in: rows) - 1
                    if j == i {
                        rows[i] = new
                    } else {
                        rows.remove(at: i)
                        rows.insert(new, at: j)
                    }
                    return
                }
                rows.remove(at: i)
            }
            if let new, request.matches(new) { rows.insert(new, at: slot(of: new, in: rows)) }
        }
        if view.position < target {
            for step in self.log[view.position..<target] { try replace(step.before, with: step.after, in: &view.rows) }
        } else {
            for step in self.log[target..<view.position].reversed() {
                try replace(step.after, with: step.before, in: &view.rows)
            }
        }
        view.position = target
    }

    /// Sorted rows cut into sections where the section key's value changes: a plain filter-and-sort
    /// (`BoundFetchRequest.evaluate`), independent of the order-statistic engine clients and the server use.
    static func sectioned(_ rows: [Row], by sectionKey: String?) -> SectionedList<Row> {
        guard let sectionKey else { return SectionedList(unsectioned: rows) }
        var sections: [ListSection<Row>] = []
        for row in rows {
            let key = row[sectionKey]
            if let last = sections.last, Value.compare(last.key, key) == 0 {
                sections[sections.count - 1].elements.append(row)
            } else {
                sections.append(ListSection(key: key, name: key.displayText, elements: [row]))
            }
        }
        return SectionedList(sections: sections)
    }

    private mutating func remember(_ key: String, _ value: (count: Int, digest: String)) {
        if self.expectedCache.count > 20_000 { self.expectedCache.removeAll(keepingCapacity: true) }
        self.expectedCache[key] = value
    }
}

/// A failure of the checker itself (not of Meridian): bad arguments, a child that cannot start, an unreadable log.
public struct CheckError: Error, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { self.message }
}
