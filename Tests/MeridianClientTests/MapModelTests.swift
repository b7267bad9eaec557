// MARK: - MapModel: writing in place
//
// A map model works a change set out against its state, then writes it in one access, in place. These tests pin
// that against the model as it was written before (a copy of the state changed step by step, `Reference` below) on
// random change sets — ids repeated within one, rows without a coordinate, replacing changes — and that observers
// are told exactly when it says the model changed.

import MeridianClient
import MeridianCore
import Testing

@Suite struct MapModelTests {
    static let configuration = MapConfiguration(latitude: "latitude", longitude: "longitude", title: "title")

    /// The model's former apply: a copy of its state, changed change by change.
    struct Reference {
        var annotations: [String: Annotation] = [:]
        var unplacedIDs: Set<String> = []

        /// Applies a change set; its events, and whether the model changed (so told its observers).
        mutating func apply(_ changeSet: ChangeSet<Row>, replacing: Bool) -> (events: [MapEvent], told: Bool) {
            var changed = false
            var events: [MapEvent] = []
            if replacing, !self.annotations.isEmpty || !self.unplacedIDs.isEmpty {
                let shown = Set(changeSet.rowChanges.compactMap { $0.newPath == nil ? nil : $0.id })
                for id in self.annotations.keys.sorted(by: { $0.utf8Compare($1) < 0 }) where !shown.contains(id) {
                    self.annotations[id] = nil
                    events.append(MapEvent(.remove, id: id))
                }
                let unplaced = self.unplacedIDs.intersection(shown)
                changed = unplaced != self.unplacedIDs
                self.unplacedIDs = unplaced
            }
            for case .delete(let id, _) in changeSet.rowChanges {
                if self.annotations.removeValue(forKey: id) != nil { events.append(MapEvent(.remove, id: id)) }
                if self.unplacedIDs.remove(id) != nil { changed = true }
            }
            for change in changeSet.rowChanges {
                guard let row = change.element else { continue }
                let old = self.annotations[row.id]
                let new = MapModelTests.configuration.annotation(for: row)
                switch (old, new) {
                case (nil, let new?):
                    self.unplacedIDs.remove(row.id)
                    self.annotations[row.id] = new
                    events.append(MapEvent(.add, id: row.id, annotation: new))
                case (_?, nil):
                    self.annotations[row.id] = nil
                    self.unplacedIDs.insert(row.id)
                    events.append(MapEvent(.remove, id: row.id))
                    events.append(MapEvent(.unplaced, id: row.id))
                case (let old?, let new?):
                    if old.coordinate != new.coordinate {
                        self.annotations[row.id] = new
                        events.append(MapEvent(.move, id: row.id, annotation: new))
                    } else if old.title != new.title || old.subtitle != new.subtitle {
                        self.annotations[row.id] = new
                        events.append(MapEvent(.retitle, id: row.id, annotation: new))
                    }
                case (nil, nil):
                    if self.unplacedIDs.insert(row.id).inserted { events.append(MapEvent(.unplaced, id: row.id)) }
                }
            }
            return (events, changed || !events.isEmpty)
        }
    }

    @Test("random change sets: the same events, annotations and unplaced ids as a copy changed step by step")
    func randomChangeSets() {
        let seed = SplitMix64.seedFromEnvironment()
        var rng = SplitMix64(seed: seed)
        for round in 0..<40 {
            nonisolated(unsafe) let model = MapModel(Self.configuration)
            var reference = Reference()
            let log = ObservationLog(read: { _ = model.annotations }, probe: {})
            var told = 0
            for step in 0..<60 {
                var changeSet = ChangeSet<Row>()
                for _ in 0..<Int.random(in: 0...6, using: &rng) {
                    let id = "r\(Int.random(in: 0..<12, using: &rng))"
                    let path = ListIndexPath(0, 0)  // the map reads ids and rows, not paths
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0: changeSet.rowChanges.append(.delete(id: id, from: path))
                    case 1: changeSet.rowChanges.append(.insert(id: id, to: path, element: Self.row(id, &rng)))
                    case 2:
                        changeSet.rowChanges.append(
                            .move(id: id, from: path, to: path, element: Self.row(id, &rng), changed: []))
                    default:
                        changeSet.rowChanges.append(
                            .update(id: id, from: path, to: path, element: Self.row(id, &rng), changed: []))
                    }
                }
                let replacing = Int.random(in: 0..<8, using: &rng) == 0
                let held = model.annotations  // a caller's copy keeps what it had
                let before = reference.annotations
                let events = model.apply(
                    ResultsChange(seq: 1, changeSet: changeSet, cause: replacing ? .initial : .remote))
                let expected = reference.apply(changeSet, replacing: replacing)
                if expected.told { told += 1 }
                let label = "MERIDIAN_SEED=\(seed) round \(round) step \(step): \(changeSet)"
                #expect(events == expected.events, "\(label)")
                #expect(model.annotations == reference.annotations, "\(label)")
                #expect(model.unplacedIDs == reference.unplacedIDs, "\(label)")
                #expect(log.values.count == told, "observers told when, and only when, the model changed: \(label)")
                if expected.told { #expect(model.lastEvents == events, "\(label)") }
                #expect(held == before, "\(label)")
            }
        }
    }

    /// A row of `id` with a title of a few and a coordinate that is sometimes missing or out of range.
    static func row(_ id: String, _ rng: inout SplitMix64) -> Row {
        var values: [String: Value] = ["title": .string("t\(Int.random(in: 0..<3, using: &rng))")]
        switch Int.random(in: 0..<5, using: &rng) {
        case 0: break  // no coordinate: unplaced
        case 1: values["latitude"] = .double(95)  // out of range: unplaced
        default: values["latitude"] = .double(Double(Int.random(in: 0..<3, using: &rng)))
        }
        values["longitude"] = .double(Double(Int.random(in: 0..<2, using: &rng)))
        return Row(id: id, values: values)
    }
}
