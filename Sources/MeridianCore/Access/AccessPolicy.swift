// MARK: - AccessPolicy

/// Who may read and write what: the claims a schema's `auth:` section declares and each entity's rules, written as
/// predicates in which `@name` is a claim of the caller's identity (`docs/security.md`).
///
/// ```yaml
/// auth:
///   claims: { sub: string, team: int, role: string, projects: "[string]" }
/// entities:
///   Note:
///     rules:
///       read:   team == @team AND (ownerId == @sub OR projectId IN @projects)
///       update: ownerId == @sub OR @role == "admin"
/// ```
///
/// Rules are filters: ``BoundAccess/read(_:in:)`` ANDs an entity's read rule with a query's own predicate on the
/// checked tree, so the one predicate drives SQL and the in-memory evaluation alike. With an `auth:` section, what no
/// rule allows is denied; a rule that uses a claim the caller's identity lacks is false as a whole (so that
/// `NOT (x == @missing)` cannot turn into an allow).
public struct AccessPolicy: Sendable, Hashable {
    /// The claims rules may use, with their types, in declaration order.
    public private(set) var claims: [ClaimDeclaration]
    /// The rules of each entity, by entity name; an entity without an entry allows nothing.
    public private(set) var rules: [String: EntityRules]

    /// Creates a policy; ``check(against:)`` (the schema loader does it with file positions) checks its rules.
    public init(claims: [ClaimDeclaration], rules: [String: EntityRules]) {
        self.claims = claims
        self.rules = rules
    }

    /// The declared type of a claim, or `nil`.
    public func claimType(_ name: String) -> ClaimType? {
        self.claims.first { $0.name == name }?.type
    }

    /// A placeholder value of every declared claim, to type-check rules without an identity.
    var placeholderClaims: [String: PredicateVariable] {
        Dictionary(uniqueKeysWithValues: self.claims.map { ($0.name, $0.type.placeholder) })
    }

    /// Checks every rule against its entity: attributes, types, claims (declared, used with fitting types), no
    /// `$variables`, immutable attributes that exist.
    ///
    /// - Throws: ``SchemaError`` naming the entity, the rule and the problem.
    public func check(against schema: Schema) throws(SchemaError) {
        for (entityName, entityRules) in self.rules.sorted(by: { $0.key.utf8Compare($1.key) < 0 }) {
            let entity = try schema.requireEntity(entityName)
            for (kind, rule) in entityRules.all {
                do {
                    _ = try self.bindRule(rule, to: entity, claims: self.placeholderClaims)
                } catch {
                    throw SchemaError(.typeMismatch, "\(entityName): rules.\(kind): \(error.description)")
                }
            }
            for name in entityRules.immutable where !entity.hasQueryableAttribute(name) {
                throw SchemaError(
                    .unknownAttribute, "\(entityName): rules.immutable names '\(name)', which \(entityName) lacks")
            }
        }
    }

    /// Binds one rule for one caller: claims substituted, claim tests decided. A rule using a claim the caller lacks
    /// is `FALSEPREDICATE`.
    func bindRule(
        _ rule: PredicateExpression,
        to entity: EntitySchema,
        claims: [String: PredicateVariable]
    ) throws(QueryError) -> RowPredicate {
        if let missing = rule.claimNames.first(where: { claims[$0] == nil }), self.claimType(missing) != nil {
            return RowPredicate(node: .constant(false))
        }
        var binder = PredicateBinder(entity: entity, variables: [:], claims: claims)
        return RowPredicate(node: try binder.bind(rule).simplified)
    }

    /// The policy's rules bound for one caller, ready to filter reads and check writes.
    ///
    /// - Parameters:
    ///   - principal: Who is calling.
    ///   - schema: The schema the rules belong to.
    /// - Returns: The bound rules; a rule that no longer binds (it cannot once ``check(against:)`` passed) denies.
    public func bind(_ principal: Principal, schema: Schema) -> BoundAccess {
        let claims = self.typedClaims(principal.claims)
        var entities: [String: BoundAccess.EntityAccess] = [:]
        for entity in schema.entities {
            let rules = self.rules[entity.name] ?? EntityRules()
            func bound(_ rule: PredicateExpression?) -> RowPredicate {
                guard let rule else { return RowPredicate(node: .constant(false)) }
                return (try? self.bindRule(rule, to: entity, claims: claims)) ?? RowPredicate(node: .constant(false))
            }
            entities[entity.name] = BoundAccess.EntityAccess(
                read: bound(rules.read),
                insert: bound(rules.insert),
                update: bound(rules.update),
                delete: bound(rules.delete),
                immutable: rules.immutable
            )
        }
        return BoundAccess(principal: principal, entities: entities)
    }

