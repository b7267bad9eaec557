import MeridianCore
import Synchronization
import Testing

// MARK: - Applying in place

extension ChangeSetTests {
    /// `apply(_:)` against `applying(_:)`: the same list for a change set that fits, in any order; the same error,
    /// and the list untouched, for one that does not.
    @Test("in place, random transitions in any order give the new list, moving rows without the copying path")
    func inPlaceTransitions() {
        let seed = SplitMix64.seedFromEnvironment()
        var generator = ListGenerator(seed: seed)
        for index in 0..<5_000 {
            let old = index % 50 == 0 ? SectionedList() : generator.list()
            let new = index % 50 == 1 ? SectionedList() : generator.successor(of: old)
            guard var changes = try? ChangeSet.between(old: old, new: new) else { continue }
            if generator.chance(0.5) {  // as a controller may append them: any order applies
                changes.rowChanges.shuffle(using: &generator.rng)
                changes.insertedSections.shuffle(using: &generator.rng)
                changes.deletedSections.shuffle(using: &generator.rng)
            }
            var list = old
            do {
                try list.apply(changes)
            } catch {
                Issue.record("MERIDIAN_SEED=\(seed) case \(index): \(error)\nold: \(old)\nchanges: \(changes)")
                return
            }
            #expect(list == new, "MERIDIAN_SEED=\(seed) case \(index): \(changes)")
            #expect(old.appliesInPlace(changes), "MERIDIAN_SEED=\(seed) case \(index): \(changes)")
        }
    }

    @Test("in place, corrupt change sets fail as the copying path fails, leaving the list as it was")
    func inPlaceCorruptions() {
        let seed = SplitMix64.seedFromEnvironment()
        var generator = ListGenerator(seed: seed)
        var failed = 0
        var applied = 0
        for index in 0..<5_000 {
            let old = generator.list()
            let new = generator.successor(of: old)
            guard let valid = try? ChangeSet.between(old: old, new: new) else { continue }
            let changes = Self.corrupted(valid, using: &generator)
            var list = old
            let copying: Result<SectionedList<Item>, ChangeSetError> = Result { () throws(ChangeSetError) in
                try old.applying(changes)
            }
            let inPlace: Result<Void, ChangeSetError> = Result { () throws(ChangeSetError) in
                try list.apply(changes)
            }
            let label = "MERIDIAN_SEED=\(seed) case \(index): \(changes)\nold: \(old)"
            switch (copying, inPlace) {
            case (.success(let expected), .success):
                applied += 1
                #expect(list == expected, "\(label)")
                #expect(old.appliesInPlace(changes), "the copying path took a change set that applies: \(label)")
            case (.failure(let expected), .failure(let error)):
                failed += 1
                #expect(error == expected, "\(label)")
                #expect(list == old, "a failed apply changed the list: \(label)")
                #expect(!old.appliesInPlace(changes), "\(label)")
            case (.success, .failure(let error)):
                Issue.record("only in place failed, with \(error): \(label)")
            case (.failure(let error), .success):
                Issue.record("only in place applied, where copying failed with \(error): \(label)")
            }
        }
        // Both outcomes are exercised: the corruptions are not all caught, nor all harmless.
        #expect(failed > 1_000, "MERIDIAN_SEED=\(seed): only \(failed) corrupt change sets failed")
        #expect(applied > 100, "MERIDIAN_SEED=\(seed): only \(applied) corrupt change sets applied")
    }

