// MARK: - SQLFragment

/// A piece of SQL with `?` placeholders and the values bound to them, in order.
///
/// Values are always bound, never interpolated into the text. The core produces fragments (a predicate's `WHERE`
/// clause, a sort's `ORDER BY`); the store binds their arguments.
public struct SQLFragment: Sendable, Hashable, CustomStringConvertible {
    /// The SQL text, with one `?` per argument.
    public var sql: String
    /// The values for the placeholders, in order.
    public var arguments: [Value]

    /// Creates a fragment.
    public init(_ sql: String, arguments: [Value] = []) {
        self.sql = sql
        self.arguments = arguments
    }

    /// Concatenates two fragments with `separator` between them.
    public static func join(_ fragments: [SQLFragment], separator: String) -> SQLFragment {
        SQLFragment(
            fragments.map(\.sql).joined(separator: separator),
            arguments: fragments.flatMap(\.arguments)
        )
    }

    public var description: String {
        self.arguments.isEmpty
            ? self.sql : "\(self.sql) -- \(self.arguments.map(\.description).joined(separator: ", "))"
    }
}
