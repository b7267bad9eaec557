// MARK: - Schema

/// The data model a store serves: a version and a set of entities.
///
/// A schema is usually loaded from a human-written YAML or JSON file (see ``Schema/load(contentsOf:)`` and
/// `docs/schema.md`); it can also be built in code:
///
/// ```swift
/// let schema = try Schema(version: 1, entities: [
///     EntitySchema(name: "Author", attributes: [
///         Attribute(name: "firstName", type: .string),
///         Attribute(name: "lastName", type: .string, isOptional: true),
///     ]),
/// ])
/// ```
public struct Schema: Sendable, Hashable {
    /// The version the schema's author gives it; recorded in the store.
    public var version: Int
    /// The entities, in declaration order.
    public private(set) var entities: [EntitySchema]
    /// Who may read and write what (the `auth:` section and the entities' `rules:`); `nil`: everyone may do
    /// everything. Not part of ``fingerprint``: rules change without a migration (``AccessPolicy/fingerprint``).
    public var access: AccessPolicy?
    private var indexByName: [String: Int]

    /// Creates a schema, checking that entity names are unique and every entity is well formed.
    ///
    /// - Throws: ``SchemaError`` naming the first problem found.
    public init(version: Int, entities: [EntitySchema]) throws(SchemaError) {
        self.version = version
        self.entities = entities
        self.indexByName = [:]
        var folded: [String: String] = [:]
        for (i, entity) in entities.enumerated() {
            guard self.indexByName[entity.name] == nil else {
                throw SchemaError(.duplicateName, "entity '\(entity.name)' is declared twice")
            }
            try Identifier.checkFolded(entity.name, "entity", in: &folded, what: "one table")
            self.indexByName[entity.name] = i
            try entity.validate()
        }
    }

    /// The entity with this name, or `nil`.
    public func entity(named name: String) -> EntitySchema? {
        self.indexByName[name].map { self.entities[$0] }
    }

    /// The entity with this name.
    ///
    /// - Throws: ``SchemaError`` with code `unknownEntity`, listing the entities that exist.
    public func requireEntity(_ name: String) throws(SchemaError) -> EntitySchema {
        guard let entity = self.entity(named: name) else {
            let known = self.entities.map(\.name).joined(separator: ", ")
            throw SchemaError(.unknownEntity, "unknown entity '\(name)' (the schema has: \(known))")
        }
        return entity
    }
}

// MARK: - Entity

/// How an entity's `id` is chosen.
public enum IDPolicy: String, Sendable, Hashable, CaseIterable {
    /// The client may supply an id; when it does not, the server generates one (a time-ordered UUID, version 7).
    case auto
    /// Every insert must supply an id.
    case client
}

/// One entity (a table): typed attributes, indexes and derived attributes.
///
/// Every entity also has an implicit, required string attribute `id`, its primary key.
public struct EntitySchema: Sendable, Hashable {
    /// The entity's name, an identifier (`[A-Za-z_][A-Za-z0-9_]*`).
    public var name: String
    /// The stored attributes, in declaration order (not including `id`).
    public private(set) var attributes: [Attribute]
    /// Secondary indexes.
    public var indexes: [Index]
    /// Attributes computed from others, such as a coordinate from latitude and longitude.
    public var derived: [DerivedAttribute]
    /// How ids are chosen on insert.
    public var idPolicy: IDPolicy
    private var attributeIndex: [String: Int]

    /// The name of the primary-key attribute every entity has.
    public static let idAttribute = "id"

    /// Creates an entity. Call ``validate()`` (``Schema/init(version:entities:)`` does) to check it.
    public init(
        name: String,
        attributes: [Attribute],
        indexes: [Index] = [],
        derived: [DerivedAttribute] = [],
        idPolicy: IDPolicy = .auto
    ) {
        self.name = name
        self.attributes = attributes
        self.indexes = indexes
        self.derived = derived
        self.idPolicy = idPolicy
        self.attributeIndex = [:]
        for (i, attribute) in attributes.enumerated() where self.attributeIndex[attribute.name] == nil {
            self.attributeIndex[attribute.name] = i
        }
    }

    /// The stored attribute with this name (not `id`), or `nil`.
    public func attribute(named name: String) -> Attribute? {
        self.attributeIndex[name].map { self.attributes[$0] }
    }

    /// The type of a queryable attribute, `id` included, or `nil` if there is none by that name.
    public func typeOfAttribute(named name: String) -> AttributeType? {
        if name == Self.idAttribute { return .string }
        return self.attribute(named: name)?.type
    }

