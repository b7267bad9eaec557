// MARK: - Validation

extension ChangeSet {
    /// Checks the change set the way a table view checks a batch update, from section row counts alone.
    ///
    /// Rejects, in this order: deleted or inserted section indices out of range or repeated; a new section count
    /// other than old − deleted + inserted; a row's old path outside the old list or new path outside the new list;
    /// one old path deleted, moved from or updated twice, or one new path inserted, moved to or updated twice; an
    /// update whose old and new paths are not in the same surviving section; one id in two changes; a surviving
    /// section whose new count is not its old count − deletes − moves out + inserts + moves in (UIKit's "invalid
    /// number of rows in section N"); and, under the completeness contract, a deleted section with rows neither
    /// deleted nor moved out, or an inserted section with rows neither inserted nor moved in.
    ///
    /// Surviving sections pair up in order: the k-th old section that is not deleted becomes the k-th new section that
    /// is not inserted. The check does not depend on the order of ``rowChanges`` nor on how the change set was built.
    /// It costs O(k) for k changes (plus the number of sections).
    ///
    /// ```swift
    /// try changes.validate(oldSectionCounts: [3, 2], newSectionCounts: [4, 2])
    /// ```
    ///
    /// - Parameters:
    ///   - oldSectionCounts: The number of rows in each section before the transition.
    ///   - newSectionCounts: The number of rows in each section after the transition.
    /// - Throws: ``ChangeSetError`` naming the first inconsistency found.
    public func validate(oldSectionCounts: [Int], newSectionCounts: [Int]) throws(ChangeSetError) {
        let layout = try self.validateSections(oldCount: oldSectionCounts.count, newCount: newSectionCounts.count)
        let tally = try self.validateRowPaths(oldSectionCounts: oldSectionCounts, newSectionCounts: newSectionCounts)

        // By index, each change read in place by one `switch`: iterating the changes, or their accessors, copied each
        // with its element (this code runs unspecialized for the caller's element type; see `SectionedList.applying`).
        for i in 0..<self.rowChanges.count {
            guard case .update(let id, let from, let to, _, _) = self.rowChanges[i],
                layout.oldToNew[from.section] != to.section
            else { continue }
            throw ChangeSetError(
                .updateAcrossSections,
                "update of id \(id) from \(from) to \(to) does not stay in one surviving section; report it as a move"
            )
        }

        var ids = Set<Element.ID>(minimumCapacity: self.rowChanges.count)
        for i in 0..<self.rowChanges.count {
            let id: Element.ID
            switch self.rowChanges[i] {
            case .delete(let changeID, _), .insert(let changeID, _, _), .move(let changeID, _, _, _, _),
                .update(let changeID, _, _, _, _):
                id = changeID
            }
            guard ids.insert(id).inserted else {
                throw ChangeSetError(.duplicateID, "id \(id) appears in more than one change")
            }
        }

        for (j, source) in layout.newToOld.enumerated() {
            guard let i = source else { continue }
            let before = oldSectionCounts[i]
            let after = newSectionCounts[j]
            let expected = before - tally.deletes[i] - tally.movesOut[i] + tally.inserts[j] + tally.movesIn[j]
            guard after == expected else {
                throw ChangeSetError(
                    .rowCountMismatch,
                    "Invalid update: invalid number of rows in section \(j)\(i == j ? "" : " (section \(i) before)"). "
                        + "The number of rows contained in an existing section after the update (\(after)) must be "
                        + "equal to the number of rows contained in that section before the update (\(before)), plus "
                        + "or minus the number of rows inserted or deleted from that section (\(tally.inserts[j]) "
                        + "inserted, \(tally.deletes[i]) deleted) and plus or minus the number of rows moved into or "
                        + "out of that section (\(tally.movesIn[j]) moved in, \(tally.movesOut[i]) moved out)."
                )
            }
        }
        for (i, target) in layout.oldToNew.enumerated() where target == nil {
            let removed = tally.deletes[i] + tally.movesOut[i]
            guard removed == oldSectionCounts[i] else {
                throw ChangeSetError(
                    .incompleteSection,
                    "section \(i) is deleted but only \(removed) of its \(oldSectionCounts[i]) rows are deleted or "
                        + "moved out"
                )
            }
        }
        for (j, source) in layout.newToOld.enumerated() where source == nil {
            let added = tally.inserts[j] + tally.movesIn[j]
            guard added == newSectionCounts[j] else {
                throw ChangeSetError(
                    .incompleteSection,
                    "section \(j) is inserted but only \(added) of its \(newSectionCounts[j]) rows are inserted or "
                        + "moved in"
                )
            }
        }
    }

