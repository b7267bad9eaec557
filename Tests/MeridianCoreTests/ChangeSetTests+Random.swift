import MeridianCore
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - Random lists

extension ChangeSetTests {
    /// Builds random lists and random transitions of them.
    struct ListGenerator {
        var rng: SplitMix64
        private var nextID = 0

        init(seed: UInt64) { self.rng = SplitMix64(seed: seed) }

        private static let keys: [Value] = [.null, .string("")] + (0..<8).map { Value.int(Int64($0)) }

        mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self.rng) < p }

        mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self.rng) }

        mutating func freshItem() -> Item {
            self.nextID += 1
            return Item(self.nextID, self.int(0...2))
        }

        mutating func unusedKey(in list: [ListSection<Item>]) -> Value? {
            let used = Set(list.map(\.key))
            return Self.keys.filter { !used.contains($0) }.randomElement(using: &self.rng)
        }

        /// A random list of up to `maxSections` sections (some possibly empty) of up to `maxRows` rows each.
        mutating func list(maxSections: Int = 5, maxRows: Int = 8) -> SectionedList<Item> {
            var sections: [ListSection<Item>] = []
            for _ in 0..<self.int(0...maxSections) {
                guard let key = self.unusedKey(in: sections) else { break }
                let rows = (0..<self.int(0...maxRows)).map { _ in self.freshItem() }
                sections.append(ListSection(key: key, name: "\(key)", elements: rows))
            }
            return SectionedList(sections: sections)
        }

        /// A random successor of `old`: sections dropped, added, swapped or renamed; rows deleted, inserted, updated,
        /// shuffled locally or moved across sections. Sometimes an unrelated list reusing some ids.
        mutating func successor(of old: SectionedList<Item>) -> SectionedList<Item> {
            if self.chance(0.05) {
                var new = self.list()
                let reused = old.allElements.shuffled(using: &self.rng)
                for s in new.sections.indices {
                    for r in new.sections[s].elements.indices where self.chance(0.5) {
                        if let item = reused.dropFirst(s * 8 + r).first { new.sections[s].elements[r] = item }
                    }
                }
                return new
            }
            var sections: [ListSection<Item>] = []
            var homeless: [Item] = []
            for section in old.sections {
                if self.chance(0.2) { homeless += section.elements } else { sections.append(section) }
            }
            for _ in 0..<self.int(0...2) {
                guard let key = self.unusedKey(in: sections) else { break }
                let at = self.int(0...sections.count)
                sections.insert(ListSection(key: key, name: "\(key)", elements: []), at: at)
            }
            if sections.count > 1, self.chance(0.3) {
                sections.swapAt(self.int(0...sections.count - 1), self.int(0...sections.count - 1))
            }
            if !sections.isEmpty, self.chance(0.05) {
                sections[self.int(0...sections.count - 1)].name += "'"
            }
            guard !sections.isEmpty else { return SectionedList(sections: []) }
            let rate = Double(self.int(0...4)) / 10
            for s in sections.indices {
                var rows: [Item] = []
                for var item in sections[s].elements where !self.chance(rate) {
                    if self.chance(rate) { item.value += 1 }
                    rows.append(item)
                }
                for _ in 0..<self.int(0...2) where self.chance(rate * 2) {
                    rows.insert(self.freshItem(), at: self.int(0...rows.count))
                }
                if rows.count > 1, self.chance(rate) {
                    rows.swapAt(self.int(0...rows.count - 1), self.int(0...rows.count - 1))
                }
                sections[s].elements = rows
            }
            for item in homeless where self.chance(0.5) {
                let s = self.int(0...sections.count - 1)
                sections[s].elements.insert(item, at: self.int(0...sections[s].elements.count))
            }
            for _ in 0..<self.int(0...3) where self.chance(rate) {
                let from = self.int(0...sections.count - 1)
                guard !sections[from].elements.isEmpty else { continue }
                let item = sections[from].elements.remove(at: self.int(0...sections[from].elements.count - 1))
                let to = self.int(0...sections.count - 1)
                sections[to].elements.insert(item, at: self.int(0...sections[to].elements.count))
            }
            return SectionedList(sections: sections)
        }
    }
}