    /// Whether `name` may be used in predicates and sort keys: `id` or a stored attribute.
    public func hasQueryableAttribute(_ name: String) -> Bool {
        name == Self.idAttribute || self.attributeIndex[name] != nil
    }

    /// The derived attribute with this name, or `nil`.
    public func derivedAttribute(named name: String) -> DerivedAttribute? {
        self.derived.first { $0.name == name }
    }

    /// Checks names, defaults, indexes and derived attributes.
    ///
    /// - Throws: ``SchemaError`` naming the entity and the attribute at fault.
    public func validate() throws(SchemaError) {
        guard Identifier.isValid(self.name) else {
            throw SchemaError(.invalidName, "entity name '\(self.name)' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)")
        }
        let lowered = self.name.lowercased()
        guard !lowered.hasPrefix("meridian_"), !lowered.hasPrefix("sqlite_") else {
            throw SchemaError(.invalidName, "entity name '\(self.name)' uses a reserved prefix (meridian_, sqlite_)")
        }
        var seen: Set<String> = []
        // SQLite's names ignore letter case: attributes, derived attributes and indexes differing only in it would be
        // one column or one index.
        var folded: [String: String] = [:]
        var foldedIndexes: [String: String] = [:]
        for attribute in self.attributes {
            guard Identifier.isValid(attribute.name) else {
                throw SchemaError(
                    .invalidName,
                    "\(self.name).\(attribute.name): attribute name is not an identifier ([A-Za-z_][A-Za-z0-9_]*)"
                )
            }
            guard !Identifier.isReserved(attribute.name) else {
                throw SchemaError(.invalidName, "\(self.name).\(attribute.name): '\(attribute.name)' is reserved")
            }
            guard seen.insert(attribute.name).inserted else {
                throw SchemaError(.duplicateName, "\(self.name).\(attribute.name): attribute is declared twice")
            }
            try Identifier.checkFolded(
                attribute.name, "\(self.name): attribute", in: &folded, what: "one column")
            if let value = attribute.defaultValue {
                guard value.isValid else {
                    throw SchemaError(.invalidDefault, "\(self.name).\(attribute.name): default is NaN")
                }
                guard value.isNull || value.type == attribute.type else {
                    throw SchemaError(
                        .invalidDefault,
                        "\(self.name).\(attribute.name): default \(value) is not a \(attribute.type.rawValue)"
                    )
                }
                guard !value.isNull || attribute.isOptional else {
                    throw SchemaError(
                        .invalidDefault,
                        "\(self.name).\(attribute.name): a required attribute cannot default to nil"
                    )
                }
            }
        }
        var indexNames: Set<String> = []
        for index in self.indexes {
            guard !index.attributes.isEmpty else {
                throw SchemaError(.invalidIndex, "\(self.name): index '\(index.name)' names no attribute")
            }
            guard indexNames.insert(index.name).inserted else {
                throw SchemaError(.duplicateName, "\(self.name): index '\(index.name)' is declared twice")
            }
            try Identifier.checkFolded(index.name, "\(self.name): index", in: &foldedIndexes, what: "one index")
            for name in index.attributes where !self.hasQueryableAttribute(name) {
                throw SchemaError(
                    .unknownAttribute, "\(self.name): index '\(index.name)' names unknown attribute '\(name)'")
            }
        }
        for derived in self.derived {
            guard Identifier.isValid(derived.name), !seen.contains(derived.name), derived.name != Self.idAttribute
            else {
                throw SchemaError(
                    .invalidName,
                    "\(self.name).\(derived.name): derived attribute name is not an identifier or clashes with an attribute"
                )
            }
            for dependency in derived.dependencies {
                guard let attribute = self.attribute(named: dependency) else {
                    throw SchemaError(
                        .unknownAttribute,
                        "\(self.name).\(derived.name): depends on unknown attribute '\(dependency)'"
                    )
                }
                if case .coordinate = derived.kind, attribute.type != .double, attribute.type != .int {
                    throw SchemaError(
                        .typeMismatch,
                        "\(self.name).\(derived.name): coordinate attribute '\(dependency)' must be double or int, not \(attribute.type.rawValue)"
                    )
                }
            }
        }
    }
}

// MARK: - Attribute