    /// The caller's claims that the policy declares, converted to their declared types; a claim of another type
    /// (`"7"` for an `int`) is left out, as if the identity lacked it.
    public func typedClaims(_ raw: [String: ClaimValue]) -> [String: PredicateVariable] {
        var typed: [String: PredicateVariable] = [:]
        for declaration in self.claims {
            guard let value = raw[declaration.name], let converted = declaration.type.convert(value) else { continue }
            typed[declaration.name] = converted
        }
        return typed
    }

    /// A fingerprint of the claims and rules alone (the schema's ``Schema/fingerprint`` covers the data model): 16 hex
    /// digits of FNV-1a over their canonical text.
    public var fingerprint: String {
        var text = "claims"
        for claim in self.claims { text += " \(claim.name):\(claim.type.rawValue)" }
        for (name, entityRules) in self.rules.sorted(by: { $0.key.utf8Compare($1.key) < 0 }) {
            text += "\n\(name)"
            for (kind, rule) in entityRules.all { text += "\n \(kind): \(rule.withoutPositions)" }
            if !entityRules.immutable.isEmpty {
                text += "\n immutable: \(entityRules.immutable.joined(separator: ","))"
            }
        }
        return FNV1a64.hex(of: text.utf8)
    }
}

// MARK: - Claims

/// A claim the rules may use: its name (without `@`) and type.
public struct ClaimDeclaration: Sendable, Hashable {
    /// The name, as in the token (`sub`, `team`).
    public var name: String
    /// The type its value must have.
    public var type: ClaimType

    /// Creates a declaration.
    public init(name: String, type: ClaimType) {
        self.name = name
        self.type = type
    }
}

/// The types a claim can have.
public enum ClaimType: String, Sendable, Hashable, CaseIterable {
    case string, int, double, bool
    /// A list of strings, for `attribute IN @claim`.
    case stringList = "[string]"
    /// A list of integers, for `attribute IN @claim`.
    case intList = "[int]"

    var placeholder: PredicateVariable {
        switch self {
        case .string: .value(.string(""))
        case .int: .value(.int(0))
        case .double: .value(.double(0))
        case .bool: .value(.bool(false))
        case .stringList: .list([.string("")])
        case .intList: .list([.int(0)])
        }
    }

    /// The value as this type, or `nil` when it is of another type (integers are accepted for `double`).
    func convert(_ value: ClaimValue) -> PredicateVariable? {
        switch (self, value) {
        case (.string, .string(let s)): .value(.string(s))
        case (.int, .int(let i)): .value(.int(i))
        case (.double, .int(let i)): .value(.double(Double(i)))
        case (.double, .double(let d)) where !d.isNaN: .value(.double(d))
        case (.bool, .bool(let b)): .value(.bool(b))
        case (.stringList, .list(let items)):
            Self.all(items) { if case .string(let s) = $0 { Value.string(s) } else { nil } }.map { .list($0) }
        case (.intList, .list(let items)):
            Self.all(items) { if case .int(let i) = $0 { Value.int(i) } else { nil } }.map { .list($0) }
        default: nil
        }
    }

    private static func all(_ items: [ClaimValue], _ convert: (ClaimValue) -> Value?) -> [Value]? {
        var values: [Value] = []
        for item in items {
            guard let value = convert(item) else { return nil }
            values.append(value)
        }
        return values
    }
}

