// MARK: - Compiling predicates and orders to SQLite's SQL

package import MeridianCore

// The store's own translation of Core's checked predicates and orders into SQLite's SQL. Nothing above the store sees
// SQL text: its reads take a `RowPredicate` and a `RowOrder` (DESIGN: no SQL text across the store's API), so another
// store compiles the same trees to its own dialect. `package` so that the package's tests can run the SQL beside the
// in-memory evaluation.

extension RowPredicate {
    /// The name of the SQLite function that folds text: `meridian_fold(text, flags)`, flags being
    /// ``StringOptions/rawValue``. It calls ``Folding/fold(_:_:)``; NULL in, NULL out.
    package static let foldFunctionName = "meridian_fold"
    /// The name of the SQLite function that matches strings: `meridian_match(op, flags, value, pattern)`, `op`
    /// being a ``StringMatchOperator`` raw value and `pattern` already folded. It calls
    /// ``StringMatcher/matches(_:options:value:foldedPattern:)`` and returns 1, 0, or NULL when `value` is NULL.
    package static let matchFunctionName = "meridian_match"

    /// Compiles the predicate to a SQLite `WHERE` clause (without the keyword) with exactly the semantics of
    /// ``evaluate(_:)``.
    ///
    /// Values are bound as `?` arguments, never interpolated, in the storage form of the store's columns: bools
    /// as the integers 0 and 1, timestamps as integer microseconds. Attribute names are quoted identifiers.
    /// Outside any `NOT`, a comparison with NULL yields NULL, which `WHERE`, `AND` and `OR` treat as false, so
    /// comparisons stay plain (and can use indexes); under a `NOT`, every comparison is wrapped in `(…) IS 1`
    /// so NULL becomes false before it is negated, making `NOT` two-valued as in memory.
    ///
    /// ```swift
    /// try PredicateExpression.parse(#"NOT (rating > 3) AND title BEGINSWITH[c] "w""#).bind(to: e).sql()
    /// // (NOT (("rating" > ?) IS 1) AND meridian_match('beginswith', 1, "title", ?)) -- 3, "w"
    /// ```
    ///
    /// - Returns: The clause and its arguments.
    /// - Note: The connection must have Meridian's functions registered (the store does this when it opens a
    ///   connection) whenever the predicate uses a modifier or a string-matching operator.
    package func sql() -> SQLFragment {
        Self.sql(self.node, negated: false)
    }

    /// Whether ``sql()`` calls `meridian_fold` or `meridian_match`.
    package var usesMeridianFunctions: Bool {
        func visit(_ node: Node) -> Bool {
            switch node {
            case .constant, .null: false
            case .not(let n): visit(n)
            case .and(let ns), .or(let ns): ns.contains(where: visit)
            case .compare(_, _, let o, _), .between(_, let o, _, _), .in(_, let o, _): !o.isEmpty
            case .match: true
            }
        }
        return visit(self.node)
    }

    static func sql(_ node: Node, negated: Bool) -> SQLFragment {
        func leaf(_ fragment: SQLFragment) -> SQLFragment {
            negated ? SQLFragment("(\(fragment.sql)) IS 1", arguments: fragment.arguments) : fragment
        }
        func column(_ attribute: String, _ options: StringOptions) -> String {
            let quoted = StoreDDL.quoted(attribute)
            return options.isEmpty ? quoted : "\(foldFunctionName)(\(quoted), \(options.rawValue))"
        }
        switch node {
        case .constant(let b):
            return SQLFragment(b ? "1" : "0")
        case .not(let n):
            let inner = sql(n, negated: true)
            return SQLFragment("NOT (\(inner.sql))", arguments: inner.arguments)
        case .and(let ns):
            return Self.balanced(ns.map { sql($0, negated: negated) }[...], separator: " AND ")
        case .or(let ns):
            return Self.balanced(ns.map { sql($0, negated: negated) }[...], separator: " OR ")
        case .null(let a, let isNull):
            return SQLFragment("\(StoreDDL.quoted(a)) IS \(isNull ? "" : "NOT ")NULL")
        case .compare(let a, let op, let options, let value):
            let sqlOp: String
            switch op {
            case .equal: sqlOp = "="
            case .notEqual: sqlOp = "<>"
            case .less: sqlOp = "<"
            case .lessOrEqual: sqlOp = "<="
            case .greater: sqlOp = ">"
            case .greaterOrEqual: sqlOp = ">="
            default: sqlOp = "="
            }
            return leaf(SQLFragment("\(column(a, options)) \(sqlOp) ?", arguments: [value.storageForm]))
        case .between(let a, let options, let low, let high):
            return leaf(
                SQLFragment("\(column(a, options)) BETWEEN ? AND ?", arguments: [low.storageForm, high.storageForm])
            )
        case .in(let a, let options, let values):
            if values.isEmpty { return SQLFragment("0") }
            let marks = Array(repeating: "?", count: values.count).joined(separator: ", ")
            return leaf(SQLFragment("\(column(a, options)) IN (\(marks))", arguments: values.map(\.storageForm)))
        case .match(let a, let op, let options, let pattern):
            return leaf(
                SQLFragment(
                    "\(matchFunctionName)('\(op.rawValue)', \(options.rawValue), \(StoreDDL.quoted(a)), ?)",
                    arguments: [.string(pattern)]
                )
            )
        }
    }

    /// `parts` joined by `separator` in parentheses; a long chain is split into halves, recursively, so that the
    /// expression tree SQLite builds stays shallow.
    ///
    /// SQLite parses `a OR b OR c …` into a left-deep tree and refuses trees deeper than 1,000
    /// (`SQLITE_MAX_EXPR_DEPTH`), so a flat chain of 1,000 comparisons — which the parser accepts and memory
    /// evaluates — failed in SQL (found by the wire fuzzer: Tests/MeridianFuzzTests/Corpus/wire/query-1000-or.wire). Halving keeps
    /// the depth logarithmic in the chain's length; chains of up to four keep their flat form.
    private static func balanced(_ parts: ArraySlice<SQLFragment>, separator: String) -> SQLFragment {
        if parts.count <= 4 {
            let joined = SQLFragment.join(Array(parts), separator: separator)
            return SQLFragment("(\(joined.sql))", arguments: joined.arguments)
        }
        let middle = parts.startIndex + parts.count / 2
        let left = Self.balanced(parts[..<middle], separator: separator)
        let right = Self.balanced(parts[middle...], separator: separator)
        return SQLFragment("(\(left.sql)\(separator)\(right.sql))", arguments: left.arguments + right.arguments)
    }
}

extension RowOrder {
    /// The `ORDER BY` list (without the keyword) that sorts exactly as ``RowOrder/compare(_:_:)``, e.g.
    /// `"title" ASC, "category" DESC, "id" ASC`.
    package func sqlOrderBy() -> String {
        self.effectiveDescriptors.map { "\(StoreDDL.quoted($0.attribute)) \($0.ascending ? "ASC" : "DESC")" }
            .joined(separator: ", ")
    }
}

extension Value {
    /// The value as the store keeps it in SQLite: bools as 0/1 and timestamps as microseconds (integers).
    var storageForm: Value {
        switch self {
        case .bool(let b): .int(b ? 1 : 0)
        case .timestamp(let t): .int(t.microseconds)
        default: self
        }
    }
}
