// MARK: - ListModel

public import MeridianCore

/// A list of sections and rows that changes only by applying change sets, the way a table view does — so a UI
/// driven by it never disagrees with the batch updates it animated.
///
/// ```swift
/// var list = ListModel<Point>()
/// for try await change in points.changes() {
///     try list.apply(change)                 // validates, then applies
///     tableView.performBatchUpdates(change.changeSet)
/// }
/// list.numberOfSections, list.numberOfRows(inSection: 0), list[ListIndexPath(0, 0)]
/// ```
public struct ListModel<Element: RowConvertible>: Sendable, Equatable {
    /// The sections and their rows.
    public private(set) var list: SectionedList<Element>
    /// The seq of the last applied change.
    public private(set) var seq: Int64 = 0
    /// The ids shown whose writes are pending, as of the last applied change.
    public private(set) var pendingIDs: Set<String> = []

    /// Whether the list is sectioned by a section key (an empty sectioned list has no sections).
    public let isSectioned: Bool

    /// Creates an empty list: no sections when `sectioned`, else one empty unnamed section (what a controller
    /// without a section key shows when empty).
    public init(sectioned: Bool = false) {
        self.isSectioned = sectioned
        self.list = sectioned ? SectionedList() : SectionedList(unsectioned: [])
    }

    /// Creates an empty list shaped for a controller (sectioned when its request has a section key); feed it the
    /// controller's ``ResultsController/changes(includingInitial:)``.
    public init(for controller: ResultsController<Element>) {
        self.init(sectioned: controller.request.sectionKey != nil)
    }

    /// Creates a list showing `list`.
    public init(_ list: SectionedList<Element>, seq: Int64 = 0, sectioned: Bool) {
        self.isSectioned = sectioned
        self.list = list
        self.seq = seq
    }

    /// The sections, in order.
    public var sections: [ListSection<Element>] { self.list.sections }
    /// The number of sections.
    public var numberOfSections: Int { self.list.sections.count }
    /// The number of rows in a section.
    public func numberOfRows(inSection section: Int) -> Int { self.list.sections[section].elements.count }
    /// The row at an index path.
    public subscript(indexPath: ListIndexPath) -> Element { self.list[indexPath] }
    /// Every row, in order.
    public var allElements: [Element] { self.list.allElements }

    /// Applies a controller's change: checks it as a table view would (section and row counts), then applies
    /// deletes, section changes, inserts and updates.
    ///
    /// An ``ResultsChangeCause/initial`` change replaces the content (it describes the controller's whole state as
    /// inserts into an empty list).
    ///
    /// - Throws: `ChangeSetError` when the change set does not fit this list; the list is left unchanged.
    public mutating func apply(_ change: ResultsChange<Element>) throws {
        if change.cause == .initial {
            let changeSet = change.changeSet
            let sectioned = !changeSet.insertedSections.isEmpty || (changeSet.rowChanges.isEmpty && self.isSectioned)
            self.list = sectioned ? SectionedList() : SectionedList(unsectioned: [])
        }
        try self.apply(change.changeSet)
        self.seq = change.seq
        self.pendingIDs = change.pendingIDs
    }

    /// Applies a change set (validated first).
    ///
    /// - Throws: `ChangeSetError` when the change set does not fit this list; the list is left unchanged.
    public mutating func apply(_ changeSet: ChangeSet<Element>) throws {
        let next = try self.list.applying(changeSet)
        try changeSet.validate(oldSectionCounts: self.list.sectionCounts, newSectionCounts: next.sectionCounts)
        self.list = next
    }

    /// Checks that the list shows exactly what a controller shows (ids, order, sections) — the table view's
    /// consistency check, for tests and debug builds.
    ///
    /// - Returns: `nil` when consistent, else the first difference.
    public func inconsistency(with controller: ResultsController<Element>) -> String? {
        let (_, expected) = controller.snapshot()
        guard expected.sections.count == self.list.sections.count else {
            return "\(self.list.sections.count) sections, the controller has \(expected.sections.count)"
        }
        for (i, (mine, theirs)) in zip(self.list.sections, expected.sections).enumerated() {
            guard mine.key == theirs.key else { return "section \(i) has key \(mine.key), expected \(theirs.key)" }
            guard mine.elements.map(\.id) == theirs.elements.map(\.id) else {
                return "section \(i) rows differ: \(mine.elements.map(\.id)) vs \(theirs.elements.map(\.id))"
            }
            guard mine.elements == theirs.elements else { return "section \(i) row values differ" }
        }
        return nil
    }
}
