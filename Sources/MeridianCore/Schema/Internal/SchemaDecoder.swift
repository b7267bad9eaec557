internal import Yams

// MARK: - SchemaDecoder

/// Reads a composed YAML (or JSON) node tree into a ``Schema``; every error carries the location of the node at
/// fault. The format is documented in `docs/schema.md`.
struct SchemaDecoder {
    /// The file name errors carry, if any.
    let file: String?

    static let topKeys = ["version", "entities", "auth"]
    static let entityKeys = ["id", "attributes", "indexes", "derived", "rules"]
    static let attributeKeys = ["type", "optional", "default"]
    static let indexKeys = ["name", "attributes", "unique"]
    static let derivedKinds = ["coordinate"]
    static let coordinateKeys = ["kind", "latitude", "longitude"]

    // MARK: Errors

    func error(_ code: SchemaError.Code, _ message: String, at node: Yams.Node?) -> SchemaError {
        SchemaError(code, message, file: self.file, line: node?.mark?.line, column: node?.mark?.column)
    }

    // MARK: Document

    /// Decodes the document's root node (`nil` for an empty document).
    func decode(_ root: Yams.Node?) throws(SchemaError) -> Schema {
        guard let root, root.kind != .null else {
            throw SchemaError(
                .missingKey,
                "the schema is empty; it needs 'version' and 'entities'",
                file: self.file,
                line: 1,
                column: 1
            )
        }
        let top = try self.fields(root, of: "the schema", expecting: "a mapping with 'version' and 'entities'")
        try self.checkKeys(top, allowed: Self.topKeys, in: "the schema")
        let versionEntry = try self.require("version", in: top, of: "the schema")
        let version = try self.integer(versionEntry.value, what: "'version'")
        guard version >= 1 else {
            throw self.error(.typeMismatch, "'version' must be 1 or more, not \(version)", at: versionEntry.value)
        }
        let entitiesEntry = try self.require("entities", in: top, of: "the schema")
        let entityEntries = try self.fields(
            entitiesEntry.value,
            of: "'entities'",
            expecting: "a mapping from entity names to entities"
        )
        var entities: [EntitySchema] = []
        var foldedEntities: [String: String] = [:]
        for entry in entityEntries.entries {
            try self.checkFolded(entry.key, "entity", in: &foldedEntities, what: "one table", at: entry.keyNode)
            entities.append(try self.entity(entry))
        }
        var schema: Schema
        do {
            schema = try Schema(version: version, entities: entities)
        } catch {
            throw self.error(error.code, error.message, at: entitiesEntry.keyNode)
        }
        schema.access = try self.accessPolicy(auth: top["auth"], entities: entityEntries, schema: schema)
        return schema
    }

    /// ``Identifier/checkFolded(_:_:in:what:)`` with the error placed at `node`.
    func checkFolded(
        _ name: String, _ kind: String, in folded: inout [String: String], what: String, at node: Yams.Node
    ) throws(SchemaError) {
        do {
            try Identifier.checkFolded(name, kind, in: &folded, what: what)
        } catch {
            throw self.error(error.code, error.message, at: node)
        }
    }

    // MARK: Entities

