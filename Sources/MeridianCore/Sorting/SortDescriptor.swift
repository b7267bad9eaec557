// MARK: - SortDescriptor

/// One sort key: an attribute and a direction.
///
/// - Note: Foundation also declares a `SortDescriptor` type; in a file that imports both modules, write
///   `MeridianCore.SortDescriptor`.
public struct SortDescriptor: Sendable, Hashable, CustomStringConvertible {
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