    /// Checks the change set against both lists: ``validate(oldSectionCounts:newSectionCounts:)``, then that
    /// applying it to `old` yields `new` exactly.
    ///
    /// This is the strongest check, meant for tests and debugging; it costs O(n + k log k).
    ///
    /// - Parameters:
    ///   - old: The list before the transition.
    ///   - new: The list after the transition.
    /// - Throws: ``ChangeSetError``; ``ChangeSetError/Code/resultMismatch`` names the first difference.
    public func validate(old: SectionedList<Element>, new: SectionedList<Element>) throws(ChangeSetError) {
        try self.validate(oldSectionCounts: old.sectionCounts, newSectionCounts: new.sectionCounts)
        let applied = try old.applying(self)
        guard applied != new else { return }
        for (j, (got, want)) in zip(applied.sections, new.sections).enumerated() {
            guard got.key == want.key, got.name.utf8Equals(want.name) else {
                throw ChangeSetError(
                    .resultMismatch,
                    "section \(j) has key \(got.key) and name \(Value.quote(got.name)) after applying, "
                        + "expected key \(want.key) and name \(Value.quote(want.name))"
                )
            }
            for (r, (a, b)) in zip(got.elements, want.elements).enumerated() where a != b {
                throw ChangeSetError(
                    .resultMismatch,
                    "the row at \(ListIndexPath(j, r)) after applying is \(a), expected \(b)"
                )
            }
        }
        throw ChangeSetError(.resultMismatch, "applying the change set does not yield the new list")
    }

    // MARK: - Steps

    /// How surviving sections pair up: each old section's new index (`nil` if deleted) and the reverse.
    private struct SectionLayout {
        var oldToNew: [Int?]
        var newToOld: [Int?]
    }

    /// Per-section counts of row changes: deletes and moves out by old section, inserts and moves in by new section.
    private struct RowTally {
        var deletes: [Int]
        var movesOut: [Int]
        var inserts: [Int]
        var movesIn: [Int]
    }

    /// Checks section indices and the section count, and pairs the surviving sections.
    private func validateSections(oldCount: Int, newCount: Int) throws(ChangeSetError) -> SectionLayout {
        var deleted = [Bool](repeating: false, count: oldCount)
        for s in self.deletedSections {
            guard deleted.indices.contains(s) else {
                throw ChangeSetError(
                    .sectionOutOfRange,
                    "attempt to delete section \(s), but there are only \(oldCount) sections before the update"
                )
            }
            guard !deleted[s] else { throw ChangeSetError(.duplicateSection, "attempt to delete section \(s) twice") }
            deleted[s] = true
        }
        var inserted = [Bool](repeating: false, count: newCount)
        for insertion in self.insertedSections {
            let s = insertion.index
            guard inserted.indices.contains(s) else {
                throw ChangeSetError(
                    .sectionOutOfRange,
                    "attempt to insert section \(s), but there are only \(newCount) sections after the update"
                )
            }
            guard !inserted[s] else { throw ChangeSetError(.duplicateSection, "attempt to insert section \(s) twice") }
            inserted[s] = true
        }
        let deletedCount = self.deletedSections.count
        let insertedCount = self.insertedSections.count
        guard newCount == oldCount - deletedCount + insertedCount else {
            throw ChangeSetError(
                .sectionCountMismatch,
                "Invalid update: invalid number of sections. The number of sections contained after the update "
                    + "(\(newCount)) must be equal to the number of sections contained before the update "
                    + "(\(oldCount)), plus or minus the number of sections inserted or deleted (\(insertedCount) "
                    + "inserted, \(deletedCount) deleted)."
            )
        }
        var layout = SectionLayout(
            oldToNew: [Int?](repeating: nil, count: oldCount),
            newToOld: [Int?](repeating: nil, count: newCount)
        )
        var j = 0
        for i in 0..<oldCount where !deleted[i] {
            while inserted[j] { j += 1 }
            layout.oldToNew[i] = j
            layout.newToOld[j] = i
            j += 1
        }
        return layout
    }