    func entity(_ entry: YAMLEntry) throws(SchemaError) -> EntitySchema {
        let name = entry.key
        guard Identifier.isValid(name) else {
            throw self.error(
                .invalidName,
                "entity name '\(name)' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)",
                at: entry.keyNode
            )
        }
        let lowered = name.lowercased()
        guard !lowered.hasPrefix("meridian_"), !lowered.hasPrefix("sqlite_") else {
            throw self.error(
                .invalidName,
                "entity name '\(name)' uses a reserved prefix (meridian_, sqlite_)",
                at: entry.keyNode
            )
        }
        let fields = try self.fields(
            entry.value,
            of: "entity '\(name)'",
            expecting: "a mapping with 'attributes' (and optionally 'id', 'indexes', 'derived')"
        )
        try self.checkKeys(fields, allowed: Self.entityKeys, in: "entity '\(name)'")

        var idPolicy = IDPolicy.auto
        if let idEntry = fields["id"] {
            let text = try self.string(idEntry.value, what: "\(name): 'id'")
            guard let policy = IDPolicy(rawValue: text) else {
                let options = IDPolicy.allCases.map(\.rawValue)
                throw self.error(
                    .typeMismatch,
                    "\(name): unknown id policy '\(text)'\(Suggestion.hint(for: text, in: options)); "
                        + "expected auto or client",
                    at: idEntry.value
                )
            }
            idPolicy = policy
        }

        let attributesEntry = try self.require("attributes", in: fields, of: "entity '\(name)'")
        let attributeFields = try self.fields(
            attributesEntry.value,
            of: "\(name): 'attributes'",
            expecting: "a mapping from attribute names to types"
        )
        var attributes: [Attribute] = []
        var foldedAttributes: [String: String] = [:]
        for attributeEntry in attributeFields.entries {
            try self.checkFolded(
                attributeEntry.key, "\(name): attribute", in: &foldedAttributes, what: "one column",
                at: attributeEntry.keyNode)
            attributes.append(try self.attribute(attributeEntry, entity: name))
        }
        let types = Dictionary(uniqueKeysWithValues: attributes.map { ($0.name, $0.type) })

        var indexes: [Index] = []
        if let indexesEntry = fields["indexes"], indexesEntry.value.kind != .null {
            guard case .sequence(let items) = indexesEntry.value else {
                throw self.error(
                    .typeMismatch,
                    "\(name): 'indexes' must be a list, not \(indexesEntry.value.kind.phrase)",
                    at: indexesEntry.value
                )
            }
            var foldedIndexes: [String: String] = [:]
            for item in items {
                let index = try self.index(item, entity: name, types: types)
                guard !indexes.contains(where: { $0.name == index.name }) else {
                    throw self.error(.duplicateName, "\(name): index '\(index.name)' is declared twice", at: item)
                }
                try self.checkFolded(index.name, "\(name): index", in: &foldedIndexes, what: "one index", at: item)
                indexes.append(index)
            }
        }

        var derived: [DerivedAttribute] = []
        if let derivedEntry = fields["derived"], derivedEntry.value.kind != .null {
            let derivedFields = try self.fields(
                derivedEntry.value,
                of: "\(name): 'derived'",
                expecting: "a mapping from derived attribute names to definitions"
            )
            for derivedItem in derivedFields.entries {
                derived.append(try self.derivedAttribute(derivedItem, entity: name, types: types))
            }
        }

        let entity = EntitySchema(
            name: name,
            attributes: attributes,
            indexes: indexes,
            derived: derived,
            idPolicy: idPolicy
        )
        do {
            try entity.validate()
        } catch {
            // Everything validate() checks is checked above with a precise location; this is a backstop.
            throw self.error(error.code, error.message, at: entry.keyNode)
        }
        return entity
    }

    // MARK: Attributes

    func attribute(_ entry: YAMLEntry, entity: String) throws(SchemaError) -> Attribute {
        let name = entry.key
        let path = "\(entity).\(name)"
        guard Identifier.isValid(name) else {
            throw self.error(
                .invalidName,
                "\(path): attribute name is not an identifier ([A-Za-z_][A-Za-z0-9_]*)",
                at: entry.keyNode
            )
        }
        if name == EntitySchema.idAttribute {
            throw self.error(
                .invalidName,
                "\(path): 'id' is reserved: every entity has an implicit string primary key 'id' "
                    + "(choose how it is set with the entity's 'id: auto' or 'id: client')",
                at: entry.keyNode
            )
        }
        guard !Identifier.isReserved(name) else {
            throw self.error(.invalidName, "\(path): '\(name)' is reserved", at: entry.keyNode)
        }

        switch entry.value {
        case .scalar:
            guard entry.value.kind == .string, let text = entry.value.scalarText else {
                let found = entry.value.kind == .null ? "nothing" : entry.value.kind.phrase
                throw self.error(
                    .typeMismatch,
                    "\(path): expected a type such as 'string' or 'double?', found \(found)",
                    at: entry.value
                )
            }
            let (type, optional) = try self.attributeType(text, at: entry.value, path: path)
            return Attribute(name: name, type: type, isOptional: optional)

        case .mapping:
            let fields = try self.fields(entry.value, of: path, expecting: "a mapping")
            try self.checkKeys(fields, allowed: Self.attributeKeys, in: "attribute \(path)")
            let typeEntry = try self.require("type", in: fields, of: "attribute \(path)")
            let typeText = try self.string(typeEntry.value, what: "\(path): 'type'")
            var (type, optional) = try self.attributeType(typeText, at: typeEntry.value, path: path)
            if let optionalEntry = fields["optional"] {
                let flag = try self.boolean(optionalEntry.value, what: "\(path): 'optional'")
                if optional, !flag {
                    throw self.error(
                        .typeMismatch,
                        "\(path): type '\(typeText)' is optional but 'optional' is false",
                        at: optionalEntry.value
                    )
                }
                optional = flag
            }
            var defaultValue: Value?
            if let defaultEntry = fields["default"] {
                defaultValue = try self.defaultValue(
                    defaultEntry.value,
                    type: type,
                    isOptional: optional,
                    path: path
                )
            }
            return Attribute(name: name, type: type, isOptional: optional, defaultValue: defaultValue)

        default:
            throw self.error(
                .typeMismatch,
                "\(path): expected a type such as 'string' or 'double?', or a mapping with 'type', 'optional' "
                    + "and 'default', not \(entry.value.kind.phrase)",
                at: entry.value
            )
        }
    }

