// MARK: - Binding and type checking

extension PredicateExpression {
    /// Checks the expression against an entity and substitutes its variables, giving a ``RowPredicate``.
    ///
    /// Type rules:
    /// - the attribute must be `id` or a stored attribute of the entity;
    /// - `int` and `double` attributes compare with any number; `string` with strings; `bool` with `true`/`false`
    ///   and only under `==` and `!=`; `bytes` with bytes (from variables); `timestamp` with ISO-8601 strings
    ///   (`"2024-05-01T12:00:00Z"`) or timestamp values;
    /// - `== nil` and `!= nil` test for null; `nil` anywhere else is an error, except inside `IN`, where it never
    ///   matches;
    /// - `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE` and the modifiers `[c]`, `[d]`, `[cd]` apply to strings only;
    /// - `BETWEEN` takes a list of exactly two values, `IN` a list of any length; a variable may hold that list;
    /// - NaN is never a valid value.
    ///
    /// ```swift
    /// let predicate = try PredicateExpression.parse("category IN $kinds AND updatedAt > $since")
    ///     .bind(to: point, variables: ["kinds": [1, 2], "since": "2024-01-01T00:00:00Z"])
    /// ```
    ///
    /// - Parameters:
    ///   - entity: The entity whose rows the predicate will filter.
    ///   - variables: Values for the `$name` variables, by name without the `$`.
    /// - Returns: The checked predicate.
    /// - Throws: ``QueryError`` with code `unknownAttribute`, `typeMismatch`, `unboundVariable` or
    ///   `invalidValue`, positioned at the offending attribute, operator or value.
    public func bind(
        to entity: EntitySchema,
        variables: [String: PredicateVariable] = [:]
    ) throws(QueryError) -> RowPredicate {
        var binder = PredicateBinder(entity: entity, variables: variables)
        return RowPredicate(node: try binder.bind(self))
    }
}

/// Turns an expression into a checked ``RowPredicate/Node`` for one entity.
struct PredicateBinder {
    let entity: EntitySchema
    let variables: [String: PredicateVariable]
    /// The caller's claims when a rule of the schema is bound (``AccessPolicy``); `nil` for a client's predicate,
    /// which may not use claims.
    var claims: [String: PredicateVariable]? = nil

    /// A resolved operand: one value or a list, each with the range to blame.
    enum Resolved {
        case single(Value, SourceRange)
        case list([(Value, SourceRange)], SourceRange)
    }

    mutating func bind(_ expression: PredicateExpression) throws(QueryError) -> RowPredicate.Node {
        switch expression {
        case .constant(let b, _):
            return .constant(b)
        case .negation(let e, _):
            return .not(try self.bind(e))
        case .conjunction(let terms):
            var nodes: [RowPredicate.Node] = []
            for term in terms { nodes.append(try self.bind(term)) }
            return .and(nodes)
        case .disjunction(let terms):
            var nodes: [RowPredicate.Node] = []
            for term in terms { nodes.append(try self.bind(term)) }
            return .or(nodes)
        case .comparison(let c):
            return try self.bind(c)
        case .claimTest(let c):
            return .constant(try self.evaluateClaimTest(c))
        }
    }

    /// `@claim op operand` is decided once, when the rule is bound: the comparison is checked and evaluated as if the
    /// claim were an attribute of its value's type, so that it follows the language's rules exactly.
    private func evaluateClaimTest(_ c: PredicateComparison) throws(QueryError) -> Bool {
        let claimRange = c.attributeRange
        guard case .single(let value, _) = try self.resolve(.claim(c.attribute, claimRange), topLevel: true) else {
            throw QueryError(
                .typeMismatch,
                "the claim @\(c.attribute) holds a list; test it with 'attribute IN @\(c.attribute)'",
                position: claimRange.position,
                length: claimRange.length
            )
        }
        guard let type = value.type else { return false }
        let holder = EntitySchema(name: self.entity.name, attributes: [Attribute(name: c.attribute, type: type)])
        let binder = PredicateBinder(entity: holder, variables: self.variables, claims: self.claims)
        let node = try binder.bind(c)
        return RowPredicate.evaluate(node, Row(id: "", values: [c.attribute: value]))
    }

