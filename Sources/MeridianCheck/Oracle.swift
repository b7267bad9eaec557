// MARK: - Oracle: the store's state at any seq, rebuilt from its change log

internal import Foundation
internal import MeridianClient
public import MeridianCore
public import MeridianStore

/// Replays the store's change log (read through `Store.changes(after:)` on the same file the server serves) into a
/// per-row history, so the state at any `seq` — the one a client reports, however old — can be rebuilt and the
/// client's fetch requests evaluated on it in memory (`LiveResults`, the same engine and order as the server's).
///
/// Expected digests are cached by (request, seq): every client holds the same controllers, so each state is
/// evaluated once.
public struct Oracle: Sendable {
    private let store: Store
    /// Per row id, its versions in seq order: `(seq, row after the change or nil when deleted)`.
    private var history: [String: [(seq: Int64, row: Row?)]] = [:]
    /// Every id ever seen, in UTF-8 order (the order's final tie-break), so rows come out pre-sorted by id.
    private var ids: [String] = []
    /// The last seq replayed.
    public private(set) var seq: Int64 = 0
    /// The number of changes replayed.
    public private(set) var changeCount = 0
    private var rowsCache: (seq: Int64, rows: [Row])?
    private var expectedCache: [String: (count: Int, digest: String)] = [:]
    private let bound: [String: BoundFetchRequest]

    /// Opens the store file alongside the server (the schema must match the server's).
    public init(path: String) throws {
        self.store = try Store.open(path: path, schema: Workload.schema)
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
                var low = 0
                var high = self.ids.count
                while low < high {
                    let mid = (low + high) / 2
                    if self.ids[mid].utf8.lexicographicallyPrecedes(change.id.utf8) {
                        low = mid + 1
                    } else {
                        high = mid
                    }
                }
                self.ids.insert(change.id, at: low)
            }
            self.history[change.id, default: []].append((change.seq, change.after))
            self.changeCount += 1
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
            // The last version at or before `seq` (binary search; versions are in seq order).
            var low = 0
            var high = versions.count
            while low < high {
                let mid = (low + high) / 2
                if versions[mid].seq <= seq { low = mid + 1 } else { high = mid }
            }
            if low > 0, let row = versions[low - 1].row { rows.append(row) }
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
        let list = Self.sectioned(bound.evaluate(self.rows(at: seq)), by: bound.sectionKey)
        let expected = (list.count, StateDigest.of(list))
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
        let annotations = self.rows(at: seq).filter(bound.matches).compactMap { configuration.annotation(for: $0) }
            .map {
                (id: $0.id, latitude: $0.coordinate.latitude, longitude: $0.coordinate.longitude, title: $0.title)
            }
        let expected = (annotations.count, StateDigest.ofAnnotations(annotations))
        self.remember(key, expected)
        return expected
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
