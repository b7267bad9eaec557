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

    @Test(
        "every controller's and map's state at any seq, read from views moved back and forth, is the state rebuilt from scratch"
    )
    func viewsMatchScratch() async throws {
        var oracle = try Oracle(store: Store.temporary(schema: Workload.schema))
        var random = SeededRandom(seed: 17)
        var current: [String: Row] = [:]
        var log: [Change] = []
        // The rows after each change (independent of the oracle's history and views): `states[seq]`.
        var states: [[String: Row]] = [[:]]
        let readers: [Principal?] = [nil, Workload.readerPrincipal(client: 0), Workload.readerPrincipal(client: 1)]
        let regions: [[Double]] = [[-10, -10, 10, 10], [-3, -2, 4, 5], [0, 0, 2, 2]]
        var checked = 0
        for round in 0..<3 {
            // Batches of changes, then reads at seqs near the newest (small moves forward and back) and anywhere in
            // the log so far (moves across it, and views built anew).
            for _ in 0..<4 {
                let batch = Self.changes(150, from: Int64(log.count) + 1, over: &current, &random)
                log += batch
                for change in batch {
                    var state = states[states.count - 1]
                    state[change.id] = change.after
                    states.append(state)
                }
                oracle.apply(ChangeBatch(changes: batch, throughSeq: Int64(log.count), hasMore: false))
            }
            for _ in 0..<120 {
                let last = Int64(log.count)
                let seq =
                    random.chance(0.6)
                    ? max(0, last - Int64(random.int(in: 0...40))) : Int64(random.int(in: 0...Int(last)))
                let reader = random.element(of: readers)
                let rows = states[Int(seq)].values.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
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
        #expect(checked == 360)
        // Most states came from views moved along the log, not from scratch.
        #expect(oracle.viewReads - oracle.viewBuilds >= 180, "\(oracle.viewBuilds) of \(oracle.viewReads) built")
    }
}
