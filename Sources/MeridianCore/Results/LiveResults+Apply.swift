// MARK: - Applying a batch
//
// One batch of k mutations becomes one change set in O(k log n + k log k), never by re-running the query:
//
// 1. Last mutation per id wins. Each id gets its old image (if it matched) and its new image (if the after-image
//    matches the predicate); ids that neither matched nor match, and rows whose image did not change, drop out.
// 2. Before touching the tree: the old rank of every touched row. With a limit, also up to k untouched rows on each
//    side of the window's edge: untouched rows keep their relative order, so the only untouched rows that can enter
//    or leave the window are the first k beyond it and the last k inside it.
// 3. Mutate the tree and the section counts; then the new rank of every row gathered so far.
// 4. Rows inside the old window only are deletes, inside the new window only inserts. Unchanged rows in both never
//    move. A changed row in both stays in place (an update) when it kept its section and the same number of unchanged
//    survivors before it ("its gap"), and is on a longest increasing subsequence of new ranks among such rows taken
//    in old order; every other changed row in both windows is a move. Sections whose visible row count went from
//    zero to more are inserted, from more to zero deleted; their rows are necessarily all inserts, deletes or moves,
//    which is the completeness the validator checks.
//
// Results that matched nothing before take a shortcut: every row is an insert, so the batch's rows are sorted in at
// once, as `reset(uniqueRows:)` does (O(k log k)), with the same results and change set (pinned against the
// one-by-one path, `applyOneByOne`).
//
// A batch large against the results (`mergesBatch`: 20,000 inserts into 20,000 rows, or 50,000 into 1,000,000) is
// merged instead of put in row by row: one walk of the tree in order gives every old rank, the surviving rows and the
// batch's new rows (sorted) merge into the new order, and the tree and the id index are rebuilt from it, as a reset
// builds them, so that a row's new slot is its new rank. O(n + k log k) instead of O(k log n), and what it costs per
// row is a step of a walk and of a merge, not three descents of the tree, each comparing (and copying) a row at every
// level: the same results and change set (pinned against the one-by-one path, `applyMerging`).

extension LiveResults {
    /// A row whose position may change in this batch.
    private struct Entry {
        var id: String
        /// The row before the batch, if it matched.
        var oldRow: Row?
        /// The row after the batch, if it matches.
        var newRow: Row?
        /// Whether the batch changed the row (otherwise it is an untouched row at the window's edge).
        var touched: Bool
        var oldRank = 0
        var newRank = 0
        var oldPath: ListIndexPath?
        var newPath: ListIndexPath?

        /// A row shown before and after whose value did not change.
        var isUnchangedSurvivor: Bool { !self.touched && self.oldPath != nil && self.newPath != nil }
    }

    /// Applies one commit's mutations and returns the change set from the results before to the results after.
    ///
    /// Membership is decided from each after-image: an upsert of a row that matches the predicate inserts or
    /// updates it, an upsert of a row that does not match removes it if it was there, and a delete removes it. When
    /// one id appears more than once, the last mutation wins. All old paths in the change set address the results
    /// before the call, all new paths the results after it.
    ///
    /// ```swift
    /// let changes = results.apply([.upsert(row), .delete(id: "9")])
    /// tableView.performBatchUpdates(changes)
    /// ```
    ///
    /// - Parameter mutations: The changed rows of one commit, in commit order.
    /// - Returns: The change set in canonical order (empty when nothing shown changed). Costs O(k log n) for k
    ///   mutations and n matching rows, or O(n + k log k) for a batch large against the results (merged).
    public mutating func apply(_ mutations: [RowMutation]) -> ChangeSet<Row> {
        self.apply(uniqueMutations: Self.lastPerID(mutations))
    }

    /// ``apply(_:)`` for mutations that name each id once (a client's commit names the ids of a set): no look-up of
    /// which mutation of an id is its last.
    package mutating func apply(uniqueMutations mutations: [RowMutation]) -> ChangeSet<Row> {
        // Nothing matched before (a first load arriving as a batch): every row is an insert, and sorting them at once
        // as a reset does gives the same results and change set as k inserts into the tree, at a fraction of the cost
        // (each insert compared its way down the tree, with a rank before and after). No row had an old image to
        // look up, and a delete changes nothing; the reset keeps the rows that match.
        if self.tree.count == 0 {
            var rows: [Row] = []
            rows.reserveCapacity(mutations.count)
            for case .upsert(let row) in mutations { rows.append(row) }
            return rows.isEmpty ? ChangeSet() : self.reset(uniqueRows: rows)
        }
        let entries = self.touchedEntries(mutations)
        guard !entries.isEmpty else { return ChangeSet() }
        let merging = Self.mergesBatch(touching: entries.count, of: self.tree.count)
        return self.apply(consume entries, merging: merging)
    }