/// The type of a stored attribute.
public enum AttributeType: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case string, int, double, bool, bytes, timestamp

    public var description: String { self.rawValue }

    /// Whether `<`, `>`, `BETWEEN` and sorting apply (everything but `bool`).
    public var isOrdered: Bool { self != .bool }

    /// Whether values of the two types can be compared (int and double compare numerically).
    public func isComparable(with other: AttributeType) -> Bool {
        self == other || (self.isNumeric && other.isNumeric)
    }

    /// `int` or `double`.
    public var isNumeric: Bool { self == .int || self == .double }
}

/// A stored, typed attribute of an entity.
public struct Attribute: Sendable, Hashable {
    /// The attribute's name, an identifier.
    public var name: String
    /// The attribute's type.
    public var type: AttributeType
    /// Whether the attribute may be null.
    public var isOptional: Bool
    /// The value an insert gets when it does not give one; `nil` when there is none.
    public var defaultValue: Value?

    /// Creates an attribute.
    public init(name: String, type: AttributeType, isOptional: Bool = false, defaultValue: Value? = nil) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.defaultValue = defaultValue
    }

    /// Whether an insert must supply this attribute (required and without a default).
    public var isRequiredOnInsert: Bool {
        !self.isOptional && self.defaultValue == nil
    }
}

// MARK: - Index and derived attributes

/// A secondary index over one or more attributes.
public struct Index: Sendable, Hashable {
    /// The index's name, unique within its entity.
    public var name: String
    /// The indexed attributes, in order.
    public var attributes: [String]
    /// Whether the index enforces uniqueness.
    public var isUnique: Bool

    /// Creates an index; its default name joins the attribute names.
    public init(name: String? = nil, attributes: [String], isUnique: Bool = false) {
        self.name = name ?? attributes.joined(separator: "_")
        self.attributes = attributes
        self.isUnique = isUnique
    }
}

/// An attribute computed from stored attributes, which declares them as its dependencies.
///
/// A change to any dependency is reported as a change of the derived value; a change to nothing it depends on
/// is not.
public struct DerivedAttribute: Sendable, Hashable {
    /// What a derived attribute computes.
    public enum Kind: Sendable, Hashable {
        /// A geographic coordinate from a latitude and a longitude attribute (degrees).
        case coordinate(latitude: String, longitude: String)
    }

    /// The derived attribute's name.
    public var name: String
    /// What it computes.
    public var kind: Kind

    /// Creates a derived attribute.
    public init(name: String, kind: Kind) {
        self.name = name
        self.kind = kind
    }

    /// The stored attributes this value is computed from.
    public var dependencies: [String] {
        switch self.kind {
        case .coordinate(let latitude, let longitude): [latitude, longitude]
        }
    }
}

// MARK: - Identifiers

/// Rules for entity and attribute names.
package enum Identifier {
    /// Names that attributes may not take: the primary key, Meridian's bookkeeping columns and the predicate
    /// language's keywords.
    static let reserved: Set<String> = [
        "id", "and", "or", "not", "in", "between", "beginswith", "endswith", "contains", "like", "matches",
        "true", "false", "nil", "null", "truepredicate", "falsepredicate", "any", "all", "some", "none",
    ]

    /// Whether `name` matches `[A-Za-z_][A-Za-z0-9_]*`.
    package static func isValid(_ name: String) -> Bool {
        guard let first = name.utf8.first, isStart(first) else { return false }
        return name.utf8.allSatisfy { isStart($0) || ($0 >= 48 && $0 <= 57) }
    }

    /// Records `name` in `folded` (lowercased name → the name as declared), refusing one that differs from a name
    /// already there only in letter case: SQLite (and so the store) takes names case-insensitively, so the two would be
    /// `what` ("one table") — the file could not be prepared. `kind` starts the message ("entity", "Point: attribute").
    static func checkFolded(
        _ name: String, _ kind: String, in folded: inout [String: String], what: String
    ) throws(SchemaError) {
        let key = name.lowercased()
        if let other = folded[key], other != name {
            throw SchemaError(
                .duplicateName,
                "\(kind) '\(name)' differs from '\(other)' only in letter case: SQLite's names ignore case, so they "
                    + "would be \(what)")
        }
        folded[key] = name
    }

    /// Whether `name` is reserved (case-insensitively) or starts with Meridian's `_meridian`/`meridian_` prefix.
    package static func isReserved(_ name: String) -> Bool {
        let lower = name.lowercased()
        return reserved.contains(lower) || lower.hasPrefix("_meridian") || lower.hasPrefix("meridian_")
            || lower == "_version"
    }

    static func isStart(_ c: UInt8) -> Bool {
        (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 95
    }

}
