// MARK: - SortKey

/// One sort key: an attribute and a direction.
///
/// - Note: Not named `SortDescriptor`, so that it never clashes with Foundation's type of that name.
public struct SortKey: Sendable, Hashable, CustomStringConvertible {
    /// The attribute to sort by (`id` or a stored attribute).
    public var attribute: String
    /// `true` for ascending (nulls first), `false` for descending (nulls last).
    public var ascending: Bool

    /// Creates a sort key.
    public init(_ attribute: String, ascending: Bool = true) {
        self.attribute = attribute
        self.ascending = ascending
    }

    /// The key in sort-key syntax: `title` or `-title`.
    public var description: String {
        (self.ascending ? "" : "-") + self.attribute
    }
}
