internal import Yams

// MARK: - Indexes and derived attributes

extension SchemaDecoder {
    /// One item of `indexes`: a name, a list of names, or a mapping with `name`, `attributes`, `unique`.
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
}