    /// ``apply(_:)`` without the shortcuts for results that matched nothing and for large batches: every row goes
    /// into the tree on its own. For tests that pin the shortcuts against it.
    package mutating func applyOneByOne(_ mutations: [RowMutation]) -> ChangeSet<Row> {
        let entries = self.touchedEntries(Self.lastPerID(mutations))
        guard !entries.isEmpty else { return ChangeSet() }
        return self.apply(consume entries, merging: false)
    }

    /// ``apply(_:)`` merging the batch into the tree whatever its size (the path of large batches). For tests that
    /// pin it against ``applyOneByOne(_:)``.
    package mutating func applyMerging(_ mutations: [RowMutation]) -> ChangeSet<Row> {
        let entries = self.touchedEntries(Self.lastPerID(mutations))
        guard !entries.isEmpty else { return ChangeSet() }
        return self.apply(consume entries, merging: true)
    }

    /// Whether a batch touching `touched` rows of results holding `count` is merged into the tree rather than put in
    /// row by row: when walking and rebuilding every row costs less than the batch's descents (three a row, each of
    /// log₂ n steps whose cost grows with the tree, as it outgrows the caches). Fitted to `meridian-bench results`'
    /// batches of n/2 to n/128 new rows (the merge broke even at about n/8 of 9,000 rows, n/20 of 90,000 and n/25
    /// of 900,000): k · log₂(n)² ≥ 16 n, with log₂ n rounded up.
    static func mergesBatch(touching touched: Int, of count: Int) -> Bool {
        let log = Int.bitWidth - count.leadingZeroBitCount
        return touched >= 256 && touched * log * log >= 16 * count
    }

    /// Steps 2 to 4 for the touched rows of a batch, merging them into the tree (with every row's old rank from one
    /// walk) or putting them in one by one. The entries are taken, not borrowed: setting their ranks and paths below
    /// would otherwise copy the whole array while the caller still held it (a retain and a release of every id and
    /// row, ~2% of a watcher's CPU for a 20,000-row batch into shown rows, perf).
    private mutating func apply(_ entries: consuming [Entry], merging: Bool) -> ChangeSet<Row> {
        let touchedCount = entries.count

        // Old state.
        let oldVisible = self.visibleCount
        // Merging: every old rank from one walk of the tree, and the slots the batch's old rows leave (the entries
        // are all touched rows until the window's edge joins them).
        let order = merging ? self.tree.slotsInOrder() : []
        var leaving: [Bool] = []
        if merging {
            var rankBySlot = [Int32](repeating: -1, count: self.tree.slotCount)
            for (rank, slot) in order.enumerated() { rankBySlot[Int(slot)] = Int32(rank) }
            leaving = [Bool](repeating: false, count: self.tree.slotCount)
            for i in entries.indices where entries[i].oldRow != nil {
                let slot = Int(self.slot(of: entries[i].id)!)
                entries[i].oldRank = Int(rankBySlot[slot])
                leaving[slot] = true
            }
        } else {
            for i in entries.indices {
                if let old = entries[i].oldRow { entries[i].oldRank = self.rank(of: old) }
            }
        }
        if self.limit != nil {
            entries += self.windowEdgeEntries(touched: Set(entries.map(\.id)), limit: touchedCount)
        }
        var placements: [Value: (old: SectionPlacement, new: SectionPlacement)] = [:]
        if self.sectionKey == nil {
            // One section, whatever the rows.
            let key = SectionedList<Row>.unsectionedKey
            let old = self.sectionPlacement(key)
            placements[key] = (old, old)
        } else {
            func place(_ row: Row) {
                let key = self.sectionValue(of: row)
                if placements[key] == nil {
                    let old = self.sectionPlacement(key)
                    placements[key] = (old, old)
                }
            }
            for i in entries.indices {
                if let row = entries[i].oldRow { place(row) }
                if let row = entries[i].newRow { place(row) }
            }
        }
        for i in entries.indices where entries[i].oldRow != nil && entries[i].oldRank < oldVisible {
            let old = placements[self.sectionValue(of: entries[i].oldRow!)]!.old
            entries[i].oldPath = ListIndexPath(old.index, entries[i].oldRank - old.offset)
        }

        // Mutate.
        if merging {
            self.merge(entries, order: order, leaving: leaving)
        } else {
            for i in entries.indices where entries[i].touched {
                guard let old = entries[i].oldRow else { continue }
                self.unindex(entries[i].id)
                self.tree.remove(ordering: self.ordering(of: old))
                self.removeFromSection(old)
            }
            for i in entries.indices where entries[i].touched {
                guard let new = entries[i].newRow else { continue }
                self.index(self.tree.insert(new, ordering: self.ordering(of: new)), for: entries[i].id)
                self.addToSection(new)
            }
        }

        // New state. A merge rebuilt the tree in order: a row's slot is its rank.
        let newVisible = self.visibleCount
        for key in placements.keys { placements[key]!.new = self.sectionPlacement(key) }
        for i in entries.indices {
            guard let new = entries[i].newRow else { continue }
            entries[i].newRank = merging ? Int(self.slot(of: entries[i].id)!) : self.rank(of: new)
            if entries[i].newRank < newVisible {
                let placement = placements[self.sectionValue(of: new)]!.new
                entries[i].newPath = ListIndexPath(placement.index, entries[i].newRank - placement.offset)
            }
        }

        var changes = ChangeSet<Row>()
        if self.sectionKey != nil {
            for (key, placement) in placements {
                let wasShown = placement.old.visibleCount > 0
                let isShown = placement.new.visibleCount > 0
                if wasShown && !isShown { changes.deletedSections.append(placement.old.index) }
                if isShown && !wasShown {
                    changes.insertedSections.append(
                        SectionInsertion(index: placement.new.index, key: key, name: self.sectionName(key)))
                }
            }
        }
        changes.rowChanges = self.rowChanges(entries)
        return changes.canonicalized()
    }

