// MARK: - Typed builder

/// A typed reference to one attribute of a model type, declared once per attribute so call sites never spell
/// attribute names as strings.
///
/// ```swift
/// struct Point { … }
/// extension Point {
///     enum Attr {
///         static let title = AttributeRef<Point, String>("title")
///         static let category = AttributeRef<Point, Int>("category")
///         static let note = AttributeRef<Point, String?>("note")
///     }
/// }
/// let p: TypedPredicate<Point> = Point.Attr.category == 3 && Point.Attr.title.beginsWith("w", options: .caseInsensitive)
/// p.description   // category == 3 AND title BEGINSWITH[c] "w"
/// ```
///
/// The operators build exactly the ``PredicateExpression`` that parsing the equivalent text builds (positions
/// aside), and the result is checked against the schema by ``TypedPredicate/bind(to:variables:)`` like text is.
public struct AttributeRef<Model, T: PredicateValueConvertible>: Sendable, Hashable {
    /// The attribute's name in the schema.
    public let name: String

    /// Declares a reference to the attribute with this name.
    public init(_ name: String) {
        self.name = name
    }

    func compare(_ op: ComparisonOperator, _ operand: PredicateOperand, _ options: StringOptions = [])
        -> TypedPredicate<Model>
    {
        TypedPredicate(
            .comparison(PredicateComparison(attribute: self.name, op: op, options: options, operand: operand)))
    }

    /// `attribute == value` (`== nil` for optional attributes tests for null).
    public static func == (lhs: Self, rhs: T) -> TypedPredicate<Model> {
        lhs.compare(.equal, .value(rhs.predicateValue, .none))
    }

    /// `attribute != value` (`!= nil` for optional attributes tests for non-null).
    public static func != (lhs: Self, rhs: T) -> TypedPredicate<Model> {
        lhs.compare(.notEqual, .value(rhs.predicateValue, .none))
    }

    /// `attribute IN {values…}`.
    public func `in`(_ values: [T]) -> TypedPredicate<Model> {
        self.compare(.in, .list(values.map { .value($0.predicateValue, .none) }, .none))
    }

    /// `attribute == nil`.
    public var isNil: TypedPredicate<Model> {
        self.compare(.equal, .value(.null, .none))
    }

    /// `attribute != nil`.
    public var isNotNil: TypedPredicate<Model> {
        self.compare(.notEqual, .value(.null, .none))
    }
}

extension AttributeRef where T: PredicateOrderedValue {
    /// `attribute < value`.
    public static func < (lhs: Self, rhs: T) -> TypedPredicate<Model> {
        lhs.compare(.less, .value(rhs.predicateValue, .none))
    }

    /// `attribute <= value`.
    public static func <= (lhs: Self, rhs: T) -> TypedPredicate<Model> {
        lhs.compare(.lessOrEqual, .value(rhs.predicateValue, .none))
    }

    /// `attribute > value`.
    public static func > (lhs: Self, rhs: T) -> TypedPredicate<Model> {
        lhs.compare(.greater, .value(rhs.predicateValue, .none))
    }

    /// `attribute >= value`.
    public static func >= (lhs: Self, rhs: T) -> TypedPredicate<Model> {
        lhs.compare(.greaterOrEqual, .value(rhs.predicateValue, .none))
    }

    /// `attribute BETWEEN {low, high}`, both bounds included.
    public func between(_ low: T, _ high: T) -> TypedPredicate<Model> {
        self.compare(.between, .list([.value(low.predicateValue, .none), .value(high.predicateValue, .none)], .none))
    }
}

extension AttributeRef where T: PredicateStringValue {
    /// `attribute ==[options] value`.
    public func equals(_ value: String, options: StringOptions = []) -> TypedPredicate<Model> {
        self.compare(.equal, .value(.string(value), .none), options)
    }

    /// `attribute BEGINSWITH[options] prefix`.
    public func beginsWith(_ prefix: String, options: StringOptions = []) -> TypedPredicate<Model> {
        self.compare(.beginsWith, .value(.string(prefix), .none), options)
    }

    /// `attribute ENDSWITH[options] suffix`.
    public func endsWith(_ suffix: String, options: StringOptions = []) -> TypedPredicate<Model> {
        self.compare(.endsWith, .value(.string(suffix), .none), options)
    }

