import MeridianCore
import MeridianStore
import Testing

@testable import MeridianServer

/// The net change of each row over a run of log changes: the run's inserts are taken as rows of their own until the
/// first other change (`NetChange.of` indexes no ids before it), which must give what folding every change into its
/// row's entry gives.
@Suite struct NetChangeTests {
    /// Every change folded by id, as `NetChange.of` did before it took inserts on their own.
    static func folded(_ changes: [Change]) -> [NetChange] {
        var index: [String: Int] = [:]
        var out: [NetChange] = []
        for change in changes {
            if let i = index[change.id] {
                out[i].after = change.after
                out[i].version = change.version
            } else {
                index[change.id] = out.count
                out.append(
                    NetChange(id: change.id, before: change.before, after: change.after, version: change.version))
            }
        }
        return out
    }

    static func same(_ a: [NetChange], _ b: [NetChange]) -> Bool {
        a.count == b.count
            && zip(a, b).allSatisfy {
                $0.id == $1.id && $0.before == $1.before && $0.after == $1.after && $0.version == $1.version
            }
    }

    /// A log change of `Item` `id`, its version and commit time the seq.
    static func change(_ seq: Int64, _ id: String, _ kind: Change.Kind, before: Row?, after: Row?) -> Change {
        Change(
            seq: seq, entity: "Item", id: id, kind: kind, version: seq, before: before, after: after,
            changedAttributes: [], committedAt: Timestamp(microseconds: seq))
    }

    /// A run of changes as a log holds them: an id is inserted only when it is absent, updated or deleted only when
    /// present; runs of inserts first, now and then, so that the shortcut has a prefix to take.
    static func changes(_ random: inout SplitMix64, rows: [String: Row]) -> [Change] {
        var present = rows
        var changes: [Change] = []
        var seq: Int64 = 0
        func change(_ id: String, _ kind: Change.Kind, before: Row?, after: Row?) {
            seq += 1
            changes.append(Self.change(seq, id, kind, before: before, after: after))
        }
        let insertsFirst = Int.random(in: 0...6, using: &random)
        let count = Int.random(in: 0...30, using: &random)
        for step in 0..<count {
            let id = "r\(Int.random(in: 0..<8, using: &random))"
            let row = Row(id: id, values: ["n": .int(Int64(step))])
            if let old = present[id] {
                guard step >= insertsFirst else { continue }
                if Bool.random(using: &random) {
                    change(id, .update, before: old, after: row)
                    present[id] = row
                } else {
                    change(id, .delete, before: old, after: nil)
                    present[id] = nil
                }
            } else {
                change(id, .insert, before: nil, after: row)
                present[id] = row
            }
        }
        return changes
    }

    @Test("the net changes of random runs are those of every change folded by id, inserts first or not")
    func randomRuns() {
        var random = SplitMix64(seed: 0x2026_1129)
        var withInsertPrefix = 0
        for round in 0..<3_000 {
            let start = (0..<Int.random(in: 0...4, using: &random)).map { "r\($0)" }
            let rows = Dictionary(uniqueKeysWithValues: start.map { ($0, Row(id: $0, values: ["n": .int(-1)])) })
            let changes = Self.changes(&random, rows: rows)
            if changes.first?.kind == .insert, changes.contains(where: { $0.kind != .insert }) { withInsertPrefix += 1 }
            #expect(Self.same(NetChange.of(changes), Self.folded(changes)), "round \(round): \(changes.map(\.kind))")
        }
        #expect(withInsertPrefix > 300, "runs with inserts before other changes: \(withInsertPrefix)")
    }

    @Test("an id inserted, deleted and inserted again in one run is one net change")
    func reinserted() {
        let first = Row(id: "a", values: ["n": 1])
        let second = Row(id: "a", values: ["n": 2])
        let changes = [
            Self.change(1, "a", .insert, before: nil, after: first),
            Self.change(2, "b", .insert, before: nil, after: first),
            Self.change(3, "a", .delete, before: first, after: nil),
            Self.change(4, "a", .insert, before: nil, after: second),
        ]
        let net = NetChange.of(changes)
        #expect(net.map(\.id) == ["a", "b"])
        #expect(net.first?.before == nil && net.first?.after == second)
    }
}