    /// Step 3 for a merged batch: the rows the batch leaves in the tree (those not `leaving`, by slot), walked in
    /// `order` (the tree's slots in order, taken before), and the batch's new rows, sorted, merged into the new
    /// order, which the tree and the id index are rebuilt from; the sections counted row by row.
    private mutating func merge(_ entries: [Entry], order: [OrderStatisticTree<Row>.Slot], leaving: [Bool]) {
        var arriving: [Row] = []
        arriving.reserveCapacity(entries.count)
        for i in entries.indices where entries[i].touched {
            if let old = entries[i].oldRow { self.removeFromSection(old) }
            if let new = entries[i].newRow {
                arriving.append(new)
                self.addToSection(new)
            }
        }
        let incoming = self.sorted(arriving)
        var merged: [Row] = []
        merged.reserveCapacity(order.count + incoming.count)
        var next = 0
        for slot in order where !leaving[Int(slot)] {
            let row = self.tree[slot]
            // The incoming rows that come before this staying one.
            while next < incoming.count, self.compare(incoming[next], row) < 0 {
                merged.append(incoming[next])
                next += 1
            }
            merged.append(row)
        }
        merged.append(contentsOf: incoming[next...])
        self.rebuild(ordered: merged)
    }

    // MARK: - Steps

    /// The last mutation of each id, in the order of each id's first.
    private static func lastPerID(_ mutations: [RowMutation]) -> [RowMutation] {
        guard mutations.count > 1 else { return mutations }
        var position: [String: Int] = .init(minimumCapacity: mutations.count)
        var latest: [RowMutation] = []
        latest.reserveCapacity(mutations.count)
        for mutation in mutations {
            if let p = position[mutation.id] {
                latest[p] = mutation
            } else {
                position[mutation.id] = latest.count
                latest.append(mutation)
            }
        }
        return latest
    }