    @Test("in place, a check that throws leaves the list as it was; one that passes sees the counts before and after")
    func inPlaceCheck() throws {
        let old = list(section("A", [Item(1), Item(2), Item(3)]), section("B", [Item(4)]))
        let new = list(section("A", [Item(3), Item(5)]), section("B", [Item(4, 1), Item(1)]), section("C", []))
        let changes = try ChangeSet.between(old: old, new: new)
        var list = old
        #expect(throws: ChangeSetError.self) {
            try list.apply(changes) { _, _ throws(ChangeSetError) in
                throw ChangeSetError(.rowCountMismatch, "refused")
            }
        }
        #expect(list == old)
        var seen: [[Int]] = []
        try list.apply(changes) { before, after throws(ChangeSetError) in seen = [before, after] }
        #expect(seen == [[3, 1], [2, 2, 0]])
        #expect(list == new)
    }

    @Test("in place, an array of rows held elsewhere keeps its rows, and no row is leaked or freed twice")
    func inPlaceOwnership() throws {
        let live = LiveCount()
        let seed = SplitMix64.seedFromEnvironment()
        do {
            var generator = ListGenerator(seed: seed)
            var current = generator.list(maxSections: 4, maxRows: 40)
            var list = live.track(current)
            for index in 0..<500 {
                let next = generator.successor(of: current)
                let changes = live.track(try ChangeSet.between(old: current, new: next))
                let held = index % 3 == 0 ? list.sections : []  // a caller's copy, as `ListModel.sections` gives
                let heldItems = held.map { $0.elements.map(\.item) }
                try list.apply(changes)
                #expect(list.sections.map { $0.elements.map(\.item) } == next.sections.map(\.elements))
                #expect(held.map { $0.elements.map(\.item) } == heldItems, "MERIDIAN_SEED=\(seed) case \(index)")
                current = next
            }
            // Exactly the list's rows are alive: every change set and caller's copy is gone (the last list of a
            // run may be empty, so this is not `> 0`).
            let rows = list.sections.reduce(0) { $0 + $1.elements.count }
            #expect(live.count.load(ordering: .relaxed) == rows, "MERIDIAN_SEED=\(seed)")
        }
        #expect(
            live.count.load(ordering: .relaxed) == 0, "MERIDIAN_SEED=\(seed): rows still alive once every list is gone")
    }

    /// Counts the tracked rows alive.
    final class LiveCount: Sendable {
        let count = Atomic<Int>(0)

        func track(_ item: Item) -> TrackedItem { TrackedItem(item: item, token: TrackedItem.Token(self)) }

        func track(_ list: SectionedList<Item>) -> SectionedList<TrackedItem> {
            SectionedList(
                sections: list.sections.map { section in
                    ListSection(key: section.key, name: section.name, elements: section.elements.map(self.track))
                })
        }

        func track(_ changes: ChangeSet<Item>) -> ChangeSet<TrackedItem> {
            var tracked = ChangeSet<TrackedItem>()
            tracked.insertedSections = changes.insertedSections
            tracked.deletedSections = changes.deletedSections
            tracked.rowChanges = changes.rowChanges.map { change in
                switch change {
                case .delete(let id, let from): .delete(id: id, from: from)
                case .insert(let id, let to, let element): .insert(id: id, to: to, element: self.track(element))
                case .move(let id, let from, let to, let element, let changed):
                    .move(id: id, from: from, to: to, element: self.track(element), changed: changed)
                case .update(let id, let from, let to, let element, let changed):
                    .update(id: id, from: from, to: to, element: self.track(element), changed: changed)
                }
            }
            return tracked
        }
    }

    /// A row whose lifetime is counted: a leaked move shows as a row left alive, a row freed twice as a crash.
    struct TrackedItem: Identifiable, Equatable, Sendable {
        final class Token: Sendable {
            let live: LiveCount
            init(_ live: LiveCount) {
                self.live = live
                live.count.add(1, ordering: .relaxed)
            }
            deinit { self.live.count.subtract(1, ordering: .relaxed) }
        }

        let item: Item
        let token: Token
        var id: Int { self.item.id }

        static func == (a: TrackedItem, b: TrackedItem) -> Bool { a.item == b.item }
    }

    /// `changes` with one fault of a kind picked at random: a change dropped, repeated or pointed elsewhere, an id
    /// or element swapped, a section index shifted or repeated.
    static func corrupted(_ changes: ChangeSet<Item>, using generator: inout ListGenerator) -> ChangeSet<Item> {
        var changes = changes
        let shift = generator.chance(0.5) ? 1 : -1
        func shifted(_ p: ListIndexPath, _ generator: inout ListGenerator) -> ListIndexPath {
            generator.chance(0.7) ? ListIndexPath(p.section, p.row + shift) : ListIndexPath(p.section + shift, p.row)
        }
        if changes.rowChanges.isEmpty || generator.chance(0.1) {
            switch generator.int(0...3) {
            case 0 where !changes.deletedSections.isEmpty: changes.deletedSections.removeLast()
            case 1 where !changes.deletedSections.isEmpty: changes.deletedSections.append(changes.deletedSections[0])
            case 2 where !changes.insertedSections.isEmpty: changes.insertedSections[0].index += shift
            default: changes.insertedSections.append(SectionInsertion(index: generator.int(0...3), key: .int(99)))
            }
            return changes
        }
        let k = generator.int(0...changes.rowChanges.count - 1)
        let change = changes.rowChanges[k]
        switch generator.int(0...5) {
        case 0:
            changes.rowChanges.remove(at: k)
        case 1:
            changes.rowChanges.append(change)
        case 2:
            switch change {
            case .delete(let id, let from): changes.rowChanges[k] = .delete(id: id, from: shifted(from, &generator))
            case .insert(let id, let to, let e):
                changes.rowChanges[k] = .insert(id: id, to: shifted(to, &generator), element: e)
            case .move(let id, let from, let to, let e, let c):
                changes.rowChanges[k] =
                    generator.chance(0.5)
                    ? .move(id: id, from: shifted(from, &generator), to: to, element: e, changed: c)
                    : .move(id: id, from: from, to: shifted(to, &generator), element: e, changed: c)
            case .update(let id, let from, let to, let e, let c):
                changes.rowChanges[k] =
                    generator.chance(0.5)
                    ? .update(id: id, from: shifted(from, &generator), to: to, element: e, changed: c)
                    : .update(id: id, from: from, to: shifted(to, &generator), element: e, changed: c)
            }
        case 3:
            let other = Item(-1)
            switch change {
            case .delete(_, let from): changes.rowChanges[k] = .delete(id: other.id, from: from)
            case .insert(let id, let to, _): changes.rowChanges[k] = .insert(id: id, to: to, element: other)
            case .move(let id, let from, let to, _, let c):
                changes.rowChanges[k] = .move(id: id, from: from, to: to, element: other, changed: c)
            case .update(let id, let from, let to, _, let c):
                changes.rowChanges[k] = .update(id: id, from: from, to: to, element: other, changed: c)
            }
        case 4:
            // Another change's path taken: two changes at one old or new path.
            let j = generator.int(0...changes.rowChanges.count - 1)
            switch (change, changes.rowChanges[j]) {
            case (.delete(let id, _), .delete(_, let from)), (.delete(let id, _), .move(_, let from, _, _, _)):
                changes.rowChanges[k] = .delete(id: id, from: from)
            case (.insert(let id, _, let e), .insert(_, let to, _)),
                (.insert(let id, _, let e), .move(_, _, let to, _, _)):
                changes.rowChanges[k] = .insert(id: id, to: to, element: e)
            default:
                changes.rowChanges.append(.delete(id: -1, from: change.oldPath ?? ListIndexPath(0, 0)))
            }
        default:
            // An update pointed at a neighbour's new row.
            switch change {
            case .update(let id, let from, let to, let e, let c):
                changes.rowChanges[k] = .update(
                    id: id, from: from, to: ListIndexPath(to.section, to.row + shift), element: e, changed: c)
            default:
                let to = ListIndexPath(0, generator.int(0...9))
                changes.rowChanges.append(.insert(id: -2, to: to, element: Item(-2)))
            }
        }
        return changes
    }
}
