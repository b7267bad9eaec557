internal import Yams

// MARK: - The auth section and the entities' rules

extension SchemaDecoder {
    static let authKeys = ["claims"]
    static let ruleKeys = ["read", "insert", "update", "delete", "immutable"]

    /// Reads `auth:` and every entity's `rules:` into an ``AccessPolicy``, checking each rule against its entity with
    /// the declared claims; `nil` when the schema has neither.
    func accessPolicy(auth: YAMLEntry?, entities: YAMLFields, schema: Schema) throws(SchemaError) -> AccessPolicy? {
        var decoded: [(entity: String, rules: DecodedRules)] = []
        var firstRules: YAMLEntry?
        for entry in entities.entries {
            guard let rulesEntry = try self.fields(entry.value, of: "", expecting: "")["rules"] else { continue }
            firstRules = firstRules ?? rulesEntry
            decoded.append((entry.key, try self.entityRules(rulesEntry, entity: entry.key)))
        }
        guard let auth, auth.value.kind != .null else {
            if let firstRules {
                throw self.error(
                    .missingKey,
                    "rules need an 'auth:' section at the top of the schema declaring the claims they use, such as "
                        + "auth: { claims: { sub: string } }",
                    at: firstRules.keyNode
                )
            }
            return nil
        }
        let authFields = try self.fields(auth.value, of: "'auth'", expecting: "a mapping with 'claims'")
        try self.checkKeys(authFields, allowed: Self.authKeys, in: "'auth'")
        var claims: [ClaimDeclaration] = []
        if let claimsEntry = authFields["claims"], claimsEntry.value.kind != .null {
            let claimFields = try self.fields(
                claimsEntry.value, of: "auth: 'claims'", expecting: "a mapping from claim names to types")
            for entry in claimFields.entries {
                guard Identifier.isValid(entry.key) else {
                    throw self.error(
                        .invalidName, "auth.claims: '\(entry.key)' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)",
                        at: entry.keyNode)
                }
                let options = ClaimType.allCases.map(\.rawValue)
                guard let text = entry.value.scalarText, let type = ClaimType(rawValue: text) else {
                    let found = entry.value.scalarText.map { "'\($0)'" } ?? entry.value.kind.phrase
                    throw self.error(
                        .unknownType,
                        "auth.claims.\(entry.key): unknown claim type \(found)"
                            + "\(Suggestion.hint(for: entry.value.scalarText ?? "", in: options)); expected "
                            + options.joined(separator: ", ") + " (quote the list types: \"[string]\")",
                        at: entry.value
                    )
                }
                claims.append(ClaimDeclaration(name: entry.key, type: type))
            }
        }
        let placeholders = AccessPolicy(claims: claims, rules: [:]).placeholderClaims
        for (name, rules) in decoded {
            guard let entity = schema.entity(named: name) else { continue }
            try self.check(rules, of: entity, claims: placeholders)
        }
        return AccessPolicy(
            claims: claims, rules: Dictionary(uniqueKeysWithValues: decoded.map { ($0.entity, $0.rules.rules) }))
    }

    /// One entity's rules with the nodes they came from, for errors.
    struct DecodedRules {
        var rules = EntityRules()
        var nodes: [String: Yams.Node] = [:]
        var immutableNodes: [Yams.Node] = []
    }

    private func entityRules(_ entry: YAMLEntry, entity: String) throws(SchemaError) -> DecodedRules {
        let fields = try self.fields(
            entry.value, of: "\(entity): 'rules'",
            expecting: "a mapping with 'read', 'insert', 'update', 'delete' and 'immutable'")
        try self.checkKeys(fields, allowed: Self.ruleKeys, in: "\(entity): 'rules'")
        var decoded = DecodedRules()
        for field in fields.entries {
            if field.key == "immutable" {
                guard case .sequence(let items) = field.value else {
                    throw self.error(
                        .typeMismatch, "\(entity): rules.immutable must be a list of attribute names", at: field.value)
                }
                for item in items {
                    decoded.rules.immutable.append(try self.string(item, what: "\(entity): rules.immutable"))
                    decoded.immutableNodes.append(item)
                }
                continue
            }
            guard case .scalar = field.value, field.value.kind != .null, let text = field.value.scalarText else {
                throw self.error(
                    .typeMismatch,
                    "\(entity): rules.\(field.key) must be a predicate such as ownerId == @sub, not "
                        + field.value.kind.phrase,
                    at: field.value
                )
            }
            let expression: PredicateExpression
            do {
                expression = try PredicateExpression.parse(text)
            } catch {
                throw self.ruleError(error, rule: "\(entity): rules.\(field.key)", in: field.value)
            }
            switch field.key {
            case "read": decoded.rules.read = expression
            case "insert": decoded.rules.insert = expression
            case "update": decoded.rules.update = expression
            default: decoded.rules.delete = expression
            }
            decoded.nodes[field.key] = field.value
        }
        return decoded
    }

    /// Binds each rule with placeholder claims of the declared types, so that an unknown attribute or claim, a type
    /// mismatch or a `$variable` fails the load at the rule's own line and column.
    private func check(
        _ decoded: DecodedRules, of entity: EntitySchema, claims: [String: PredicateVariable]
    ) throws(SchemaError) {
        for (kind, rule) in decoded.rules.all {
            do {
                var binder = PredicateBinder(entity: entity, variables: [:], claims: claims)
                _ = try binder.bind(rule)
            } catch {
                throw self.ruleError(error, rule: "\(entity.name): rules.\(kind)", in: decoded.nodes[kind])
            }
        }
        for (name, node) in zip(decoded.rules.immutable, decoded.immutableNodes)
        where !entity.hasQueryableAttribute(name) {
            throw self.error(
                .unknownAttribute,
                "\(entity.name): rules.immutable names '\(name)', which \(entity.name) does not have"
                    + Suggestion.hint(for: name, in: entity.attributes.map(\.name)),
                at: node
            )
        }
    }

    /// A predicate error inside a rule, located at the rule's line and, for a one-line scalar, at the column of the
    /// offending text.
    private func ruleError(_ error: QueryError, rule: String, in node: Yams.Node?) -> SchemaError {
        let code: SchemaError.Code =
            switch error.code {
            case .unknownAttribute: .unknownAttribute
            case .syntax, .tooDeep: .syntax
            default: .typeMismatch
            }
        var column = node?.mark?.column
        if let node, case .scalar(let scalar) = node, !scalar.string.contains("\n") {
            let quote = scalar.style == .singleQuoted || scalar.style == .doubleQuoted ? 1 : 0
            column = column.map { $0 + quote + error.position }
        }
        return SchemaError(
            code, "\(rule): \(error.message)", file: self.file, line: node?.mark?.line, column: column)
    }
}