/// The length of a longest strictly increasing subsequence, by the quadratic textbook recurrence.
private func quadraticLISLength(_ values: [Int]) -> Int {
    var best = [Int](repeating: 1, count: values.count)
    for i in values.indices {
        for j in 0..<i where values[j] < values[i] { best[i] = max(best[i], best[j] + 1) }
    }
    return best.max() ?? 0
}

/// A failed property, with what the failure report should show.
private struct PropertyFailure: Error, CustomStringConvertible {
    var description: String
}

private func ensure(_ condition: Bool, _ message: @autoclosure () -> String) throws(PropertyFailure) {
    if !condition { throw PropertyFailure(description: message()) }
}

// MARK: - Properties

extension ChangeSetTests {
    /// Checks every promise of the diff on one transition.
    static func checkDiff(old: SectionedList<Item>, new: SectionedList<Item>) throws {
        let changes = try ChangeSet.between(old: old, new: new)
        // The same when the caller vouches for distinct new ids (as LiveResults does): the first-load shortcut.
        let vouched = try ChangeSet.between(old: old, new: new, changedAttributes: { _, _ in [] }, newIsDistinct: true)
        try ensure(vouched == changes, "with newIsDistinct: \(vouched), without: \(changes)")
        try changes.validate(oldSectionCounts: old.sectionCounts, newSectionCounts: new.sectionCounts)
        try changes.validate(old: old, new: new)
        try ensure(changes == changes.canonicalized(), "the diff is not in canonical order: \(changes)")
        try ensure(changes.isEmpty == (old == new), "isEmpty is \(changes.isEmpty) for old == new: \(old == new)")

        // Sections: the survivors are a longest order-preserving run of the sections matched by key and name.
        let deleted = Set(changes.deletedSections)
        let inserted = Set(changes.insertedSections.map(\.index))
        let oldSurvivors = old.sections.indices.filter { !deleted.contains($0) }
        let newSurvivors = new.sections.indices.filter { !inserted.contains($0) }
        var matchable: [Int] = []
        for section in new.sections {
            if let i = old.sections.firstIndex(where: { $0.key == section.key && $0.name.utf8Equals(section.name) }) {
                matchable.append(i)
            }
        }
        try ensure(oldSurvivors.count == quadraticLISLength(matchable), "too few surviving sections: \(changes)")

        // Rows: within each surviving pair, only rows off a longest order-preserving run move; updates changed.
        var oldPaths: [Int: ListIndexPath] = [:]
        for (s, section) in old.sections.enumerated() {
            for (r, item) in section.elements.enumerated() { oldPaths[item.id] = ListIndexPath(s, r) }
        }
        for (i, j) in zip(oldSurvivors, newSurvivors) {
            try ensure(old.sections[i].key == new.sections[j].key, "sections \(i) and \(j) paired across keys")
            let stayers = new.sections[j].elements.compactMap { oldPaths[$0.id] }.filter { $0.section == i }.map(\.row)
            let moved = changes.rowChanges.filter {
                if case .move(_, let from, let to, _, _) = $0 { return from.section == i && to.section == j }
                return false
            }
            try ensure(
                moved.count == stayers.count - quadraticLISLength(stayers),
                "section \(j): \(moved.count) moves where \(stayers.count - quadraticLISLength(stayers)) suffice"
            )
        }
        for case .update(_, let from, let to, let element, _) in changes.rowChanges {
            try ensure(old[from] != element, "update of an unchanged row at \(from) → \(to)")
        }
    }

    @Test("random transitions: the diff applies to old to give new, validates, and moves as little as possible")
    func randomTransitions() {
        let seed = SplitMix64.seedFromEnvironment()
        var generator = ListGenerator(seed: seed)
        for index in 0..<5_000 {
            let old = index % 50 == 0 ? SectionedList() : generator.list()
            let new = index % 50 == 1 ? SectionedList() : generator.successor(of: old)
            do {
                try Self.checkDiff(old: old, new: new)
            } catch {
                Issue.record("MERIDIAN_SEED=\(seed) case \(index): \(error)\nold: \(old)\nnew: \(new)")
                return
            }
        }
    }

