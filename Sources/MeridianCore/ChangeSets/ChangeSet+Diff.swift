// MARK: - Diff

extension ChangeSet {
    /// Computes the change set that turns `old` into `new`, with as few moves as possible.
    ///
    /// Sections are matched by key (and must keep their name to match). Sections only in `old` are deleted, sections
    /// only in `new` are inserted. Of the matched sections, the longest run that keeps its relative order survives;
    /// the others are reported as deleted and inserted again, their rows moved out and in.
    ///
    /// Rows are matched by id. Within each surviving section, the longest subsequence of rows that were already in
    /// that section and kept their relative order stays in place; such a row is an update if its value changed (or
    /// `changedAttributes` names an attribute) and is not reported otherwise. Every other row present in both lists
    /// is a move, carrying its new value, even if that value did not change. Rows only in `old` are deletes, rows only
    /// in `new` inserts. The result is in canonical order (see ``canonicalized()``) and complete: every row of a
    /// deleted section is deleted or moved out, every row of an inserted section inserted or moved in.
    ///
    /// Runs in O((n + m) log n) for lists of n and m rows (hashing, and patience sorting per section).
    ///
    /// ```swift
    /// let changes = try ChangeSet.between(old: before, new: after)
    /// try changes.validate(old: before, new: after)     // always passes
    /// ```
    ///
    /// - Parameters:
    ///   - old: The list before the transition.
    ///   - new: The list after the transition.
    ///   - changedAttributes: Names the attributes that differ between an old and a new element of the same id; fills
    ///     the `changed` field of moves and updates. The default names none, so only `==` decides updates.
    /// - Returns: The change set, in canonical order.
    /// - Throws: ``ChangeSetError/Code/invalidList`` when either list repeats an element id or a section key.
    public static func between(
        old: SectionedList<Element>,
        new: SectionedList<Element>,
        changedAttributes: (Element, Element) -> [String] = { _, _ in [] }
    ) throws(ChangeSetError) -> ChangeSet {
        try Self.between(old: old, new: new, changedAttributes: changedAttributes, newIsDistinct: false)
    }

    /// ``between(old:new:changedAttributes:)``; with `newIsDistinct`, the caller vouches that `new` repeats no id,
    /// and a first load (an empty `old`) does not hash every new id to check it.
    package static func between(
        old: SectionedList<Element>,
        new: SectionedList<Element>,
        changedAttributes: (Element, Element) -> [String],
        newIsDistinct: Bool
    ) throws(ChangeSetError) -> ChangeSet {
        let (oldToNewSection, newToOldSection) = try Self.matchSections(old: old, new: new)

        var result = ChangeSet()
        for (i, target) in oldToNewSection.enumerated().reversed() where target == nil {
            result.deletedSections.append(i)
        }
        for (j, source) in newToOldSection.enumerated() where source == nil {
            let section = new.sections[j]
            result.insertedSections.append(SectionInsertion(index: j, key: section.key, name: section.name))
        }

        // Where each old row was, and which ids remain.
        var oldPaths: [Element.ID: ListIndexPath] = [:]
        oldPaths.reserveCapacity(old.count)
        for (s, section) in old.sections.enumerated() {
            for (r, element) in section.elements.enumerated()
            where oldPaths.updateValue(ListIndexPath(s, r), forKey: element.id) != nil {
                throw ChangeSetError(.invalidList, "the old list holds id \(element.id) twice")
            }
        }
        // The new ids: to tell the old rows that stay (none on a first load), and to refuse a repeated one (unless
        // vouched for).
        let needsNewIDs = old.count > 0 || !newIsDistinct
        var newIDs = Set<Element.ID>(minimumCapacity: needsNewIDs ? new.count : 0)
        for section in new.sections where needsNewIDs {
            for element in section.elements where !newIDs.insert(element.id).inserted {
                throw ChangeSetError(.invalidList, "the new list holds id \(element.id) twice")
            }
        }

        var deletes: [RowChange] = []
        for (s, section) in old.sections.enumerated().reversed() {
            for (r, element) in section.elements.enumerated().reversed() where !newIDs.contains(element.id) {
                deletes.append(.delete(id: element.id, from: ListIndexPath(s, r)))
            }
        }

        var inserts: [RowChange] = []
        var moves: [RowChange] = []
        var updates: [RowChange] = []
        // A first load: every row an insert, each appended once into an array of its final size, which becomes the
        // change set's (a 200,000-row load otherwise grew an array by doubling and then copied it).
        if oldPaths.isEmpty {
            inserts.reserveCapacity(new.count)
            for (j, section) in new.sections.enumerated() {
                for (r, element) in section.elements.enumerated() {
                    inserts.append(.insert(id: element.id, to: ListIndexPath(j, r), element: element))
                }
            }
            result.rowChanges = inserts
            return result
        }
        for (j, section) in new.sections.enumerated() {
            // Old paths of this section's rows, and the rows that were already in the matching old section.
            let pairedOld = newToOldSection[j]
            var fromPaths: [ListIndexPath?] = []
            fromPaths.reserveCapacity(section.elements.count)
            var stayingCandidates: [Int] = []
            for element in section.elements {
                let from = oldPaths[element.id]
                fromPaths.append(from)
                if let from, from.section == pairedOld { stayingCandidates.append(from.row) }
            }
            let inPlace = longestIncreasingSubsequenceMask(stayingCandidates)

            var candidate = 0
            for (r, element) in section.elements.enumerated() {
                let to = ListIndexPath(j, r)
                guard let from = fromPaths[r] else {
                    inserts.append(.insert(id: element.id, to: to, element: element))
                    continue
                }
                var stays = false
                if from.section == pairedOld {
                    stays = inPlace[candidate]
                    candidate += 1
                }
                let before = old[from]
                let changed = changedAttributes(before, element)
                if !stays {
                    moves.append(.move(id: element.id, from: from, to: to, element: element, changed: changed))
                } else if before != element || !changed.isEmpty {
                    updates.append(.update(id: element.id, from: from, to: to, element: element, changed: changed))
                }
            }
        }

        result.rowChanges = deletes
        result.rowChanges.reserveCapacity(deletes.count + inserts.count + moves.count + updates.count)
        result.rowChanges += inserts
        result.rowChanges += moves
        result.rowChanges += updates
        return result
    }

