// MARK: - Apply in place

extension SectionedList {
    /// Applies a change set to this list in place: the same transition, and the same errors, as
    /// ``applying(_:)``. On a throw the list is unchanged.
    ///
    /// Where ``applying(_:)`` builds every touched section anew (each of its rows copied), this moves the rows of
    /// a section held by this list alone along its own storage — each row at most once per step, as one block
    /// between two changed paths — so one changed row in a section of a million costs a `memmove` of the rows after
    /// it, not a copy of every row. A section whose storage is shared with another list is copied first (arrays are
    /// copy-on-write).
    ///
    /// ```swift
    /// var list = before
    /// try list.apply(changes)   // list == before.applying(changes)
    /// ```
    ///
    /// - Parameter changeSet: The transition to apply, built against this list.
    /// - Throws: ``ChangeSetError``, as ``applying(_:)`` does.
    public mutating func apply(_ changeSet: ChangeSet<Element>) throws(ChangeSetError) {
        try self.apply(changeSet) { (_: [Int], _: [Int]) throws(ChangeSetError) in }
    }

    /// ``apply(_:)``, calling `check` with the section counts before and after the change set once it is known to
    /// apply and before anything changes: what `check` throws is thrown and the list left unchanged. (A table
    /// view's count check, ``ChangeSet/validate(oldSectionCounts:newSectionCounts:)``, is such a check.)
    ///
    /// - Parameters:
    ///   - changeSet: The transition to apply, built against this list.
    ///   - check: Called with the old and the new section counts before the list changes.
    /// - Throws: ``ChangeSetError``, as ``applying(_:)`` does, or what `check` throws.
    public mutating func apply(
        _ changeSet: ChangeSet<Element>,
        checking check: (_ oldCounts: [Int], _ newCounts: [Int]) throws(ChangeSetError) -> Void
    ) throws(ChangeSetError) {
        self.perform(try self.prepare(changeSet, checking: check), changeSet)
    }

    /// A change set checked against a list, ready to be carried out on it (``prepare(_:checking:)``).
    package struct PreparedChange {
        fileprivate enum Kind {
            /// The rows move in place, as planned.
            case inPlace(InPlacePlan)
            /// The list is replaced by this one (the copying path applied a change set the plan had refused; the
            /// tests pin that this never happens).
            case replace(SectionedList)
        }

        fileprivate let kind: Kind
    }

    /// Checks `changeSet` against this list — everything ``apply(_:checking:)`` checks, `check` included — and
    /// returns it ready to be carried out by ``perform(_:_:)``, changing nothing; throws what `apply` would throw.
    /// (So that a caller that must tell observers of a change can check it before it touches the list.)
    package func prepare(
        _ changeSet: ChangeSet<Element>,
        checking check: (_ oldCounts: [Int], _ newCounts: [Int]) throws(ChangeSetError) -> Void
    ) throws(ChangeSetError) -> PreparedChange {
        guard let plan = self.inPlacePlan(for: changeSet) else {
            // The change set does not apply: the copying path finds the fault and reports it as it always has. (If
            // it applied there after all, its list is the answer.)
            let applied = try self.applying(changeSet)
            try check(self.sectionCounts, applied.sectionCounts)
            return PreparedChange(kind: .replace(applied))
        }
        try check(self.sectionCounts, plan.newCounts)
        return PreparedChange(kind: .inPlace(plan))
    }

    /// Carries out a change set that ``prepare(_:checking:)`` returned for this very list (unchanged since).
    package mutating func perform(_ prepared: PreparedChange, _ changeSet: ChangeSet<Element>) {
        switch prepared.kind {
        case .inPlace(let plan): self.perform(plan, changeSet)
        case .replace(let list): self = list
        }
    }

    /// Whether ``apply(_:)`` moves rows in place for this change set (else it does not apply, and the copying path
    /// reports why). For tests.
    package func appliesInPlace(_ changeSet: ChangeSet<Element>) -> Bool {
        self.inPlacePlan(for: changeSet) != nil
    }

    // MARK: - The plan

    /// Where every change lands, checked against this list before anything moves.
    fileprivate struct InPlacePlan {
        /// Per old section, the rows removed (deletes' and moves' old rows), ascending; empty when none.
        var removed: [[Int]]
        /// The deleted sections' old indices, ascending.
        var deletedSections: [Int]
        /// The inserted sections, by ascending new index.
        var insertedSections: [SectionInsertion]
        /// Per new section, the rows added (inserts' and moves' new rows, ascending) and each one's element's index
        /// in `changeSet.rowChanges`.
        var added: [[(row: Int, change: Int)]]
        /// The section counts after the change set.
        var newCounts: [Int]
    }

