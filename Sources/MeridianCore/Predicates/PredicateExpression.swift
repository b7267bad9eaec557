// MARK: - PredicateExpression

/// A parsed, not yet checked predicate: the syntax tree of the predicate language, with source positions.
///
/// Parse text with ``parse(_:)``, then check it against an entity with ``bind(to:variables:)`` to get a
/// ``RowPredicate`` that can be evaluated in memory and read by a store. The typed builder (``AttributeRef``) produces
/// the same tree, without positions.
///
/// ```swift
/// let expression = try PredicateExpression.parse(#"category == 3 AND title BEGINSWITH[c] "w""#)
/// let predicate = try expression.bind(to: pointEntity)
/// predicate.evaluate(row)        // in memory
/// try await store.snapshot(entity: "Point", where: predicate)  // the same rows, read by SQLite
/// ```
///
/// `AND` and `OR` chains are n-ary (`a AND b AND c` is one ``conjunction(_:)`` of three), so evaluation depth is
/// bounded by the nesting of parentheses and `NOT`, which the parser caps at ``maximumDepth``.
public indirect enum PredicateExpression: Sendable, Hashable {
    /// `TRUEPREDICATE` or `FALSEPREDICATE`.
    case constant(Bool, SourceRange)
    /// `attribute op operand`.
    case comparison(PredicateComparison)
    /// `@claim op operand`, such as `@role == "admin"`: a test of the caller's identity, allowed only in the schema's
    /// rules. The comparison's `attribute` holds the claim's name (without the `@`).
    case claimTest(PredicateComparison)
    /// `NOT e` or `!e`; the range covers the `NOT`.
    case negation(PredicateExpression, SourceRange)
    /// `a AND b AND …` (two or more terms).
    case conjunction([PredicateExpression])
    /// `a OR b OR …` (two or more terms).
    case disjunction([PredicateExpression])

    /// The deepest nesting of parentheses and `NOT`s the parser accepts.
    public static let maximumDepth = 64

    /// `lhs AND rhs`, flattening nested conjunctions.
    public static func and(_ lhs: PredicateExpression, _ rhs: PredicateExpression) -> PredicateExpression {
        var terms: [PredicateExpression] = []
        for side in [lhs, rhs] {
            if case .conjunction(let inner) = side { terms += inner } else { terms.append(side) }
        }
        return .conjunction(terms)
    }

    /// `lhs OR rhs`, flattening nested disjunctions.
    public static func or(_ lhs: PredicateExpression, _ rhs: PredicateExpression) -> PredicateExpression {
        var terms: [PredicateExpression] = []
        for side in [lhs, rhs] {
            if case .disjunction(let inner) = side { terms += inner } else { terms.append(side) }
        }
        return .disjunction(terms)
    }

    /// The same tree with every source range set to ``SourceRange/none``, to compare structure only.
    public var withoutPositions: PredicateExpression {
        switch self {
        case .constant(let value, _): .constant(value, .none)
        case .comparison(let c): .comparison(c.withoutPositions)
        case .claimTest(let c): .claimTest(c.withoutPositions)
        case .negation(let e, _): .negation(e.withoutPositions, .none)
        case .conjunction(let terms): .conjunction(terms.map(\.withoutPositions))
        case .disjunction(let terms): .disjunction(terms.map(\.withoutPositions))
        }
    }
}

// MARK: - SourceRange

/// Where a piece of predicate text is: a 0-based character (grapheme) offset and a length.
public struct SourceRange: Sendable, Hashable {
    /// The 0-based character offset.
    public var position: Int
    /// The number of characters.
    public var length: Int

    /// Creates a range.
    public init(position: Int, length: Int) {
        self.position = position
        self.length = length
    }

    /// The range of a node that did not come from text (the typed builder).
    public static let none = SourceRange(position: 0, length: 0)
}

// MARK: - Comparison

/// The operators of the predicate language.
public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case between = "BETWEEN"
    case `in` = "IN"
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    case contains = "CONTAINS"
    case like = "LIKE"

    /// `<`, `<=`, `>`, `>=` and `BETWEEN`: they need an ordered type and a non-nil operand.
    public var isOrdered: Bool {
        switch self {
        case .less, .lessOrEqual, .greater, .greaterOrEqual, .between: true
        default: false
        }
    }

    /// The string-matching operator this is, if it is one.
    public var stringMatch: StringMatchOperator? {
        switch self {
        case .beginsWith: .beginsWith
        case .endsWith: .endsWith
        case .contains: .contains
        case .like: .like
        default: nil
        }
    }
}