/// A claim's value as an identity carries it (a JWT's JSON, an API key's claims), before it is typed.
public indirect enum ClaimValue: Sendable, Hashable, Codable {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case list([ClaimValue])
    /// null, an object, or a number that fits no Swift number: never a usable claim.
    case other

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? container.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? container.decode(Double.self) {
            self = .double(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let items = try? container.decode([ClaimValue].self) {
            self = .list(items)
        } else {
            self = .other
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let s): try container.encode(s)
        case .int(let i): try container.encode(i)
        case .double(let d): try container.encode(d)
        case .bool(let b): try container.encode(b)
        case .list(let items): try container.encode(items)
        case .other: try container.encodeNil()
        }
    }

    /// The value as a string, if it is one.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}

// MARK: - Entity rules

/// One entity's rules: a predicate for each of read, insert, update and delete (absent: denied), and the attributes
/// no update may change.
public struct EntityRules: Sendable, Hashable {
    /// Which rows the caller sees; AND-ed with every query and subscription.
    public var read: PredicateExpression?
    /// Checked on the inserted row.
    public var insert: PredicateExpression?
    /// Checked on the row before and after the update.
    public var update: PredicateExpression?
    /// Checked on the row before it is deleted.
    public var delete: PredicateExpression?
    /// Attributes an update may not change.
    public var immutable: [String]

    /// Creates rules.
    public init(
        read: PredicateExpression? = nil,
        insert: PredicateExpression? = nil,
        update: PredicateExpression? = nil,
        delete: PredicateExpression? = nil,
        immutable: [String] = []
    ) {
        self.read = read
        self.insert = insert
        self.update = update
        self.delete = delete
        self.immutable = immutable
    }

    /// The rules that are present, with their names, in a fixed order.
    var all: [(String, PredicateExpression)] {
        [("read", self.read), ("insert", self.insert), ("update", self.update), ("delete", self.delete)]
            .compactMap { name, rule in rule.map { (name, $0) } }
    }
}

// MARK: - Principal

/// Who is calling: a subject and the claims of the identity that was verified (a token, an API key, a certificate).
public struct Principal: Sendable, Hashable {
    /// The subject (`sub`), stable across tokens of the same user.
    public var subject: String
    /// Every claim of the identity, untyped; the policy types the ones it declares.
    public var claims: [String: ClaimValue]

    /// Creates a principal; `sub` is added to the claims when they lack it.
    public init(subject: String, claims: [String: ClaimValue] = [:]) {
        self.subject = subject
        self.claims = claims
        if self.claims["sub"] == nil { self.claims["sub"] = .string(subject) }
    }
}

// MARK: - Helpers

extension PredicateExpression {
    /// The names of the claims the expression uses, operands and claim tests alike.
    public var claimNames: Set<String> {
        var names: Set<String> = []
        func visit(_ operand: PredicateOperand) {
            switch operand {
            case .claim(let name, _): names.insert(name)
            case .list(let items, _): items.forEach(visit)
            case .value, .variable: break
            }
        }
        func visit(_ expression: PredicateExpression) {
            switch expression {
            case .constant: break
            case .comparison(let c): visit(c.operand)
            case .claimTest(let c):
                names.insert(c.attribute)
                visit(c.operand)
            case .negation(let e, _): visit(e)
            case .conjunction(let terms), .disjunction(let terms): terms.forEach(visit)
            }
        }
        visit(self)
        return names
    }
}

extension RowPredicate.Node {
    /// The same predicate with constant terms folded away (`x AND TRUEPREDICATE` is `x`), so that rules whose claim
    /// tests are decided bind to the smallest tree, and equal rules to equal trees.
    var simplified: RowPredicate.Node {
        switch self {
        case .not(let inner):
            let s = inner.simplified
            if case .constant(let b) = s { return .constant(!b) }
            return .not(s)
        case .and(let terms):
            var kept: [RowPredicate.Node] = []
            for term in terms.map(\.simplified) {
                switch term {
                case .constant(true): continue
                case .constant(false): return .constant(false)
                case .and(let inner): kept += inner
                default: kept.append(term)
                }
            }
            return kept.isEmpty ? .constant(true) : kept.count == 1 ? kept[0] : .and(kept)
        case .or(let terms):
            var kept: [RowPredicate.Node] = []
            for term in terms.map(\.simplified) {
                switch term {
                case .constant(false): continue
                case .constant(true): return .constant(true)
                case .or(let inner): kept += inner
                default: kept.append(term)
                }
            }
            return kept.isEmpty ? .constant(false) : kept.count == 1 ? kept[0] : .or(kept)
        default:
            return self
        }
    }
}