    /// Step 1: each id's old and new images, dropping those that change nothing shown (`mutations` name each id
    /// once).
    private func touchedEntries(_ mutations: [RowMutation]) -> [Entry] {
        var entries: [Entry] = []
        entries.reserveCapacity(mutations.count)
        for mutation in mutations {
            let old = self.slot(of: mutation.id).map { self.tree[$0] }
            var new: Row?
            if case .upsert(let row) = mutation, self.predicate.evaluate(row) { new = row }
            switch (old, new) {
            case (nil, nil):
                continue
            case (let old?, let new?) where old == new && new.changedAttributes(from: old).isEmpty:
                continue
            default:
                entries.append(Entry(id: mutation.id, oldRow: old, newRow: new, touched: true))
            }
        }
        return entries
    }

    /// Step 2: up to `limit` untouched rows just inside the window and up to `limit` just beyond it, with their old
    /// ranks. Untouched rows keep their image, so their new image is their old one.
    private func windowEdgeEntries(touched: Set<String>, limit: Int) -> [Entry] {
        let edge = self.visibleCount
        var result: [Entry] = []
        var inside = 0
        var rank = edge - 1
        while inside < limit, rank >= 0 {
            let row = self.tree.element(at: rank)
            if !touched.contains(row.id) {
                result.append(Entry(id: row.id, oldRow: row, newRow: row, touched: false, oldRank: rank))
                inside += 1
            }
            rank -= 1
        }
        var beyond = 0
        rank = edge
        while beyond < limit, rank < self.tree.count {
            let row = self.tree.element(at: rank)
            if !touched.contains(row.id) {
                result.append(Entry(id: row.id, oldRow: row, newRow: row, touched: false, oldRank: rank))
                beyond += 1
            }
            rank += 1
        }
        return result
    }

    /// Step 4: deletes, inserts, moves and updates from the entries' old and new paths.
    private func rowChanges(_ entries: [Entry]) -> [ChangeSet<Row>.RowChange] {
        var changes: [ChangeSet<Row>.RowChange] = []
        // Ranks of the rows shown before (after) that are not unchanged survivors, sorted: the rows that do not
        // count towards a changed survivor's gap.
        var oldOthers: [Int] = []
        var newOthers: [Int] = []
        var changedSurvivors: [Int] = []
        // By index: an entry copied out of the array is a retain and a release of its id and both rows.
        for i in entries.indices {
            switch (entries[i].oldPath, entries[i].newPath) {
            case (let from?, nil):
                changes.append(.delete(id: entries[i].id, from: from))
                oldOthers.append(entries[i].oldRank)
            case (nil, let to?):
                changes.append(.insert(id: entries[i].id, to: to, element: entries[i].newRow!))
                newOthers.append(entries[i].newRank)
            case (_?, _?) where entries[i].touched:
                changedSurvivors.append(i)
                oldOthers.append(entries[i].oldRank)
                newOthers.append(entries[i].newRank)
            default:
                break  // unchanged in both, or shown in neither
            }
        }
        guard !changedSurvivors.isEmpty else { return changes }
        oldOthers.sort()
        newOthers.sort()

        // Changed survivors that may stay in place: same section, same gap. Taken in old order, those whose new
        // ranks increase stay; the rest move.
        var candidates: [Int] = []
        for i in changedSurvivors {
            let entry = entries[i]
            let sameSection =
                self.sectionKey == nil
                || Value.compare(self.sectionValue(of: entry.oldRow!), self.sectionValue(of: entry.newRow!)) == 0
            let oldGap = entry.oldRank - Self.countLess(than: entry.oldRank, in: oldOthers)
            let newGap = entry.newRank - Self.countLess(than: entry.newRank, in: newOthers)
            if sameSection && oldGap == newGap { candidates.append(i) }
        }
        candidates.sort { entries[$0].oldRank < entries[$1].oldRank }
        let stays = longestIncreasingSubsequenceMask(candidates.map { entries[$0].newRank })
        var staying = Set<Int>()
        for (k, i) in candidates.enumerated() where stays[k] { staying.insert(i) }

        for i in changedSurvivors {
            let entry = entries[i]
            let new = entry.newRow!
            let changed = new.changedAttributes(from: entry.oldRow!)
            if staying.contains(i) {
                changes.append(
                    .update(id: entry.id, from: entry.oldPath!, to: entry.newPath!, element: new, changed: changed))
            } else {
                changes.append(
                    .move(id: entry.id, from: entry.oldPath!, to: entry.newPath!, element: new, changed: changed))
            }
        }
        return changes
    }

    /// The number of elements of a sorted array less than `value`.
    private static func countLess(than value: Int, in sorted: [Int]) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            if sorted[mid] < value { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
