// MARK: - SectionInsertion

/// A section inserted by a ``ChangeSet``: its index in the new list, its key and its display name.
public struct SectionInsertion: Sendable, Hashable, CustomStringConvertible {
    /// The index of the section in the new list.
    public var index: Int
    /// The section's identity (section-key value).
    public var key: Value
    /// The section's display name.
    public var name: String

    /// Creates a section insertion.
    ///
    /// - Parameters:
    ///   - index: The index of the section in the new list.
    ///   - key: The section-key value.
    ///   - name: The display name; defaults to the empty string.
    public init(index: Int, key: Value, name: String = "") {
        self.index = index
        self.key = key
        self.name = name
    }

    /// The insertion as `section 2 (key 7, name "7")`.
    public var description: String { "section \(self.index) (key \(self.key), name \(Value.quote(self.name)))" }
}

// MARK: - ChangeSet

/// One transition of an ordered, sectioned result, under the fetched-results-controller contract.
///
/// Deleted sections are given by their index in the old list, inserted sections by their index in the new list. Row
/// changes address the old list by their `from` paths and the new list by their `to` paths:
///
/// - ``RowChange/delete(id:from:)``: the row left;
/// - ``RowChange/insert(id:to:element:)``: the row entered;
/// - ``RowChange/move(id:from:to:element:changed:)``: the row stayed but changed section, or its position relative
///   to the other survivors of its section changed; it carries its new value, whether or not that changed;
/// - ``RowChange/update(id:from:to:element:changed:)``: the row kept its section and relative order, and its value
///   changed.
///
/// The change set is complete: every row of a deleted section is deleted or moved out, and every row of an inserted
/// section is inserted or moved in. Applying it as a table view does — removals at old paths descending, section
/// deletes descending, section inserts ascending, additions at new paths ascending, then updates in place — turns
/// the old list into the new one exactly (``SectionedList/applying(_:)``).
///
/// A change set can come from the diff (``between(old:new:changedAttributes:)``) or be built by hand, change by
/// change, in any order; ``validate(oldSectionCounts:newSectionCounts:)`` does not depend on how it was built.
///
/// ```swift
/// var changes = ChangeSet<Row>()
/// changes.rowChanges.append(.delete(id: "a", from: ListIndexPath(0, 3)))
/// changes.rowChanges.append(.insert(id: "b", to: ListIndexPath(0, 0), element: rowB))
/// try changes.validate(oldSectionCounts: [4], newSectionCounts: [4])
/// ```
public struct ChangeSet<Element: Identifiable & Equatable & Sendable>: Sendable, Equatable
where Element.ID: Sendable {
    /// One change to one row.
    public enum RowChange: Sendable, Equatable, CustomStringConvertible {
        /// The row with this id left; `from` is its path in the old list.
        case delete(id: Element.ID, from: ListIndexPath)
        /// The row with this id entered at `to` in the new list.
        case insert(id: Element.ID, to: ListIndexPath, element: Element)
        /// The row moved from `from` (old list) to `to` (new list); `element` is its new value and `changed` the
        /// attributes that changed (empty when its value did not change or nobody computed them).
        case move(id: Element.ID, from: ListIndexPath, to: ListIndexPath, element: Element, changed: [String])
        /// The row changed value without moving relative to its section's other survivors; `from` is its path in the
        /// old list, `to` in the new list, `element` its new value and `changed` the attributes that changed.
        case update(id: Element.ID, from: ListIndexPath, to: ListIndexPath, element: Element, changed: [String])

        /// The id of the row.
        @inlinable
        public var id: Element.ID {
            switch self {
            case .delete(let id, _), .insert(let id, _, _), .move(let id, _, _, _, _), .update(let id, _, _, _, _):
                id
            }
        }

        /// The row's path in the old list (`nil` for an insert).
        @inlinable
        public var oldPath: ListIndexPath? {
            switch self {
            case .delete(_, let from), .move(_, let from, _, _, _), .update(_, let from, _, _, _): from
            case .insert: nil
            }
        }

        /// The row's path in the new list (`nil` for a delete).
        @inlinable
        public var newPath: ListIndexPath? {
            switch self {
            case .insert(_, let to, _), .move(_, _, let to, _, _), .update(_, _, let to, _, _): to
            case .delete: nil
            }
        }

        /// The row's new value (`nil` for a delete).
        @inlinable
        public var element: Element? {
            switch self {
            case .insert(_, _, let element), .move(_, _, _, let element, _), .update(_, _, _, let element, _): element
            case .delete: nil
            }
        }

        /// The names of the changed attributes of a move or an update (empty otherwise).
        @inlinable
        public var changed: [String] {
            switch self {
            case .move(_, _, _, _, let changed), .update(_, _, _, _, let changed): changed
            case .delete, .insert: []
            }
        }

        /// The operation's name, as the CLI prints it: `delete`, `insert`, `move` or `update`.
        @inlinable
        public var operation: String {
            switch self {
            case .delete: "delete"
            case .insert: "insert"
            case .move: "move"
            case .update: "update"
            }
        }

        /// Whether the change removes a row from the old list (a delete or a move).
        @inlinable
        public var removesRow: Bool {
            switch self {
            case .delete, .move: true
            case .insert, .update: false
            }
        }

        /// Whether the change adds a row to the new list (an insert or a move).
        @inlinable
        public var addsRow: Bool {
            switch self {
            case .insert, .move: true
            case .delete, .update: false
            }
        }

        /// The change as `move 7 from [0,1] to [1,0] changed ["title"]`.
        public var description: String {
            var text = "\(self.operation) \(self.id)"
            if let from = self.oldPath { text += " from \(from)" }
            if let to = self.newPath { text += " to \(to)" }
            if !self.changed.isEmpty { text += " changed \(self.changed)" }
            return text
        }
    }

    /// Indices, in the old list, of the sections that were deleted.
    public var deletedSections: [Int]
    /// The sections that were inserted, with their indices in the new list.
    public var insertedSections: [SectionInsertion]
    /// The row changes, in any order (see ``canonicalized()``).
    public var rowChanges: [RowChange]

    /// Creates a change set; with no arguments, the empty change set.
    ///
    /// - Parameters:
    ///   - deletedSections: Old indices of deleted sections.
    ///   - insertedSections: Inserted sections, with new indices.
    ///   - rowChanges: Row changes, in any order.
    public init(
        deletedSections: [Int] = [],
        insertedSections: [SectionInsertion] = [],
        rowChanges: [RowChange] = []
    ) {
        self.deletedSections = deletedSections
        self.insertedSections = insertedSections
        self.rowChanges = rowChanges
    }

    /// Whether the change set changes nothing.
    public var isEmpty: Bool {
        self.deletedSections.isEmpty && self.insertedSections.isEmpty && self.rowChanges.isEmpty
    }

    /// The number of row changes of each kind, for logs and metrics.
    public var counts: (deletes: Int, inserts: Int, moves: Int, updates: Int) {
        var counts = (deletes: 0, inserts: 0, moves: 0, updates: 0)
        for change in self.rowChanges {
            switch change {
            case .delete: counts.deletes += 1
            case .insert: counts.inserts += 1
            case .move: counts.moves += 1
            case .update: counts.updates += 1
            }
        }
        return counts
    }

    /// The same change set in the canonical order, the order the diff produces and the CLI prints.
    ///
    /// Deleted sections descending; inserted sections ascending; then row deletes by old path descending, inserts by
    /// new path ascending, moves by new path ascending and updates by new path ascending. Two change sets that
    /// describe the same changes are equal once canonicalized.
    ///
    /// - Returns: A change set with the same changes, reordered.
    @inlinable
    public func canonicalized() -> ChangeSet {
        var result = self
        result.deletedSections.sort(by: >)
        result.insertedSections.sort { $0.index < $1.index }
        result.rowChanges = Self.canonicalOrder(self.rowChanges)
        return result
    }

    /// The row changes in canonical order. Sorts small keys — (kind's rank, section, row; a delete's old path
    /// negated, since deletes go descending) — with each change's index, then moves every change once: sorting the
    /// changes themselves copied each (its element's values with it) at every step of the merge sort, a quarter of
    /// `meridian watch`'s CPU for a 20,000-row commit (perf). Already ordered changes, the common case for a commit
    /// that appends, are returned as they are. Ties keep their order, as the stable sort did.
    @inlinable
    static func canonicalOrder(_ changes: [RowChange]) -> [RowChange] {
        guard changes.count > 1 else { return changes }
        var keys: [(rank: Int, section: Int, row: Int, index: Int)] = []
        keys.reserveCapacity(changes.count)
        var ordered = true
        for index in changes.indices {
            // The rank of the operation (deletes, inserts, moves, updates), then the path. One `switch` on the element
            // in place: binding it (`for change in`) and reading accessors copied the whole change each time (perf of
            // `meridian watch` on a 20,000-row commit).
            let key: (rank: Int, section: Int, row: Int, index: Int) =
                switch changes[index] {
                case .delete(_, let from): (0, -from.section, -from.row, index)
                case .insert(_, let to, _): (1, to.section, to.row, index)
                case .move(_, _, let to, _, _): (2, to.section, to.row, index)
                case .update(_, _, let to, _, _): (3, to.section, to.row, index)
                }
            if ordered, let last = keys.last, (key.rank, key.section, key.row) < (last.rank, last.section, last.row) {
                ordered = false
            }
            keys.append(key)
        }
        if ordered { return changes }
        keys.sort { a, b in (a.rank, a.section, a.row, a.index) < (b.rank, b.section, b.row, b.index) }
        return keys.map { changes[$0.index] }
    }
}