    /// Parses `string`, `double?` and the like.
    func attributeType(
        _ text: String,
        at node: Yams.Node,
        path: String
    ) throws(SchemaError) -> (AttributeType, optional: Bool) {
        var name = Substring(text)
        var optional = false
        if name.hasSuffix("?") {
            name = name.dropLast()
            optional = true
        }
        guard let type = AttributeType(rawValue: String(name)) else {
            let names = AttributeType.allCases.map(\.rawValue)
            throw self.error(
                .unknownType,
                "\(path): unknown type '\(text)'\(Suggestion.hint(for: String(name), in: names)); "
                    + "the types are \(names.joined(separator: ", ")) (add '?' for optional)",
                at: node
            )
        }
        return (type, optional)
    }

    // MARK: Structure

    /// The node as a string-keyed mapping.
    func fields(_ node: Yams.Node, of what: String, expecting: String) throws(SchemaError) -> YAMLFields {
        guard case .mapping(let mapping) = node else {
            throw self.error(.typeMismatch, "\(what) must be \(expecting), not \(node.kind.phrase)", at: node)
        }
        var entries: [YAMLEntry] = []
        for (key, value) in mapping {
            guard key.kind == .string, let text = key.scalarText else {
                throw self.error(
                    .typeMismatch,
                    "\(what): keys must be names, not \(key.kind.phrase)",
                    at: key
                )
            }
            entries.append(YAMLEntry(key: text, keyNode: key, value: value))
        }
        return YAMLFields(node: node, entries: entries)
    }

    /// Rejects keys outside `allowed`, suggesting the closest allowed key.
    func checkKeys(_ fields: YAMLFields, allowed: [String], in what: String) throws(SchemaError) {
        for entry in fields.entries where !allowed.contains(entry.key) {
            throw self.error(
                .unknownKey,
                "unknown key '\(entry.key)' in \(what)\(Suggestion.hint(for: entry.key, in: allowed)); "
                    + "expected \(allowed.map { "'\($0)'" }.joined(separator: ", "))",
                at: entry.keyNode
            )
        }
    }

    /// The entry for a required key.
    func require(_ key: String, in fields: YAMLFields, of what: String) throws(SchemaError) -> YAMLEntry {
        guard let entry = fields[key] else {
            throw self.error(.missingKey, "\(what) has no '\(key)'", at: fields.node)
        }
        return entry
    }

    // MARK: Scalars

    func string(_ node: Yams.Node, what: String) throws(SchemaError) -> String {
        guard node.kind == .string, let text = node.scalarText else {
            throw self.error(.typeMismatch, "\(what) must be a name, not \(node.kind.phrase)", at: node)
        }
        return text
    }

    func integer(_ node: Yams.Node, what: String) throws(SchemaError) -> Int {
        guard node.kind == .int, let text = node.scalarText else {
            throw self.error(.typeMismatch, "\(what) must be an integer, not \(node.kind.phrase)", at: node)
        }
        guard let value = Int(text) else {
            throw self.error(.typeMismatch, "\(what) must be a plain decimal integer, not '\(text)'", at: node)
        }
        return value
    }

    func boolean(_ node: Yams.Node, what: String) throws(SchemaError) -> Bool {
        guard node.kind == .bool, let text = node.scalarText?.lowercased(), text == "true" || text == "false" else {
            throw self.error(.typeMismatch, "\(what) must be true or false, not \(self.quoted(node))", at: node)
        }
        return text == "true"
    }

    /// A scalar's text in single quotes, or its kind for other nodes.
    func quoted(_ node: Yams.Node) -> String {
        guard let text = node.scalarText, node.kind != .null else { return node.kind.phrase }
        return "'\(text)'"
    }
}
