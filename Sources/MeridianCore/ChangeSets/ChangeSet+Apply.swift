// MARK: - Apply

extension SectionedList {
    /// Applies a change set the way a table view performs batch updates, and returns the new list.
    ///
    /// In order: removes the rows at the old paths of deletes and moves (descending); removes the deleted sections
    /// (descending; they must be empty by then); inserts the inserted sections, empty (ascending); inserts the rows at
    /// the new paths of inserts and moves (ascending); and replaces the elements of updates at their new paths. Each
    /// step is one linear pass, so applying k changes to n rows costs O(n + k log k).
    ///
    /// The rows at removed or updated old paths must carry the change's id, and so must the elements the changes
    /// carry; the applied change set need not be in canonical order.
    ///
    /// ```swift
    /// let after = try before.applying(changes)
    /// ```
    ///
    /// - Parameter changeSet: The transition to apply, built against this list.
    /// - Returns: The list after the transition.
    /// - Throws: ``ChangeSetError`` when a path or section is out of range or used twice, a deleted section still
    ///   holds rows, or an id does not match the row at its path.
    public func applying(_ changeSet: ChangeSet<Element>) throws(ChangeSetError) -> SectionedList {
        var sections = try self.removingRows(of: changeSet)
        sections = try Self.removingSections(changeSet.deletedSections, from: sections)
        sections = try Self.insertingSections(changeSet.insertedSections, into: sections)
        var result = SectionedList(sections: try Self.insertingRows(of: changeSet, into: sections))

        // By index, so that the changes that are not updates are not copied to be matched (see `removingRows`).
        for i in 0..<changeSet.rowChanges.count {
            guard case .update(let id, let from, let to, let element, _) = changeSet.rowChanges[i] else { continue }
            guard self.contains(from) else {
                throw ChangeSetError(
                    .indexPathOutOfRange,
                    "attempt to reload row \(from.row) from section \(from.section), which does not exist before "
                        + "the update"
                )
            }
            guard self[from].id == id else {
                throw ChangeSetError(.idMismatch, "update of id \(id) at \(from), but that row has id \(self[from].id)")
            }
            guard result.contains(to) else {
                throw ChangeSetError(
                    .indexPathOutOfRange,
                    "attempt to reload row \(to.row) in section \(to.section), which does not exist after the update"
                )
            }
            guard result[to].id == id, element.id == id else {
                throw ChangeSetError(
                    .idMismatch,
                    "update of id \(id) to \(to), but the row there has id \(result[to].id) and the element id "
                        + "\(element.id)"
                )
            }
            result[to] = element
        }
        return result
    }

    // MARK: - Steps

    /// Step 1: the sections with the rows at the old paths of deletes and moves removed.
    private func removingRows(of changeSet: ChangeSet<Element>) throws(ChangeSetError) -> [ListSection<Element>] {
        var removed = [[Int]](repeating: [], count: self.sections.count)
        // Each change read in place by one `switch`: `for change in` and the accessors (`oldPath`, `id`) copied the
        // whole change, its element included, for each (a 300,000-row first load spent most of its apply there).
        for i in 0..<changeSet.rowChanges.count {
            // Bound one by one: a tuple of them would look its generic type's metadata up at run time for every row.
            let id: Element.ID
            let from: ListIndexPath
            switch changeSet.rowChanges[i] {
            case .delete(let changeID, let changeFrom), .move(let changeID, let changeFrom, _, _, _):
                id = changeID
                from = changeFrom
            case .insert, .update:
                continue
            }
            guard self.contains(from) else {
                throw ChangeSetError(
                    .indexPathOutOfRange,
                    Self.outOfOldRange(from, changeSet.rowChanges[i].operation, self.sectionCounts))
            }
            guard self[from].id == id else {
                throw ChangeSetError(
                    .idMismatch,
                    "\(changeSet.rowChanges[i].operation) of id \(id) from \(from), but that row has id "
                        + "\(self[from].id)"
                )
            }
            removed[from.section].append(from.row)
        }
        var sections = self.sections
        for s in sections.indices where !removed[s].isEmpty {
            removed[s].sort()
            var kept: [Element] = []
            kept.reserveCapacity(sections[s].elements.count - removed[s].count)
            var next = 0
            for (r, element) in sections[s].elements.enumerated() {
                if next < removed[s].count, removed[s][next] == r {
                    next += 1
                    if next < removed[s].count, removed[s][next] == r {
                        throw ChangeSetError(
                            .duplicateIndexPath,
                            "attempt to remove the same index path \(ListIndexPath(s, r)) twice"
                        )
                    }
                } else {
                    kept.append(element)
                }
            }
            sections[s].elements = kept
        }
        return sections
    }

    /// Step 2: the sections with the deleted ones (old indices, now empty) removed.
    private static func removingSections(
        _ deleted: [Int],
        from sections: [ListSection<Element>]
    ) throws(ChangeSetError) -> [ListSection<Element>] {
        guard !deleted.isEmpty else { return sections }
        var isDeleted = [Bool](repeating: false, count: sections.count)
        for s in deleted {
            guard sections.indices.contains(s) else {
                throw ChangeSetError(
                    .sectionOutOfRange,
                    "attempt to delete section \(s), but there are only \(sections.count) sections before the update"
                )
            }
            guard !isDeleted[s] else {
                throw ChangeSetError(.duplicateSection, "attempt to delete section \(s) twice")
            }
            guard sections[s].elements.isEmpty else {
                throw ChangeSetError(
                    .incompleteSection,
                    "section \(s) is deleted but \(sections[s].elements.count) of its rows are neither deleted nor "
                        + "moved out"
                )
            }
            isDeleted[s] = true
        }
        return sections.indices.filter { !isDeleted[$0] }.map { sections[$0] }
    }