    private func attributeList() -> String {
        ([EntitySchema.idAttribute] + self.entity.attributes.map(\.name)).joined(separator: ", ")
    }

    private func bind(_ c: PredicateComparison) throws(QueryError) -> RowPredicate.Node {
        guard let type = self.entity.typeOfAttribute(named: c.attribute) else {
            throw QueryError(
                .unknownAttribute,
                "unknown attribute '\(c.attribute)' (\(self.entity.name) has: \(self.attributeList()))",
                position: c.attributeRange.position,
                length: c.attributeRange.length
            )
        }
        let opName = c.op.rawValue
        func mismatch(_ message: String, _ range: SourceRange) -> QueryError {
            QueryError(.typeMismatch, message, position: range.position, length: range.length)
        }
        func invalid(_ message: String, _ range: SourceRange) -> QueryError {
            QueryError(.invalidValue, message, position: range.position, length: range.length)
        }
        if !c.options.isEmpty, type != .string {
            throw mismatch(
                "the modifier \(c.options) applies only to strings; '\(c.attribute)' is \(type)",
                c.opRange
            )
        }
        let resolved = try self.resolve(c.operand, topLevel: true)
        func single() throws(QueryError) -> (Value, SourceRange) {
            switch resolved {
            case .single(let v, let r): return (v, r)
            case .list(_, let r):
                throw mismatch("\(opName) takes one value, not a list\(c.op == .equal ? " (use IN)" : "")", r)
            }
        }
        func list() throws(QueryError) -> ([(Value, SourceRange)], SourceRange) {
            switch resolved {
            case .list(let items, let r): return (items, r)
            case .single(_, let r):
                throw mismatch("\(opName) takes a list in braces, such as {1, 2}", r)
            }
        }
        func convert(_ value: Value, _ range: SourceRange) throws(QueryError) -> Value {
            try self.convert(value, to: type, attribute: c.attribute, options: c.options, range: range)
        }
        if type == .bool, c.op != .equal, c.op != .notEqual {
            throw mismatch("\(opName) does not apply to the bool attribute '\(c.attribute)' (use == or !=)", c.opRange)
        }
        switch c.op {
        case .equal, .notEqual:
            let (value, range) = try single()
            if value.isNull { return .null(attribute: c.attribute, isNull: c.op == .equal) }
            return .compare(attribute: c.attribute, op: c.op, options: c.options, value: try convert(value, range))
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            let (value, range) = try single()
            if value.isNull { throw invalid("\(opName) cannot compare with nil (only == nil and != nil can)", range) }
            return .compare(attribute: c.attribute, op: c.op, options: c.options, value: try convert(value, range))
        case .between:
            let (items, range) = try list()
            guard items.count == 2 else {
                throw invalid("BETWEEN takes exactly two values {low, high}, found \(items.count)", range)
            }
            for (value, r) in items where value.isNull { throw invalid("BETWEEN cannot take nil as a bound", r) }
            return .between(
                attribute: c.attribute,
                options: c.options,
                low: try convert(items[0].0, items[0].1),
                high: try convert(items[1].0, items[1].1)
            )
        case .in:
            let (items, _) = try list()
            var values: [Value] = []
            for (value, r) in items where !value.isNull { values.append(try convert(value, r)) }
            return .in(attribute: c.attribute, options: c.options, values: values)
        case .beginsWith, .endsWith, .contains, .like:
            guard type == .string, let matchOp = c.op.stringMatch else {
                throw mismatch("\(opName) applies only to strings; '\(c.attribute)' is \(type)", c.opRange)
            }
            let (value, range) = try single()
            if value.isNull { throw invalid("\(opName) cannot match nil", range) }
            guard case .string(let pattern) = try convert(value, range) else {
                throw invalid("\(opName) needs a string", range)
            }
            if matchOp == .like, LikePattern.hasDanglingEscape(pattern) {
                throw invalid("the LIKE pattern ends with an unpaired '\\' (write \\\\ for a backslash)", range)
            }
            return .match(attribute: c.attribute, op: matchOp, options: c.options, pattern: pattern)
        }
    }