    /// Pairs the surviving sections of `old` and `new`: equal key and name, and on the longest run that keeps its
    /// relative order.
    ///
    /// - Returns: For each old section its new index (or `nil` if deleted), and for each new section its old index
    ///   (or `nil` if inserted).
    private static func matchSections(
        old: SectionedList<Element>,
        new: SectionedList<Element>
    ) throws(ChangeSetError) -> (oldToNew: [Int?], newToOld: [Int?]) {
        var oldIndexByKey: [Value: Int] = [:]
        for (i, section) in old.sections.enumerated() where oldIndexByKey.updateValue(i, forKey: section.key) != nil {
            throw ChangeSetError(.invalidList, "the old list holds section key \(section.key) twice")
        }
        var newKeys = Set<Value>()
        var candidateOld: [Int] = []
        var candidateNew: [Int] = []
        for (j, section) in new.sections.enumerated() {
            guard newKeys.insert(section.key).inserted else {
                throw ChangeSetError(.invalidList, "the new list holds section key \(section.key) twice")
            }
            if let i = oldIndexByKey[section.key], old.sections[i].name.utf8Equals(section.name) {
                candidateOld.append(i)
                candidateNew.append(j)
            }
        }
        let kept = longestIncreasingSubsequenceMask(candidateOld)
        var oldToNew = [Int?](repeating: nil, count: old.sections.count)
        var newToOld = [Int?](repeating: nil, count: new.sections.count)
        for k in kept.indices where kept[k] {
            oldToNew[candidateOld[k]] = candidateNew[k]
            newToOld[candidateNew[k]] = candidateOld[k]
        }
        return (oldToNew, newToOld)
    }
}

// MARK: - Rows

extension ChangeSet where Element == Row {
    /// Computes the change set between two lists of rows, naming changed attributes with
    /// ``Row/changedAttributes(from:)``.
    ///
    /// Equivalent to ``between(old:new:changedAttributes:)`` with a closure that compares attribute values strictly
    /// (an int `1` differs from a double `1.0`), so an update is reported whenever any attribute's stored value
    /// changed.
    ///
    /// - Parameters:
    ///   - old: The rows before the transition.
    ///   - new: The rows after the transition.
    /// - Returns: The change set, in canonical order.
    /// - Throws: ``ChangeSetError/Code/invalidList`` when either list repeats a row id or a section key.
    public static func between(old: SectionedList<Row>, new: SectionedList<Row>) throws(ChangeSetError) -> ChangeSet {
        try Self.between(old: old, new: new, newIsDistinct: false)
    }

    /// ``between(old:new:)``, for a `new` the caller knows repeats no id (see
    /// ``between(old:new:changedAttributes:newIsDistinct:)``).
    package static func between(
        old: SectionedList<Row>, new: SectionedList<Row>, newIsDistinct: Bool
    ) throws(ChangeSetError) -> ChangeSet {
        try Self.between(
            old: old, new: new, changedAttributes: { before, after in after.changedAttributes(from: before) },
            newIsDistinct: newIsDistinct)
    }
}
