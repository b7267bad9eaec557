// MARK: - ListModel

public import MeridianCore
public import Observation

/// A list of sections and rows that changes only by applying change sets, the way a table view does — so a UI
/// driven by it never disagrees with the batch updates it animated.
///
/// The model is `@Observable`: a SwiftUI view that reads it redraws once per applied change, and the change set of
/// that change is ``lastChangeSet`` (or, for UIKit, handed to ``follow(_:isolation:onChange:)``'s closure as each
/// change is applied).
///
/// ```swift
/// // SwiftUI (docs/client.md has the whole view): the model is the view's `@State`, fed while the view is shown.
/// List(list.allElements) { Text($0.title) }
///     .task { @MainActor in try? await list.follow(points) }
///
/// // UIKit: each change set drives the table view's batch updates, in the same step as the model.
/// try await list.follow(points) { change in tableView.apply(change.changeSet) }  // docs/client.md writes `apply`
/// list.numberOfSections, list.numberOfRows(inSection: 0), list[ListIndexPath(0, 0)]
/// ```
///
/// - Note: The model is not `Sendable`: it belongs to the isolation that made it (a view's main actor, or a task),
///   and the compiler keeps it there, so the counts a table view reads can never change under it.
///   ``follow(_:isolation:onChange:)`` runs on its caller's executor for the same reason.
@Observable
public final class ListModel<Element: RowConvertible> {
    /// Everything the model shows, changed in place by each applied change, in one access: one observation per change.
    private var state: State

    /// Whether the list is sectioned by a section key (an empty sectioned list has no sections).
    public let isSectioned: Bool

    /// Creates an empty list: no sections when `sectioned`, else one empty unnamed section (what a controller
    /// without a section key shows when empty).
    public init(sectioned: Bool = false) {
        self.isSectioned = sectioned
        self.state = State(list: sectioned ? SectionedList() : SectionedList(unsectioned: []))
    }

    /// Creates an empty list shaped for a controller (sectioned when its request has a section key); feed it the
    /// controller's ``ResultsController/changes(includingInitial:)``, or call ``follow(_:isolation:onChange:)``.
    public convenience init(for controller: ResultsController<Element>) {
        self.init(sectioned: controller.request.sectionKey != nil)
    }

    /// Creates a list showing `list`.
    public init(_ list: SectionedList<Element>, seq: Int64 = 0, sectioned: Bool) {
        self.isSectioned = sectioned
        self.state = State(list: list, seq: seq)
    }

    // MARK: - Reading

    /// The sections and their rows.
    public var list: SectionedList<Element> { self.state.list }
    /// The seq of the last applied change.
    public var seq: Int64 { self.state.seq }
    /// The ids shown whose writes are pending, as of the last applied change.
    public var pendingIDs: Set<String> { self.state.pendingIDs }
    /// The change set last applied (`nil` before the first): what a UIKit data source animates for the current
    /// state. Observation may coalesce several changes into one redraw, so a consumer that must see every change set
    /// takes them from ``follow(_:isolation:onChange:)`` (or the controller's change stream), not from this property.
    public var lastChangeSet: ChangeSet<Element>? { self.state.lastChangeSet }

    /// The sections, in order.
    public var sections: [ListSection<Element>] { self.state.list.sections }
    /// The number of sections.
    public var numberOfSections: Int { self.state.list.sections.count }
    /// The number of rows in a section.
    public func numberOfRows(inSection section: Int) -> Int { self.state.list.sections[section].elements.count }
    /// The row at an index path.
    public subscript(indexPath: ListIndexPath) -> Element { self.state.list[indexPath] }
    /// Every row, in order.
    public var allElements: [Element] { self.state.list.allElements }

    // MARK: - Changing

    /// Applies a controller's change: checks it as a table view would (section and row counts), then applies
    /// deletes, section changes, inserts and updates. Observers are told once, after the change.
    ///
    /// An ``ResultsChangeCause/initial`` change replaces the content (it describes the controller's whole state as
    /// inserts into an empty list).
    ///
    /// The rows move in place (``SectionedList/apply(_:checking:)``): a change of a few rows to a list of many costs
    /// moving the rows after each changed one, not copying the list. An array of the rows a caller still holds (from
    /// ``sections``, say) is copied first and keeps what it had.
    ///
    /// - Throws: `ChangeSetError` when the change set does not fit this list; the list is left unchanged.
    public func apply(_ change: ResultsChange<Element>) throws {
        if change.cause == .initial {
            let changeSet = change.changeSet
            let sectioned = !changeSet.insertedSections.isEmpty || (changeSet.rowChanges.isEmpty && self.isSectioned)
            var list = sectioned ? SectionedList<Element>() : SectionedList(unsectioned: [])
            let prepared = try Self.prepare(changeSet, for: list)
            list.perform(prepared, changeSet)
            self.state = State(
                list: list, seq: change.seq, pendingIDs: change.pendingIDs, lastChangeSet: changeSet)
            return
        }
        // Checked before `state` is touched, so that a change set that does not fit tells observers nothing; then
        // one access to `state`, so that they are told once.
        let prepared = try Self.prepare(change.changeSet, for: self.state.list)
        self.state.apply(prepared, change.changeSet) { state in
            state.seq = change.seq
            state.pendingIDs = change.pendingIDs
        }
    }