    /// `attribute CONTAINS[options] text`.
    public func contains(_ text: String, options: StringOptions = []) -> TypedPredicate<Model> {
        self.compare(.contains, .value(.string(text), .none), options)
    }

    /// `attribute LIKE[options] pattern` (`*` any run, `?` one character, `\` escapes).
    public func like(_ pattern: String, options: StringOptions = []) -> TypedPredicate<Model> {
        self.compare(.like, .value(.string(pattern), .none), options)
    }
}

// MARK: - TypedPredicate

/// A predicate over a model type, built with ``AttributeRef`` operators and combined with `&&`, `||` and `!`.
///
/// It wraps the same untyped ``PredicateExpression`` the text form parses to; ``description`` renders it back to
/// predicate text.
public struct TypedPredicate<Model>: Sendable, Hashable, CustomStringConvertible {
    /// The untyped expression (without source positions).
    public let expression: PredicateExpression

    /// Wraps an expression.
    public init(_ expression: PredicateExpression) {
        self.expression = expression
    }

    /// `TRUEPREDICATE`.
    public static var all: TypedPredicate { TypedPredicate(.constant(true, .none)) }
    /// `FALSEPREDICATE`.
    public static var none: TypedPredicate { TypedPredicate(.constant(false, .none)) }

    /// The predicate text, e.g. `category == 3 AND title BEGINSWITH[c] "w"`.
    public var description: String { self.expression.description }

    /// Checks the predicate against the model's entity; see ``PredicateExpression/bind(to:variables:)``.
    ///
    /// - Throws: ``QueryError`` (positions are 0: a typed predicate has no text).
    public func bind(
        to entity: EntitySchema,
        variables: [String: PredicateVariable] = [:]
    ) throws(QueryError) -> RowPredicate {
        try self.expression.bind(to: entity, variables: variables)
    }

    /// Both predicates hold.
    public static func && (lhs: TypedPredicate, rhs: TypedPredicate) -> TypedPredicate {
        TypedPredicate(.and(lhs.expression, rhs.expression))
    }

    /// Either predicate holds.
    public static func || (lhs: TypedPredicate, rhs: TypedPredicate) -> TypedPredicate {
        TypedPredicate(.or(lhs.expression, rhs.expression))
    }

    /// The predicate does not hold (two-valued: true where the attribute is null).
    public static prefix func ! (operand: TypedPredicate) -> TypedPredicate {
        TypedPredicate(.negation(operand.expression, .none))
    }
}

// MARK: - Value conversion

/// A Swift type that can be the type of an ``AttributeRef`` and appear as a literal in a typed predicate.
public protocol PredicateValueConvertible {
    /// The value as it appears in a predicate (timestamps as ISO-8601 strings, as in predicate text).
    var predicateValue: Value { get }
}

/// A type whose attributes support `<`, `<=`, `>`, `>=` and `BETWEEN`.
public protocol PredicateOrderedValue: PredicateValueConvertible {}

/// A type whose attributes support string operators and modifiers.
public protocol PredicateStringValue: PredicateValueConvertible {}

extension String: PredicateStringValue, PredicateOrderedValue {
    public var predicateValue: Value { .string(self) }
}

extension Int: PredicateOrderedValue {
    public var predicateValue: Value { .int(Int64(self)) }
}

extension Int64: PredicateOrderedValue {
    public var predicateValue: Value { .int(self) }
}

extension Double: PredicateOrderedValue {
    public var predicateValue: Value { .double(self) }
}

extension Bool: PredicateValueConvertible {
    public var predicateValue: Value { .bool(self) }
}

extension Timestamp: PredicateOrderedValue {
    /// The ISO-8601 string, so a typed predicate equals the parsed text; binding converts it back exactly.
    public var predicateValue: Value { .string(self.iso8601) }
}

extension Optional: PredicateValueConvertible where Wrapped: PredicateValueConvertible {
    public var predicateValue: Value { self?.predicateValue ?? .null }
}

extension Optional: PredicateOrderedValue where Wrapped: PredicateOrderedValue {}

extension Optional: PredicateStringValue where Wrapped: PredicateStringValue {}
