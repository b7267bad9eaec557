// MARK: - The oracle's views against a state rebuilt from scratch

import MeridianClient
import MeridianCore
import MeridianStore
import Testing

@testable import MeridianCheck

@Suite struct OracleTests {
    /// Random inserts, updates and deletes of 300 ids as the store's change log gives them.
    static func changes(_ count: Int, from start: Int64, over rows: inout [String: Row], _ random: inout SeededRandom)
        -> [Change]
    {
        (0..<count).map { i in
            let seq = start + Int64(i)
            let id = Workload.randomID(&random)
            let before = rows[id]
            let after: Row?
            let kind: Change.Kind
            switch (before, random.int(in: 0...9)) {
            case (nil, _):
                (kind, after) = (.insert, Row(id: id, values: Workload.randomValues(&random)))
            case (let old?, 0...6):
                var row = old
                for (name, value) in Workload.randomUpdate(&random) { row[name] = value }
                (kind, after) = (.update, row)
            default:
                (kind, after) = (.delete, nil)
            }
            rows[id] = after
            return Change(
                seq: seq, entity: Workload.entity, id: id, kind: kind, version: 1, before: before, after: after,
                changedAttributes: [], committedAt: Timestamp(microseconds: seq))
        }
    }

    /// The rows at `seq`, replayed from the start of `log` (independent of the oracle's history and views).
    static func rows(at seq: Int64, _ log: [Change]) -> [Row] {
        var rows: [String: Row] = [:]
        for change in log where change.seq <= seq { rows[change.id] = change.after }
        return rows.values.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
    }

    @Test(
        "every controller's and map's state at any seq, read from views moved back and forth, is the state rebuilt from scratch"
    )
    func viewsMatchScratch() async throws {
        var oracle = try Oracle(store: Store.temporary(schema: Workload.schema))
        var random = SeededRandom(seed: 17)
        var current: [String: Row] = [:]
        var log: [Change] = []
        let readers: [Principal?] = [nil, Workload.readerPrincipal(client: 0), Workload.readerPrincipal(client: 1)]
        let regions: [[Double]] = [[-10, -10, 10, 10], [-3, -2, 4, 5], [0, 0, 2, 2]]
        var checked = 0
        for round in 0..<4 {
            // Batches of changes, then reads at seqs near the newest (small moves forward and back) and anywhere in
            // the log so far (moves across it, and views built anew).
            for _ in 0..<5 {
                let batch = Self.changes(150, from: Int64(log.count) + 1, over: &current, &random)
                log += batch
                oracle.apply(ChangeBatch(changes: batch, throughSeq: Int64(log.count), hasMore: false))
            }
            for _ in 0..<150 {
                let last = Int64(log.count)
                let seq =
                    random.chance(0.6)
                    ? max(0, last - Int64(random.int(in: 0...40))) : Int64(random.int(in: 0...Int(last)))
                let reader = random.element(of: readers)
                let rows = Self.rows(at: seq, log)
                if random.chance(0.8) {
                    let spec = random.element(of: Workload.controllers)
                    var bound = try spec.request.bind(to: Workload.schema)
                    if let reader { bound = bound.restricted(by: Workload.access(reader)) }
                    let list = Oracle.sectioned(bound.evaluate(rows), by: bound.sectionKey)
                    let expected = try oracle.expected(controller: spec.name, at: seq, reader: reader)
                    #expect(
                        expected.count == list.count && expected.digest == StateDigest.of(list),
                        "round \(round): '\(spec.name)' at seq \(seq) of \(last)")
                } else {
                    let region = random.element(of: regions)
                    var bound = try Workload.mapRequest(region: region).bind(to: Workload.schema)
                    if let reader { bound = bound.restricted(by: Workload.access(reader)) }
                    let configuration = MapConfiguration(latitude: "latitude", longitude: "longitude", title: "title")
                    let annotations = rows.filter(bound.matches).compactMap { configuration.annotation(for: $0) }
                        .map {
                            (
                                id: $0.id, latitude: $0.coordinate.latitude, longitude: $0.coordinate.longitude,
                                title: $0.title
                            )
                        }
                    let expected = try oracle.expectedMap(region: region, at: seq, reader: reader)
                    #expect(
                        expected.count == annotations.count
                            && expected.digest == StateDigest.ofAnnotations(annotations),
                        "round \(round): the map over \(region) at seq \(seq) of \(last)")
                }
                checked += 1
            }
        }
        #expect(checked == 600)
        // Most states came from views moved along the log, not from scratch.
        #expect(oracle.viewBuilds * 3 < oracle.viewReads)
    }
}
