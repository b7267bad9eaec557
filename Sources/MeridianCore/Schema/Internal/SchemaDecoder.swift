internal import Yams

// MARK: - SchemaDecoder

/// Reads a composed YAML (or JSON) node tree into a ``Schema``; every error carries the location of the node at
/// fault. The format is documented in `docs/schema.md`.
struct SchemaDecoder {
    /// The file name errors carry, if any.
    let file: String?

    static let topKeys = ["version", "entities"]
    static let entityKeys = ["id", "attributes", "indexes", "derived"]
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
        for entry in entityEntries.entries {
            entities.append(try self.entity(entry))
        }
        do {
            return try Schema(version: version, entities: entities)
        } catch {
            throw self.error(error.code, error.message, at: entitiesEntry.keyNode)
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
        guard !name.hasPrefix("meridian_"), !name.hasPrefix("sqlite_") else {
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
        for attributeEntry in attributeFields.entries {
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
            for item in items {
                let index = try self.index(item, entity: name, types: types)
                guard !indexes.contains(where: { $0.name == index.name }) else {
                    throw self.error(.duplicateName, "\(name): index '\(index.name)' is declared twice", at: item)
                }
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

    // MARK: Indexes

    func index(_ item: Yams.Node, entity: String, types: [String: AttributeType]) throws(SchemaError) -> Index {
        var explicitName: String?
        var unique = false
        let nameNodes: [Yams.Node]
        switch item {
        case .scalar:
            nameNodes = [item]
        case .sequence(let sequence):
            nameNodes = Array(sequence)
        case .mapping:
            let fields = try self.fields(item, of: "\(entity): index", expecting: "a mapping")
            try self.checkKeys(fields, allowed: Self.indexKeys, in: "\(entity): index")
            if let nameEntry = fields["name"] {
                let name = try self.string(nameEntry.value, what: "\(entity): index 'name'")
                guard Identifier.isValid(name) else {
                    throw self.error(
                        .invalidName,
                        "\(entity): index name '\(name)' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)",
                        at: nameEntry.value
                    )
                }
                explicitName = name
            }
            if let uniqueEntry = fields["unique"] {
                unique = try self.boolean(uniqueEntry.value, what: "\(entity): index 'unique'")
            }
            let attributesEntry = try self.require("attributes", in: fields, of: "\(entity): index")
            switch attributesEntry.value {
            case .sequence(let sequence): nameNodes = Array(sequence)
            case .scalar: nameNodes = [attributesEntry.value]
            default:
                throw self.error(
                    .typeMismatch,
                    "\(entity): index 'attributes' must be a list of attribute names, not "
                        + attributesEntry.value.kind.phrase,
                    at: attributesEntry.value
                )
            }
        default:
            throw self.error(
                .typeMismatch,
                "\(entity): an index is a list of attribute names or a mapping with 'attributes', not "
                    + item.kind.phrase,
                at: item
            )
        }
        guard !nameNodes.isEmpty else {
            throw self.error(.invalidIndex, "\(entity): index names no attribute", at: item)
        }
        var names: [String] = []
        for node in nameNodes {
            let name = try self.string(node, what: "\(entity): index attribute")
            guard name == EntitySchema.idAttribute || types[name] != nil else {
                let known = [EntitySchema.idAttribute] + types.keys.sorted()
                throw self.error(
                    .unknownAttribute,
                    "\(entity): index names unknown attribute '\(name)'\(Suggestion.hint(for: name, in: known))",
                    at: node
                )
            }
            guard !names.contains(name) else {
                throw self.error(.invalidIndex, "\(entity): index names '\(name)' twice", at: node)
            }
            names.append(name)
        }
        return Index(name: explicitName, attributes: names, isUnique: unique)
    }

    // MARK: Derived attributes

    func derivedAttribute(
        _ entry: YAMLEntry,
        entity: String,
        types: [String: AttributeType]
    ) throws(SchemaError) -> DerivedAttribute {
        let name = entry.key
        let path = "\(entity).\(name)"
        guard Identifier.isValid(name), !Identifier.isReserved(name) else {
            throw self.error(
                .invalidName,
                "\(path): derived attribute name is not an identifier or is reserved",
                at: entry.keyNode
            )
        }
        guard types[name] == nil else {
            throw self.error(
                .duplicateName,
                "\(path): derived attribute has the same name as a stored attribute",
                at: entry.keyNode
            )
        }
        let fields = try self.fields(
            entry.value,
            of: path,
            expecting: "a mapping such as { coordinate: [latitude, longitude] }"
        )
        let latitudeNode: Yams.Node
        let longitudeNode: Yams.Node
        if let kindEntry = fields["kind"] {
            // Long form: { kind: coordinate, latitude: lat, longitude: lon }
            let kind = try self.string(kindEntry.value, what: "\(path): 'kind'")
            try self.checkKind(kind, at: kindEntry.value, path: path)
            try self.checkKeys(fields, allowed: Self.coordinateKeys, in: "derived attribute \(path)")
            latitudeNode = try self.require("latitude", in: fields, of: "derived attribute \(path)").value
            longitudeNode = try self.require("longitude", in: fields, of: "derived attribute \(path)").value
        } else {
            // Short form: { coordinate: [lat, lon] }
            guard fields.entries.count == 1, let only = fields.entries.first else {
                throw self.error(
                    .typeMismatch,
                    "\(path): expected one kind, as in { coordinate: [latitude, longitude] }, "
                        + "or { kind: coordinate, latitude: …, longitude: … }",
                    at: entry.value
                )
            }
            try self.checkKind(only.key, at: only.keyNode, path: path)
            guard case .sequence(let sequence) = only.value, sequence.count == 2 else {
                throw self.error(
                    .typeMismatch,
                    "\(path): 'coordinate' takes a list of two attributes, [latitude, longitude]",
                    at: only.value
                )
            }
            latitudeNode = sequence[sequence.startIndex]
            longitudeNode = sequence[sequence.startIndex + 1]
        }
        let latitude = try self.coordinateDependency(latitudeNode, path: path, types: types)
        let longitude = try self.coordinateDependency(longitudeNode, path: path, types: types)
        return DerivedAttribute(name: name, kind: .coordinate(latitude: latitude, longitude: longitude))
    }

    func checkKind(_ kind: String, at node: Yams.Node, path: String) throws(SchemaError) {
        guard Self.derivedKinds.contains(kind) else {
            throw self.error(
                .unknownKey,
                "\(path): unknown derived kind '\(kind)'\(Suggestion.hint(for: kind, in: Self.derivedKinds)); "
                    + "the kinds are \(Self.derivedKinds.joined(separator: ", "))",
                at: node
            )
        }
    }

    func coordinateDependency(
        _ node: Yams.Node,
        path: String,
        types: [String: AttributeType]
    ) throws(SchemaError) -> String {
        let name = try self.string(node, what: "\(path): coordinate attribute")
        guard let type = types[name] else {
            throw self.error(
                .unknownAttribute,
                "\(path): depends on unknown attribute '\(name)'"
                    + Suggestion.hint(for: name, in: types.keys.sorted()),
                at: node
            )
        }
        guard type.isNumeric else {
            throw self.error(
                .typeMismatch,
                "\(path): coordinate attribute '\(name)' must be double or int, not \(type)",
                at: node
            )
        }
        return name
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