    /// Substitutes variables; lists may hold values and single-value variables.
    private func resolve(_ operand: PredicateOperand, topLevel: Bool) throws(QueryError) -> Resolved {
        switch operand {
        case .value(let v, let r):
            return .single(v, r)
        case .variable(let name, let r):
            guard let variable = self.variables[name] else {
                let known = self.variables.keys.sorted { $0.utf8Compare($1) < 0 }.map { "$" + $0 }
                let hint = known.isEmpty ? "no variables were given" : "given: \(known.joined(separator: ", "))"
                throw QueryError(
                    .unboundVariable,
                    "variable $\(name) has no value (\(hint))",
                    position: r.position,
                    length: r.length
                )
            }
            switch variable {
            case .value(let v): return .single(v, r)
            case .list(let vs):
                guard topLevel else {
                    throw QueryError(
                        .typeMismatch,
                        "variable $\(name) holds a list, which cannot be an element of a list",
                        position: r.position,
                        length: r.length
                    )
                }
                return .list(vs.map { ($0, r) }, r)
            }
        case .claim(let name, let r):
            guard let claims = self.claims else {
                throw QueryError(
                    .unboundVariable,
                    "@\(name) is a claim of the caller's identity: only the schema's rules can use claims "
                        + "(a query's own values are $variables)",
                    position: r.position,
                    length: r.length
                )
            }
            guard let claim = claims[name] else {
                let known = claims.keys.sorted { $0.utf8Compare($1) < 0 }.map { "@" + $0 }
                let hint =
                    known.isEmpty ? "the schema declares no claims" : "declared: \(known.joined(separator: ", "))"
                throw QueryError(
                    .unboundVariable,
                    "unknown claim @\(name) (\(hint) under auth.claims)",
                    position: r.position,
                    length: r.length
                )
            }
            switch claim {
            case .value(let v): return .single(v, r)
            case .list(let vs):
                guard topLevel else {
                    throw QueryError(
                        .typeMismatch,
                        "the claim @\(name) holds a list, which cannot be an element of a list",
                        position: r.position,
                        length: r.length
                    )
                }
                return .list(vs.map { ($0, r) }, r)
            }
        case .list(let items, let r):
            var values: [(Value, SourceRange)] = []
            for item in items {
                guard case .single(let v, let ir) = try self.resolve(item, topLevel: false) else { continue }
                values.append((v, ir))
            }
            return .list(values, r)
        }
    }

    /// Checks one non-null value against the attribute type and converts it to the stored form (folded strings,
    /// timestamps from ISO-8601).
    private func convert(
        _ value: Value,
        to type: AttributeType,
        attribute: String,
        options: StringOptions,
        range: SourceRange
    ) throws(QueryError) -> Value {
        guard value.isValid else {
            throw QueryError(
                .invalidValue, "NaN is not a valid value", position: range.position, length: range.length)
        }
        let ok: Bool
        var converted = value
        switch (type, value) {
        case (.string, .string(let s)):
            ok = true
            converted = .string(Folding.fold(s, options))
        case (.int, .int), (.int, .double), (.double, .int), (.double, .double), (.bool, .bool), (.bytes, .bytes),
            (.timestamp, .timestamp):
            ok = true
        case (.timestamp, .string(let s)):
            guard let t = Timestamp(iso8601: s) else {
                throw QueryError(
                    .invalidValue,
                    "\(Value.quote(s)) is not an ISO-8601 timestamp such as \"2024-05-01T12:30:00Z\"",
                    position: range.position,
                    length: range.length
                )
            }
            ok = true
            converted = .timestamp(t)
        default:
            ok = false
        }
        guard ok else {
            let kind = value.type.map { "\($0)" } ?? "nil"
            throw QueryError(
                .typeMismatch,
                "'\(attribute)' is \(type) but \(value) is \(kind)",
                position: range.position,
                length: range.length
            )
        }
        return converted
    }
}
