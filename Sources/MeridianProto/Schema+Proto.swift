// MARK: - Schema ↔ Meridian_V1_Schema

package import MeridianCore

extension Meridian_V1_Schema {
    /// The wire form of a schema (entities, attributes, indexes and derived attributes in declaration order).
    package init(_ schema: Schema) {
        self.init()
        self.version = Int64(schema.version)
        self.entities = schema.entities.map(Meridian_V1_Entity.init)
    }
}

extension Schema {
    /// The Core schema a wire schema describes; equal to the server's, with the same fingerprint.
    ///
    /// - Throws: ``ProtoConversionError``: `unknownEnumValue` for an unspecified or unknown attribute type,
    ///   `missingField` for a derived attribute without a kind, `invalidValue` for a NaN default, `invalidSchema`
    ///   (wrapping the `SchemaError`) when the result is not a valid schema.
    package init(_ proto: Meridian_V1_Schema) throws(ProtoConversionError) {
        guard let version = Int(exactly: proto.version) else {
            throw ProtoConversionError(.invalidSchema, "schema version \(proto.version) is out of range")
        }
        var entities: [EntitySchema] = []
        entities.reserveCapacity(proto.entities.count)
        for entity in proto.entities {
            do {
                entities.append(try EntitySchema(entity))
            } catch {
                throw error.within("entity \(entity.name)")
            }
        }
        do {
            try self.init(version: version, entities: entities)
        } catch {
            throw ProtoConversionError(.invalidSchema, error.message, cause: error)
        }
    }
}

// MARK: - Entities

extension Meridian_V1_Entity {
    /// The wire form of an entity.
    package init(_ entity: EntitySchema) {
        self.init()
        self.name = entity.name
        self.attributes = entity.attributes.map(Meridian_V1_Attribute.init)
        self.indexes = entity.indexes.map { index in
            var proto = Meridian_V1_Index()
            proto.name = index.name
            proto.attributes = index.attributes
            proto.unique = index.isUnique
            return proto
        }
        self.derived = entity.derived.map { derived in
            var proto = Meridian_V1_DerivedAttribute()
            proto.name = derived.name
            switch derived.kind {
            case .coordinate(let latitude, let longitude):
                var coordinate = Meridian_V1_Coordinate()
                coordinate.latitude = latitude
                coordinate.longitude = longitude
                proto.kind = .coordinate(coordinate)
            }
            return proto
        }
        self.idPolicy = Meridian_V1_IdPolicy(entity.idPolicy)
    }
}

extension EntitySchema {
    /// The Core form of a wire entity (not yet validated; `Schema.init` validates).
    package init(_ proto: Meridian_V1_Entity) throws(ProtoConversionError) {
        var attributes: [Attribute] = []
        attributes.reserveCapacity(proto.attributes.count)
        for attribute in proto.attributes {
            do {
                attributes.append(try Attribute(attribute))
            } catch {
                throw error.within("attribute \(attribute.name)")
            }
        }
        let indexes = proto.indexes.map {
            Index(name: $0.name, attributes: $0.attributes, isUnique: $0.unique)
        }
        var derived: [DerivedAttribute] = []
        for item in proto.derived {
            switch item.kind {
            case nil:
                throw ProtoConversionError(.missingField, "derived attribute \(item.name) has no kind")
            case .coordinate(let c):
                derived.append(
                    DerivedAttribute(name: item.name, kind: .coordinate(latitude: c.latitude, longitude: c.longitude))
                )
            }
        }
        self.init(
            name: proto.name,
            attributes: attributes,
            indexes: indexes,
            derived: derived,
            idPolicy: try IDPolicy(proto.idPolicy)
        )
    }
}

// MARK: - Attributes and enums

extension Meridian_V1_Attribute {
    /// The wire form of an attribute; a default of nil is sent as an explicit null, no default as an absent field.
    package init(_ attribute: Attribute) {
        self.init()
        self.name = attribute.name
        self.type = Meridian_V1_AttributeType(attribute.type)
        self.optional = attribute.isOptional
        if let value = attribute.defaultValue {
            self.defaultValue = Meridian_V1_Value(value)
        }
    }
}

extension Attribute {
    /// The Core form of a wire attribute.
    package init(_ proto: Meridian_V1_Attribute) throws(ProtoConversionError) {
        // Spelled out: in `cond ? try Value(…) : nil`, the `nil` would become `Value.null` (Value is
        // ExpressibleByNilLiteral) and "no default" would turn into "defaults to null".
        var defaultValue: Value?
        if proto.hasDefaultValue {
            defaultValue = try Value(proto.defaultValue)
        }
        self.init(
            name: proto.name, type: try AttributeType(proto.type), isOptional: proto.optional,
            defaultValue: defaultValue)
    }
}

extension Meridian_V1_AttributeType {
    /// The wire form of an attribute type.
    package init(_ type: AttributeType) {
        switch type {
        case .string: self = .string
        case .int: self = .int
        case .double: self = .double
        case .bool: self = .bool
        case .bytes: self = .bytes
        case .timestamp: self = .timestamp
        }
    }
}

extension AttributeType {
    /// The Core form of a wire attribute type.
    ///
    /// - Throws: ``ProtoConversionError`` with code `unknownEnumValue` for `UNSPECIFIED` or an unknown value.
    package init(_ proto: Meridian_V1_AttributeType) throws(ProtoConversionError) {
        switch proto {
        case .string: self = .string
        case .int: self = .int
        case .double: self = .double
        case .bool: self = .bool
        case .bytes: self = .bytes
        case .timestamp: self = .timestamp
        case .unspecified:
            throw ProtoConversionError(.unknownEnumValue, "attribute type is not set")
        case .UNRECOGNIZED(let raw):
            throw ProtoConversionError(.unknownEnumValue, "unknown attribute type \(raw)")
        }
    }
}

extension Meridian_V1_IdPolicy {
    /// The wire form of an id policy.
    package init(_ policy: IDPolicy) {
        switch policy {
        case .auto: self = .auto
        case .client: self = .client
        }
    }
}

extension IDPolicy {
    /// The Core form of a wire id policy; `UNSPECIFIED` means `auto`, as the protocol says.
    ///
    /// - Throws: ``ProtoConversionError`` with code `unknownEnumValue` for an unknown value.
    package init(_ proto: Meridian_V1_IdPolicy) throws(ProtoConversionError) {
        switch proto {
        case .unspecified, .auto: self = .auto
        case .client: self = .client
        case .UNRECOGNIZED(let raw):
            throw ProtoConversionError(.unknownEnumValue, "unknown id policy \(raw)")
        }
    }
}

// MARK: - GetSchemaResponse

extension Meridian_V1_GetSchemaResponse {
    /// The answer to GetSchema for a served schema: the schema and its fingerprint.
    package init(_ schema: Schema) {
        self.init()
        self.schema = Meridian_V1_Schema(schema)
        self.fingerprint = schema.fingerprint
    }
}
