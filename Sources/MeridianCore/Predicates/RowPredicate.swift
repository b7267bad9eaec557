// MARK: - RowPredicate

/// A checked predicate, bound to an entity with its variables substituted: ready to evaluate in memory and to
/// compile to a store's query (the store does that), with identical semantics on both sides.
///
/// Get one from ``PredicateExpression/bind(to:variables:)`` (or ``TypedPredicate/bind(to:variables:)``). String
/// literals are already folded for `[c]`/`[d]`, timestamps converted, and `nil` elements of `IN` lists dropped.
///
/// Semantics (DESIGN "Predicate and ordering semantics"):
/// - a comparison whose attribute value is null is false, except `== nil` and `!= nil`;
/// - `NOT` is two-valued: `NOT (a > 5)` is true where `a` is null;
/// - strings compare by UTF-8 bytes (after folding when a modifier is given), numbers exactly.
///
/// ```swift
/// let predicate = try PredicateExpression.parse("rating >= $min").bind(to: entity, variables: ["min": 3])
/// let matching = rows.filter(predicate.evaluate)
/// let rows = try await store.snapshot(entity: "Item", where: predicate)  // the same rows, read by SQLite
/// ```
///
/// - Note: Not named `Predicate`, so that it never clashes with Foundation's type of that name.
public struct RowPredicate: Sendable, Hashable, CustomStringConvertible {
    /// The checked tree (`package`: the store compiles it to its own SQL).
    package indirect enum Node: Sendable, Hashable {
        case constant(Bool)
        case not(Node)
        case and([Node])
        case or([Node])
        /// `attribute == nil` (`isNull` true) or `attribute != nil` (`isNull` false).
        case null(attribute: String, isNull: Bool)
        /// `==`, `!=`, `<`, `<=`, `>`, `>=` against a non-null value (folded when `options` is not empty).
        case compare(attribute: String, op: ComparisonOperator, options: StringOptions, value: Value)
        /// `BETWEEN {low, high}`, both bounds included.
        case between(attribute: String, options: StringOptions, low: Value, high: Value)
        /// `IN {…}` with the nil elements removed.
        case `in`(attribute: String, options: StringOptions, values: [Value])
        /// `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE` against a folded pattern.
        case match(attribute: String, op: StringMatchOperator, options: StringOptions, pattern: String)
    }

    package let node: Node

    init(node: Node) {
        self.node = node
    }

    /// A predicate that every row matches (`TRUEPREDICATE`).
    public static let all = RowPredicate(node: .constant(true))

    /// Whether it is ``all``, which every row matches without being evaluated.
    public var matchesEveryRow: Bool {
        if case .constant(true) = self.node { true } else { false }
    }

    /// The values of all its `IN` lists together: each is one SQL parameter when the predicate runs in SQLite.
    public var inValueCount: Int {
        func count(_ node: Node) -> Int {
            switch node {
            case .not(let n): count(n)
            case .and(let ns), .or(let ns): ns.reduce(0) { $0 + count($1) }
            case .in(_, _, let values): values.count
            case .constant, .null, .compare, .between, .match: 0
            }
        }
        return count(self.node)
    }

    /// The attributes the predicate reads; a change to any other attribute cannot change whether a row matches.
    public var referencedAttributes: Set<String> {
        var names: Set<String> = []
        func visit(_ node: Node) {
            switch node {
            case .constant: break
            case .not(let n): visit(n)
            case .and(let ns), .or(let ns): ns.forEach(visit)
            case .null(let a, _), .compare(let a, _, _, _), .between(let a, _, _, _), .in(let a, _, _),
                .match(let a, _, _, _):
                names.insert(a)
            }
        }
        visit(self.node)
        return names
    }

    /// The predicate as text in the predicate language (literals folded and converted as bound).
    public var description: String {
        Self.render(self.node)
    }

    static func render(_ node: Node) -> String {
        switch node {
        case .constant(let b): return b ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .not(let n): return "NOT (\(render(n)))"
        case .and(let ns): return "(" + ns.map(render).joined(separator: " AND ") + ")"
        case .or(let ns): return "(" + ns.map(render).joined(separator: " OR ") + ")"
        case .null(let a, let isNull): return "\(a) \(isNull ? "==" : "!=") nil"
        case .compare(let a, let op, let o, let v): return "\(a) \(op.rawValue)\(o) \(v)"
        case .between(let a, let o, let lo, let hi): return "\(a) BETWEEN\(o) {\(lo), \(hi)}"
        case .in(let a, let o, let vs): return "\(a) IN\(o) {\(vs.map(\.description).joined(separator: ", "))}"
        case .match(let a, let op, let o, let p): return "\(a) \(op.rawValue.uppercased())\(o) \(Value.quote(p))"
        }
    }
}

// MARK: - Evaluation

extension RowPredicate {
    /// Whether a row matches, with exactly the semantics of the SQL the store compiles the predicate to.
    ///
    /// - Parameter row: The row; absent attributes read as null.
    /// - Returns: `true` when the row matches.
    public func evaluate(_ row: Row) -> Bool {
        Self.evaluate(self.node, row)
    }

    static func evaluate(_ node: Node, _ row: Row) -> Bool {
        switch node {
        case .constant(let b):
            return b
        case .not(let n):
            return !evaluate(n, row)
        case .and(let ns):
            return ns.allSatisfy { evaluate($0, row) }
        case .or(let ns):
            return ns.contains { evaluate($0, row) }
        case .null(let a, let isNull):
            return row[a].isNull == isNull
        case .compare(let a, let op, let options, let value):
            guard let lhs = operand(row[a], options) else { return false }
            let c = Value.compare(lhs, value)
            switch op {
            case .equal: return c == 0
            case .notEqual: return c != 0
            case .less: return c < 0
            case .lessOrEqual: return c <= 0
            case .greater: return c > 0
            case .greaterOrEqual: return c >= 0
            default: return false
            }
        case .between(let a, let options, let low, let high):
            guard let lhs = operand(row[a], options) else { return false }
            return Value.compare(lhs, low) >= 0 && Value.compare(lhs, high) <= 0
        case .in(let a, let options, let values):
            guard let lhs = operand(row[a], options) else { return false }
            return values.contains { Value.compare(lhs, $0) == 0 }
        case .match(let a, let op, let options, let pattern):
            guard case .string(let s) = row[a] else { return false }
            return StringMatcher.matches(op, options: options, value: s, foldedPattern: pattern)
        }
    }

    /// The attribute value ready to compare: `nil` for null, folded when there are options.
    private static func operand(_ value: Value, _ options: StringOptions) -> Value? {
        if value.isNull { return nil }
        if !options.isEmpty, case .string(let s) = value { return .string(Folding.fold(s, options)) }
        return value
    }
}