    /// The plan for `changeSet`, or nil when some change does not fit this list (a path out of range or used twice,
    /// a deleted section not emptied, an id that does not match): the checks of ``applying(_:)``, made before
    /// anything changes.
    private func inPlacePlan(for changeSet: ChangeSet<Element>) -> InPlacePlan? {
        let changes = changeSet.rowChanges
        // Removals: old paths of deletes and moves, each holding its change's id.
        var removed = [[Int]](repeating: [], count: self.sections.count)
        for i in 0..<changes.count {
            let id: Element.ID
            let from: ListIndexPath
            switch changes[i] {
            case .delete(let changeID, let changeFrom), .move(let changeID, let changeFrom, _, _, _):
                id = changeID
                from = changeFrom
            case .insert, .update:
                continue
            }
            guard self.contains(from), self[from].id == id else { return nil }
            removed[from.section].append(from.row)
        }
        var remaining = self.sectionCounts
        for s in removed.indices where !removed[s].isEmpty {
            removed[s].sort()
            guard Self.isStrictlyAscending(removed[s]) else { return nil }
            remaining[s] -= removed[s].count
        }

        // Sections: the deleted ones exist once each and are empty by now; the inserted ones fit the new list.
        let deletedSections = changeSet.deletedSections.sorted()
        guard Self.isStrictlyAscending(deletedSections) else { return nil }
        for s in deletedSections {
            guard self.sections.indices.contains(s), remaining[s] == 0 else { return nil }
        }
        let total = self.sections.count - deletedSections.count + changeSet.insertedSections.count
        let insertedSections = changeSet.insertedSections.sorted { $0.index < $1.index }
        guard Self.isStrictlyAscending(insertedSections.map(\.index)),
            insertedSections.allSatisfy({ (0..<total).contains($0.index) })
        else { return nil }
        // Each new section's old index (nil for an inserted one).
        var oldIndex = [Int?](repeating: nil, count: total)
        var nextInserted = 0
        var nextDeleted = 0
        var nextOld = 0
        for j in 0..<total {
            if nextInserted < insertedSections.count, insertedSections[nextInserted].index == j {
                nextInserted += 1
                continue
            }
            while nextDeleted < deletedSections.count, deletedSections[nextDeleted] == nextOld {
                nextDeleted += 1
                nextOld += 1
            }
            oldIndex[j] = nextOld
            nextOld += 1
        }

        // Additions: new paths of inserts and moves, carrying elements of their change's id, filling distinct rows
        // of their section once its survivors are counted.
        var added = [[(row: Int, change: Int)]](repeating: [], count: total)
        for i in 0..<changes.count {
            let id: Element.ID
            let to: ListIndexPath
            let element: Element
            switch changes[i] {
            case .insert(let changeID, let changeTo, let changeElement),
                .move(let changeID, _, let changeTo, let changeElement, _):
                id = changeID
                to = changeTo
                element = changeElement
            case .delete, .update:
                continue
            }
            guard to.section >= 0, to.section < total, to.row >= 0, element.id == id else { return nil }
            added[to.section].append((to.row, i))
        }
        var newCounts = [Int](repeating: 0, count: total)
        for j in 0..<total {
            let survivors = oldIndex[j].map { remaining[$0] } ?? 0
            if !added[j].isEmpty {
                if !Self.isStrictlyAscending(added[j].map(\.row)) {
                    added[j].sort { $0.row < $1.row }
                    guard Self.isStrictlyAscending(added[j].map(\.row)) else { return nil }
                }
                // Distinct rows, all inside the section: they and the survivors fill it exactly.
                guard added[j][added[j].count - 1].row < survivors + added[j].count else { return nil }
            }
            newCounts[j] = survivors + added[j].count
        }

        // Updates: the old path holds the id, and so does the new one once the rows have moved.
        for i in 0..<changes.count {
            guard case .update(let id, let from, let to, let element, _) = changes[i] else { continue }
            guard self.contains(from), self[from].id == id, element.id == id,
                to.section >= 0, to.section < total, to.row >= 0, to.row < newCounts[to.section]
            else { return nil }
            let rows = added[to.section]
            let before = Self.countBelow(to.row, in: rows)
            if before < rows.count, rows[before].row == to.row {
                // An added row is there: its element must carry the id (it cannot, the ids being distinct — unless
                // the change set names the id twice, which `applying` lets through the same way).
                guard changes[rows[before].change].id == id else { return nil }
                continue
            }
            // A survivor is there: the (to.row - before)-th row of its old section that stays.
            guard let s = oldIndex[to.section] else { return nil }
            var row = to.row - before
            for r in removed[s] {
                guard r <= row else { break }
                row += 1
            }
            guard self.sections[s].elements[row].id == id else { return nil }
        }
        return InPlacePlan(
            removed: removed, deletedSections: deletedSections, insertedSections: insertedSections,
            added: added, newCounts: newCounts)
    }