    /// Step 3: the sections with the inserted ones (new indices, empty) added.
    private static func insertingSections(
        _ inserted: [SectionInsertion],
        into sections: [ListSection<Element>]
    ) throws(ChangeSetError) -> [ListSection<Element>] {
        guard !inserted.isEmpty else { return sections }
        let total = sections.count + inserted.count
        var slots = [SectionInsertion?](repeating: nil, count: total)
        for insertion in inserted {
            guard (0..<total).contains(insertion.index) else {
                throw ChangeSetError(
                    .sectionOutOfRange,
                    "attempt to insert section \(insertion.index), but there are only \(total) sections after "
                        + "the update"
                )
            }
            guard slots[insertion.index] == nil else {
                throw ChangeSetError(.duplicateSection, "attempt to insert section \(insertion.index) twice")
            }
            slots[insertion.index] = insertion
        }
        var result: [ListSection<Element>] = []
        result.reserveCapacity(total)
        var next = 0
        for slot in slots {
            if let slot {
                result.append(ListSection(key: slot.key, name: slot.name, elements: []))
            } else {
                result.append(sections[next])
                next += 1
            }
        }
        return result
    }

    /// Step 4: the sections with the rows of inserts and moves added at their new paths.
    private static func insertingRows(
        of changeSet: ChangeSet<Element>,
        into sections: [ListSection<Element>]
    ) throws(ChangeSetError) -> [ListSection<Element>] {
        // The added elements in the change set's order, and per section the new rows with each element's slot: pairs
        // of integers, whose arrays and sort need no generic metadata at run time (this code runs unspecialized for
        // the caller's element type; pairs of a row and an element looked up their tuple's metadata per row).
        var elements: [Element] = []
        var added = [[(row: Int, slot: Int)]](repeating: [], count: sections.count)
        // Each change read in place by one `switch` (see `removingRows`).
        for i in 0..<changeSet.rowChanges.count {
            let id: Element.ID
            let to: ListIndexPath
            let element: Element
            switch changeSet.rowChanges[i] {
            case .insert(let changeID, let changeTo, let changeElement),
                .move(let changeID, _, let changeTo, let changeElement, _):
                id = changeID
                to = changeTo
                element = changeElement
            case .delete, .update:
                continue
            }
            guard to.section >= 0, to.section < sections.count, to.row >= 0 else {
                throw ChangeSetError(
                    .indexPathOutOfRange,
                    "attempt to \(changeSet.rowChanges[i].operation) row \(to.row) into section \(to.section), but "
                        + "there are only \(sections.count) sections after the update"
                )
            }
            guard element.id == id else {
                throw ChangeSetError(
                    .idMismatch,
                    "\(changeSet.rowChanges[i].operation) of id \(id) carries element id \(element.id)")
            }
            added[to.section].append((to.row, elements.count))
            elements.append(element)
        }
        var sections = sections
        for s in 0..<sections.count where !added[s].isEmpty {
            // A canonical change set lists them in ascending order already.
            if !Self.isAscending(added[s]) { added[s].sort { $0.row < $1.row } }
            let total = sections[s].elements.count + added[s].count
            var merged: [Element] = []
            merged.reserveCapacity(total)
            var survivors = sections[s].elements.makeIterator()
            var next = 0
            for r in 0..<total {
                if next < added[s].count, added[s][next].row == r {
                    merged.append(elements[added[s][next].slot])
                    next += 1
                    if next < added[s].count, added[s][next].row == r {
                        throw ChangeSetError(.duplicateIndexPath, "attempt to fill \(ListIndexPath(s, r)) twice")
                    }
                } else if let survivor = survivors.next() {
                    merged.append(survivor)
                } else {
                    break  // an addition lies beyond the end of the section
                }
            }
            if next < added[s].count {
                let row = added[s][next].row
                throw ChangeSetError(
                    .indexPathOutOfRange,
                    "attempt to insert row \(row) into section \(s), but there are only \(total) rows in section \(s) "
                        + "after the update"
                )
            }
            sections[s].elements = merged
        }
        return sections
    }

    /// Whether the rows ascend (equal neighbours allowed: the merge reports them).
    private static func isAscending(_ added: [(row: Int, slot: Int)]) -> Bool {
        var previous = Int.min
        for pair in added {
            if pair.row < previous { return false }
            previous = pair.row
        }
        return true
    }

    /// The UIKit-style message for an old path outside the old list.
    static func outOfOldRange(_ path: ListIndexPath, _ operation: String, _ counts: [Int]) -> String {
        guard counts.indices.contains(path.section) else {
            return "attempt to \(operation) row \(path.row) from section \(path.section), but there are only "
                + "\(counts.count) sections before the update"
        }
        return "attempt to \(operation) row \(path.row) from section \(path.section) which only contains "
            + "\(counts[path.section]) rows before the update"
    }
}