    /// Applies a change set (validated first). Observers are told once, after the change.
    ///
    /// - Throws: `ChangeSetError` when the change set does not fit this list; the list is left unchanged.
    public func apply(_ changeSet: ChangeSet<Element>) throws {
        let prepared = try Self.prepare(changeSet, for: self.state.list)  // see `apply(_:)` above
        self.state.apply(prepared, changeSet) { _ in }
    }

    /// Shows a controller: applies its current state, then each of its changes as it comes, until the controller
    /// is closed (returns) or the task is cancelled (returns). Runs on the caller's executor, so a model owned by
    /// the main actor changes on the main actor.
    ///
    /// ```swift
    /// try await list.follow(points) { change in
    ///     tableView.apply(change.changeSet)   // the exact change set, for every change (docs/client.md)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - controller: The controller to show.
    ///   - isolation: Where the model is changed and `onChange` called: the caller's actor, by default.
    ///   - onChange: Called after each change is applied, with that change (its exact change set, cause and seq).
    /// - Throws: ``ClientError`` when the server rejects the controller's subscription; `ChangeSetError` when a change
    ///   set does not fit (a bug); what `onChange` throws.
    public func follow(
        _ controller: ResultsController<Element>,
        isolation: isolated (any Actor)? = #isolation,
        onChange: (ResultsChange<Element>) throws -> Void = { _ in }
    ) async throws {
        for try await change in controller.changes(includingInitial: true) {
            try self.apply(change)
            try onChange(change)
        }
    }

    /// `changeSet` checked against `list` the way a table view checks its batch updates, ready to be carried out;
    /// changes nothing.
    /// (`list` is borrowed: a copy held across the change that follows would make it copy every touched section.)
    private static func prepare(
        _ changeSet: ChangeSet<Element>, for list: borrowing SectionedList<Element>
    ) throws -> SectionedList<Element>.PreparedChange {
        try list.prepare(changeSet) { old, new throws(ChangeSetError) in
            try changeSet.validate(oldSectionCounts: old, newSectionCounts: new)
        }
    }

    // MARK: - Checking

    /// Checks that the list shows exactly what a controller shows (ids, order, sections) — the table view's
    /// consistency check, for tests and debug builds.
    ///
    /// - Returns: `nil` when consistent, else the first difference.
    public func inconsistency(with controller: ResultsController<Element>) -> String? {
        let (_, expected) = controller.snapshot()
        let list = self.state.list
        guard expected.sections.count == list.sections.count else {
            return "\(list.sections.count) sections, the controller has \(expected.sections.count)"
        }
        for (i, (mine, theirs)) in zip(list.sections, expected.sections).enumerated() {
            guard mine.key == theirs.key else { return "section \(i) has key \(mine.key), expected \(theirs.key)" }
            guard mine.elements.map(\.id) == theirs.elements.map(\.id) else {
                return "section \(i) rows differ: \(mine.elements.map(\.id)) vs \(theirs.elements.map(\.id))"
            }
            guard mine.elements == theirs.elements else { return "section \(i) row values differ" }
        }
        return nil
    }
}

/// A list model belongs to one isolation domain (see ``ListModel``).
@available(*, unavailable)
extension ListModel: Sendable {}

extension ListModel {
    /// What a list model shows, as one value, so that a change is one mutation.
    struct State {
        var list: SectionedList<Element>
        var seq: Int64 = 0
        var pendingIDs: Set<String> = []
        var lastChangeSet: ChangeSet<Element>? = nil

        /// Carries out `changeSet`, prepared against this state's list, then `rest`.
        mutating func apply(
            _ prepared: SectionedList<Element>.PreparedChange, _ changeSet: ChangeSet<Element>,
            _ rest: (inout State) -> Void
        ) {
            self.list.perform(prepared, changeSet)
            self.lastChangeSet = changeSet
            rest(&self)
        }
    }
}