    /// The number of rows of `rows` (ascending) below `row`.
    private static func countBelow(_ row: Int, in rows: [(row: Int, change: Int)]) -> Int {
        var low = 0
        var high = rows.count
        while low < high {
            let mid = (low + high) / 2
            if rows[mid].row < row { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private static func isStrictlyAscending(_ values: [Int]) -> Bool {
        var previous = Int.min
        for value in values {
            guard value > previous else { return false }
            previous = value
        }
        return true
    }

    // MARK: - Moving the rows

    /// Carries out a plan made against this list: nothing left to check.
    private mutating func perform(_ plan: InPlacePlan, _ changeSet: ChangeSet<Element>) {
        for s in plan.removed.indices where !plan.removed[s].isEmpty {
            Self.remove(rows: plan.removed[s], from: &self.sections[s].elements)
        }
        for s in plan.deletedSections.reversed() { self.sections.remove(at: s) }
        for insertion in plan.insertedSections {
            self.sections.insert(ListSection(key: insertion.key, name: insertion.name), at: insertion.index)
        }
        let changes = changeSet.rowChanges
        for j in plan.added.indices where !plan.added[j].isEmpty {
            let elements = plan.added[j].map { pair -> Element in
                switch changes[pair.change] {
                case .insert(_, _, let element), .move(_, _, _, let element, _): return element
                case .delete, .update: preconditionFailure("an addition is an insert or a move")
                }
            }
            Self.insert(elements, at: plan.added[j].map(\.row), into: &self.sections[j].elements)
        }
        for i in 0..<changes.count {
            guard case .update(_, _, let to, let element, _) = changes[i] else { continue }
            self.sections[to.section].elements[to.row] = element
        }
    }

    /// Removes the rows at `rows` (ascending, distinct, in range): the rows between two removed ones move down as
    /// one block, each row at most once.
    ///
    /// A block's source and destination overlap: `moveInitialize(from:count:)` picks the direction that handles it
    /// (front to back when moving down, back to front when moving up), as the standard library implements it and
    /// documents for its buffer forms; only the part of the destination outside the source must be uninitialized.
    private static func remove(rows: [Int], from elements: inout [Element]) {
        let n = elements.count
        let k = rows.count
        elements.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            // The removed rows wait here while the others close up behind them, then fill the freed tail.
            let removed = UnsafeMutablePointer<Element>.allocate(capacity: k)
            defer { removed.deallocate() }
            var write = rows[0]
            for i in 0..<k {
                let row = rows[i]
                (removed + i).moveInitialize(from: base + row, count: 1)
                let end = i + 1 < k ? rows[i + 1] : n
                (base + write).moveInitialize(from: base + row + 1, count: end - row - 1)
                write += end - row - 1
            }
            precondition(write == n - k, "the rows kept fill the section's start")
            (base + write).moveInitialize(from: removed, count: k)
        }
        elements.removeLast(k)
    }

    /// Inserts `added[i]` at row `rows[i]` of the result (ascending, distinct, inside it): the rows between two
    /// added ones move up as one block, each row at most once.
    private static func insert(_ added: [Element], at rows: [Int], into elements: inout [Element]) {
        let n = elements.count
        let k = rows.count
        elements.append(contentsOf: added)  // grows geometrically, where `reserveCapacity` would grow by k
        elements.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            // The added rows wait here, leaving the tail free; then from the end, each block of survivors moves up
            // past its added row, which takes its place.
            let waiting = UnsafeMutablePointer<Element>.allocate(capacity: k)
            defer { waiting.deallocate() }
            waiting.moveInitialize(from: base + n, count: k)
            var end = n + k  // the rows from `end` on are in place
            var survivorsEnd = n  // the survivors not yet moved are those below
            for i in stride(from: k - 1, through: 0, by: -1) {
                let row = rows[i]
                let count = end - row - 1
                (base + row + 1).moveInitialize(from: base + survivorsEnd - count, count: count)
                survivorsEnd -= count
                (base + row).moveInitialize(from: waiting + i, count: 1)
                end = row
            }
            precondition(survivorsEnd == end, "the survivors below the first added row stay")
        }
    }
}