/// One comparison: an attribute, an operator with its string options, and an operand.
public struct PredicateComparison: Sendable, Hashable {
    /// The attribute on the left.
    public var attribute: String
    /// Where the attribute name is.
    public var attributeRange: SourceRange
    /// The operator.
    public var op: ComparisonOperator
    /// Where the operator (with its modifier) is.
    public var opRange: SourceRange
    /// `[c]`, `[d]`, `[cd]` or none.
    public var options: StringOptions
    /// The right-hand side.
    public var operand: PredicateOperand

    /// Creates a comparison.
    public init(
        attribute: String,
        attributeRange: SourceRange = .none,
        op: ComparisonOperator,
        opRange: SourceRange = .none,
        options: StringOptions = [],
        operand: PredicateOperand
    ) {
        self.attribute = attribute
        self.attributeRange = attributeRange
        self.op = op
        self.opRange = opRange
        self.options = options
        self.operand = operand
    }

    var withoutPositions: PredicateComparison {
        PredicateComparison(
            attribute: self.attribute, op: self.op, options: self.options, operand: self.operand.withoutPositions)
    }
}

/// The right-hand side of a comparison.
public indirect enum PredicateOperand: Sendable, Hashable {
    /// A literal: a number, string, bool or nil.
    case value(Value, SourceRange)
    /// `{a, b, …}` (elements are values or variables; lists do not nest).
    case list([PredicateOperand], SourceRange)
    /// `$name`; the name is stored without the `$`.
    case variable(String, SourceRange)
    /// `@name`, a claim of the caller's identity (rules only); the name is stored without the `@`.
    case claim(String, SourceRange)

    /// Where the operand is.
    public var range: SourceRange {
        switch self {
        case .value(_, let r), .list(_, let r), .variable(_, let r), .claim(_, let r): r
        }
    }

    var withoutPositions: PredicateOperand {
        switch self {
        case .value(let v, _): .value(v, .none)
        case .list(let items, _): .list(items.map(\.withoutPositions), .none)
        case .variable(let name, _): .variable(name, .none)
        case .claim(let name, _): .claim(name, .none)
        }
    }
}

// MARK: - Variables

/// The value of a `$variable`: one value, or a list for `IN` and `BETWEEN`.
///
/// ```swift
/// let variables: [String: PredicateVariable] = ["minimum": 3, "names": ["a", "b"], "since": .value(.timestamp(t))]
/// ```
public enum PredicateVariable: Sendable, Hashable, ExpressibleByNilLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral
{
    /// One value.
    case value(Value)
    /// A list of values.
    case list([Value])

    public init(nilLiteral: ()) { self = .value(.null) }
    public init(integerLiteral value: Int64) { self = .value(.int(value)) }
    public init(floatLiteral value: Double) { self = .value(.double(value)) }
    public init(stringLiteral value: String) { self = .value(.string(value)) }
    public init(booleanLiteral value: Bool) { self = .value(.bool(value)) }
    public init(arrayLiteral elements: Value...) { self = .list(elements) }
}

// MARK: - Rendering

extension PredicateExpression: CustomStringConvertible {
    /// The expression as predicate text that parses back to the same tree (positions aside).
    public var description: String {
        self.render(parenthesize: false)
    }

    func render(parenthesize: Bool) -> String {
        switch self {
        case .constant(let value, _):
            return value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .comparison(let c):
            return "\(c.attribute) \(c.op.rawValue)\(c.options) \(c.operand)"
        case .claimTest(let c):
            return "@\(c.attribute) \(c.op.rawValue)\(c.options) \(c.operand)"
        case .negation(let e, _):
            return "NOT " + e.render(parenthesize: true)
        case .conjunction(let terms):
            let text = terms.map { $0.render(parenthesize: { if case .disjunction = $0 { true } else { false } }($0)) }
                .joined(separator: " AND ")
            return parenthesize ? "(\(text))" : text
        case .disjunction(let terms):
            let text = terms.map { $0.render(parenthesize: { if case .conjunction = $0 { true } else { false } }($0)) }
                .joined(separator: " OR ")
            return parenthesize ? "(\(text))" : text
        }
    }
}

extension PredicateOperand: CustomStringConvertible {
    /// The operand as predicate text.
    public var description: String {
        switch self {
        case .value(let v, _): v.description
        case .list(let items, _): "{" + items.map(\.description).joined(separator: ", ") + "}"
        case .variable(let name, _): "$" + name
        case .claim(let name, _): "@" + name
        }
    }
}
