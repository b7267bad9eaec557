// MARK: - SQLFragment

package import MeridianCore

/// A piece of SQL with `?` placeholders and the values bound to them, in order.
///
/// Values are always bound, never interpolated into the text. The store compiles a predicate into one
/// (`RowPredicate.sql()`, PredicateSQL.swift) and binds its arguments; it never crosses the store's API.
package struct SQLFragment: Sendable, Hashable, CustomStringConvertible {
    /// The SQL text, with one `?` per argument.
    package var sql: String
    /// The values for the placeholders, in order.
    package var arguments: [Value]

    /// Creates a fragment.
    package init(_ sql: String, arguments: [Value] = []) {
        self.sql = sql
        self.arguments = arguments
    }

    /// Concatenates two fragments with `separator` between them.
    package static func join(_ fragments: [SQLFragment], separator: String) -> SQLFragment {
        SQLFragment(
            fragments.map(\.sql).joined(separator: separator),
            arguments: fragments.flatMap(\.arguments)
        )
    }

    package var description: String {
        self.arguments.isEmpty
            ? self.sql : "\(self.sql) -- \(self.arguments.map(\.description).joined(separator: ", "))"
    }
}
