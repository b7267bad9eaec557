// MARK: - ListSection

/// One section of a ``SectionedList``: its identity, its display name and its rows, in order.
///
/// A section's identity is its ``key``, the value of the section-key attribute that all its rows share (`.null` is a
/// key like any other). Two sections of one list never have equal keys. The ``name`` is what a table view shows in
/// the section header; the change-set diff treats a section whose name changed as deleted and inserted again.
public struct ListSection<Element: Identifiable & Equatable & Sendable>: Sendable, Equatable
where Element.ID: Sendable {
    /// The section's identity: the section-key value its rows share.
    public var key: Value
    /// The display name of the section.
    public var name: String
    /// The rows of the section, in order.
    public var elements: [Element]

    /// Creates a section.
    ///
    /// - Parameters:
    ///   - key: The section-key value identifying the section.
    ///   - name: The display name; defaults to the empty string.
    ///   - elements: The rows, in order.
    public init(key: Value, name: String = "", elements: [Element] = []) {
        self.key = key
        self.name = name
        self.elements = elements
    }
}

// MARK: - SectionedList

/// An ordered, sectioned result: the state a table view shows, and what a ``ChangeSet`` transforms.
///
/// An unsectioned result is a list with exactly one section whose key is ``unsectionedKey`` (the empty string).
/// Element ids are unique across the whole list, and section keys are unique within it; the diff in
/// ``ChangeSet/between(old:new:changedAttributes:)`` rejects lists that break either rule.
///
/// ```swift
/// let list = SectionedList(sections: [
///     ListSection(key: .int(1), name: "1", elements: [rowA, rowB]),
///     ListSection(key: .int(2), name: "2", elements: [rowC]),
/// ])
/// list[ListIndexPath(1, 0)]       // rowC
/// list.sectionCounts          // [2, 1]
/// ```
public struct SectionedList<Element: Identifiable & Equatable & Sendable>: Sendable, Equatable
where Element.ID: Sendable {
    /// The sections, in order.
    public var sections: [ListSection<Element>]

    /// The key of the single section of an unsectioned list: `.string("")`.
    public static var unsectionedKey: Value { .string("") }

    /// Creates a list from its sections.
    ///
    /// - Parameter sections: The sections, in order; their keys must be distinct.
    public init(sections: [ListSection<Element>] = []) {
        self.sections = sections
    }

    /// Creates an unsectioned list: one section keyed ``unsectionedKey``, named `""`, holding `elements`.
    ///
    /// - Parameter elements: The rows, in order.
    public init(unsectioned elements: [Element]) {
        self.sections = [ListSection(key: Self.unsectionedKey, name: "", elements: elements)]
    }

    /// The number of rows in each section, in section order.
    public var sectionCounts: [Int] { self.sections.map(\.elements.count) }

    /// The total number of rows across all sections.
    public var count: Int { self.sections.reduce(0) { $0 + $1.elements.count } }

    /// Whether the list holds no rows (it may still hold empty sections).
    public var isEmpty: Bool { self.sections.allSatisfy(\.elements.isEmpty) }

    /// All rows in order, section by section.
    public var allElements: [Element] { self.sections.flatMap(\.elements) }

    /// The row at an index path.
    ///
    /// - Precondition: `indexPath` is within the list.
    public subscript(indexPath: ListIndexPath) -> Element {
        get { self.sections[indexPath.section].elements[indexPath.row] }
        set { self.sections[indexPath.section].elements[indexPath.row] = newValue }
    }

    /// Whether an index path addresses a row of this list.
    public func contains(_ indexPath: ListIndexPath) -> Bool {
        self.sections.indices.contains(indexPath.section)
            && self.sections[indexPath.section].elements.indices.contains(indexPath.row)
    }
}