    @Test("random corruptions: whatever passes the count check also applies, to the announced counts")
    func randomCorruptions() {
        let seed = SplitMix64.seedFromEnvironment()
        var generator = ListGenerator(seed: seed)
        var rejected = 0
        for index in 0..<3_000 {
            let old = generator.list()
            let new = generator.successor(of: old)
            guard var changes = try? ChangeSet.between(old: old, new: new), !changes.rowChanges.isEmpty else {
                continue
            }
            let k = generator.int(0...changes.rowChanges.count - 1)
            let change = changes.rowChanges[k]
            let shift = generator.chance(0.5) ? 1 : -1
            func shifted(_ p: ListIndexPath) -> ListIndexPath {
                generator.chance(0.5)
                    ? ListIndexPath(p.section, p.row + shift) : ListIndexPath(p.section + shift, p.row)
            }
            switch generator.int(0...3) {
            case 0:
                changes.rowChanges.remove(at: k)
            case 1:
                changes.rowChanges.append(.delete(id: -1, from: change.oldPath ?? ListIndexPath(0, 0)))
            case 2:
                switch change {
                case .delete(let id, let from): changes.rowChanges[k] = .delete(id: id, from: shifted(from))
                case .insert(let id, let to, let e):
                    changes.rowChanges[k] = .insert(id: id, to: shifted(to), element: e)
                case .move(let id, let from, let to, let e, let c):
                    changes.rowChanges[k] = .move(id: id, from: from, to: shifted(to), element: e, changed: c)
                case .update(let id, let from, let to, let e, let c):
                    changes.rowChanges[k] = .update(id: id, from: shifted(from), to: to, element: e, changed: c)
                }
            default:
                if !changes.deletedSections.isEmpty {
                    changes.deletedSections.removeLast()
                } else {
                    changes.insertedSections.append(SectionInsertion(index: 0, key: .int(99)))
                }
            }
            do {
                try changes.validate(oldSectionCounts: old.sectionCounts, newSectionCounts: new.sectionCounts)
            } catch {
                rejected += 1
                continue
            }
            // The count check passed: a table view would accept it, so applying must not fail on structure.
            do {
                let applied = try old.applying(changes)
                #expect(applied.sectionCounts == new.sectionCounts, "MERIDIAN_SEED=\(seed) case \(index): \(changes)")
            } catch {
                #expect(
                    [.idMismatch].contains(error.code),
                    "MERIDIAN_SEED=\(seed) case \(index): passed the count check, failed to apply: \(error)\n\(changes)"
                )
            }
        }
        #expect(rejected > 1_000, "MERIDIAN_SEED=\(seed): only \(rejected) corruptions were caught")
    }

    @Test("a 100,000-row diff with a few hundred changes, and a full reversal, are valid and have the fewest moves")
    func largeDiff() throws {
        var rng = SplitMix64(seed: 42)
        let sectionCount = 10
        let perSection = 10_000
        var old = SectionedList<Item>(
            sections: (0..<sectionCount).map { s in
                ListSection(
                    key: .int(Int64(s)),
                    name: "\(s)",
                    elements: (0..<perSection).map { Item(s * perSection + $0) }
                )
            })
        var new = old
        var nextID = sectionCount * perSection
        for _ in 0..<100 {  // deletes
            let s = Int.random(in: 0..<sectionCount, using: &rng)
            new.sections[s].elements.remove(at: Int.random(in: 0..<new.sections[s].elements.count, using: &rng))
        }
        for _ in 0..<100 {  // inserts
            let s = Int.random(in: 0..<sectionCount, using: &rng)
            nextID += 1
            new.sections[s].elements.insert(
                Item(nextID),
                at: Int.random(in: 0...new.sections[s].elements.count, using: &rng)
            )
        }
        for _ in 0..<100 {  // moves, within and across sections
            let from = Int.random(in: 0..<sectionCount, using: &rng)
            let item = new.sections[from].elements.remove(
                at: Int.random(in: 0..<new.sections[from].elements.count, using: &rng)
            )
            let to = Int.random(in: 0..<sectionCount, using: &rng)
            new.sections[to].elements.insert(item, at: Int.random(in: 0...new.sections[to].elements.count, using: &rng))
        }
        for _ in 0..<100 {  // updates
            let s = Int.random(in: 0..<sectionCount, using: &rng)
            new.sections[s].elements[Int.random(in: 0..<new.sections[s].elements.count, using: &rng)].value += 1
        }
        let changes = try ChangeSet.between(old: old, new: new)
        let counts = changes.counts
        #expect(counts.deletes == 100 && counts.inserts == 100)
        #expect(counts.moves <= 100 && counts.updates <= 100)
        try changes.validate(old: old, new: new)

        // The worst case for the move search: one section of 100,000 rows, reversed.
        old = SectionedList(unsectioned: (0..<100_000).map { Item($0) })
        new = SectionedList(unsectioned: old.allElements.reversed())
        let reversal = try ChangeSet.between(old: old, new: new)
        #expect(reversal.counts.moves == 99_999)
        try reversal.validate(old: old, new: new)
    }

    @Test("the diff's work on ids grows linearly with the list: counted hashes and comparisons, at n and 2n rows")
    func linearDiff() throws {
        /// The hashes and comparisons of ids made by one diff between `old` and `new` lists of `count` rows.
        func idOperations(count: Int, reversed: Bool) throws -> Int {
            let counter = OperationCounter()
            var rng = SplitMix64(seed: 7)
            let old = SectionedList(unsectioned: (0..<count).map { CountedItem($0, counter) })
            var elements = old.allElements
            if reversed {
                elements.reverse()
            } else {
                // 100 deletes, 100 inserts, 100 moves: a few hundred changes, whatever the length.
                for _ in 0..<100 { elements.remove(at: Int.random(in: 0..<elements.count, using: &rng)) }
                for i in 0..<100 {
                    elements.insert(
                        CountedItem(count + i, counter), at: Int.random(in: 0...elements.count, using: &rng))
                }
                for _ in 0..<100 {
                    let item = elements.remove(at: Int.random(in: 0..<elements.count, using: &rng))
                    elements.insert(item, at: Int.random(in: 0...elements.count, using: &rng))
                }
            }
            let new = SectionedList(unsectioned: elements)
            counter.count.store(0, ordering: .relaxed)
            _ = try ChangeSet.between(old: old, new: new)
            return counter.count.load(ordering: .relaxed)
        }
        for reversed in [false, true] {
            let small = try idOperations(count: 20_000, reversed: reversed)
            let large = try idOperations(count: 40_000, reversed: reversed)
            // Linear: twice the rows, about twice the work (a quadratic search would make it four times).
            #expect(Double(large) <= 2.2 * Double(small), "reversed: \(reversed): \(small) then \(large)")
            // About 10 per row today: a hash and a comparison per map insertion and lookup.
            #expect(large <= 16 * 40_000, "reversed: \(reversed): \(large) id operations for 40,000 rows")
        }
    }

    /// Counts the operations on ``CountedItem`` ids.
    final class OperationCounter: Sendable {
        let count = Atomic<Int>(0)
    }

    /// An element whose id counts every hash and comparison made with it.
    struct CountedItem: Identifiable, Equatable, Sendable {
        struct ID: Hashable, Sendable {
            let value: Int
            let counter: OperationCounter

            static func == (lhs: ID, rhs: ID) -> Bool {
                lhs.counter.count.add(1, ordering: .relaxed)
                return lhs.value == rhs.value
            }

            func hash(into hasher: inout Hasher) {
                self.counter.count.add(1, ordering: .relaxed)
                hasher.combine(self.value)
            }
        }

        let id: ID

        init(_ value: Int, _ counter: OperationCounter) { self.id = ID(value: value, counter: counter) }
    }
}