    /// Checks every row path against the section counts and for reuse, and tallies the changes per section.
    private func validateRowPaths(
        oldSectionCounts: [Int],
        newSectionCounts: [Int]
    ) throws(ChangeSetError) -> RowTally {
        var tally = RowTally(
            deletes: [Int](repeating: 0, count: oldSectionCounts.count),
            movesOut: [Int](repeating: 0, count: oldSectionCounts.count),
            inserts: [Int](repeating: 0, count: newSectionCounts.count),
            movesIn: [Int](repeating: 0, count: newSectionCounts.count)
        )
        // Each path's change, by its index: a dictionary of integers, specialized, where one of changes copied each
        // change with its element into it (and ran unspecialized). Changes read by index, as above.
        var oldUses: [ListIndexPath: Int] = [:]
        var newUses: [ListIndexPath: Int] = [:]
        oldUses.reserveCapacity(self.rowChanges.count)
        newUses.reserveCapacity(self.rowChanges.count)
        for i in 0..<self.rowChanges.count {
            let from: ListIndexPath?
            let to: ListIndexPath?
            let isMove: Bool
            switch self.rowChanges[i] {
            case .delete(_, let changeFrom):
                (from, to, isMove) = (changeFrom, nil, false)
            case .insert(_, let changeTo, _):
                (from, to, isMove) = (nil, changeTo, false)
            case .move(_, let changeFrom, let changeTo, _, _):
                (from, to, isMove) = (changeFrom, changeTo, true)
            case .update(_, let changeFrom, let changeTo, _, _):
                (from, to, isMove) = (changeFrom, changeTo, false)
            }
            if let from {
                guard oldSectionCounts.indices.contains(from.section),
                    (0..<oldSectionCounts[from.section]).contains(from.row)
                else {
                    throw ChangeSetError(
                        .indexPathOutOfRange,
                        SectionedList<Element>.outOfOldRange(from, Self.verb(self.rowChanges[i]), oldSectionCounts)
                    )
                }
                if let previous = oldUses.updateValue(i, forKey: from) {
                    throw ChangeSetError(
                        .duplicateIndexPath,
                        Self.reuse(self.rowChanges[previous], self.rowChanges[i], from, side: "from"))
                }
            }
            if let to {
                guard newSectionCounts.indices.contains(to.section) else {
                    throw ChangeSetError(
                        .indexPathOutOfRange,
                        "attempt to \(Self.verb(self.rowChanges[i])) row \(to.row) into section \(to.section), but "
                            + "there are only \(newSectionCounts.count) sections after the update"
                    )
                }
                guard (0..<newSectionCounts[to.section]).contains(to.row) else {
                    throw ChangeSetError(
                        .indexPathOutOfRange,
                        "attempt to \(Self.verb(self.rowChanges[i])) row \(to.row) into section \(to.section), but "
                            + "there are only \(newSectionCounts[to.section]) rows in section \(to.section) after the "
                            + "update"
                    )
                }
                if let previous = newUses.updateValue(i, forKey: to) {
                    throw ChangeSetError(
                        .duplicateIndexPath,
                        Self.reuse(self.rowChanges[previous], self.rowChanges[i], to, side: "to"))
                }
            }
            switch (from, to) {
            case (let from?, nil): tally.deletes[from.section] += 1
            case (nil, let to?): tally.inserts[to.section] += 1
            case (let from?, let to?) where isMove:
                tally.movesOut[from.section] += 1
                tally.movesIn[to.section] += 1
            default: break  // an update
            }
        }
        return tally
    }

    /// The table-view verb for a change: an update is a reload.
    private static func verb(_ change: RowChange) -> String {
        if case .update = change { return "reload" }
        return change.operation
    }

    /// The message for two changes using the same path, e.g. "attempt to delete and reload the same index path [0,1]".
    private static func reuse(_ first: RowChange, _ second: RowChange, _ path: ListIndexPath, side: String) -> String {
        func name(_ change: RowChange) -> String {
            if case .move = change { return "move \(side)" }
            return Self.verb(change)
        }
        let a = name(first)
        let b = name(second)
        if a == b {
            return "attempt to \(a) the same index path \(path) twice (ids \(first.id) and \(second.id))"
        }
        return "attempt to \(a) and \(b) the same index path \(path) (ids \(first.id) and \(second.id))"
    }
}
