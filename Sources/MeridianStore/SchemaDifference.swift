// MARK: - SchemaDifference

internal import MeridianCore

/// One difference between the schema recorded in a store file and the schema a store is opened with.
///
/// Additive differences (a new entity, a new optional attribute or one with a default, a new index, a changed id
/// policy) are migrated automatically when the store opens. Every other difference refuses the open, and
/// ``advice`` says what to do instead.
public struct SchemaDifference: Sendable, Hashable, CustomStringConvertible {
    /// What changed; compare with the static members (`SchemaDifference.Kind.typeChanged`).
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Wrapped: String, Sendable, Hashable {
            case entityAdded, entityRemoved, attributeAdded, attributeRemoved, typeChanged, optionalityChanged
            case defaultChanged, indexAdded, indexRemoved, indexChanged, idPolicyChanged
        }

        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// A new entity (additive).
        public static let entityAdded = Kind(.entityAdded)
        /// An entity the file has is missing from the schema.
        public static let entityRemoved = Kind(.entityRemoved)
        /// A new attribute (additive when optional or with a default).
        public static let attributeAdded = Kind(.attributeAdded)
        /// An attribute the file has is missing from the schema (a rename is a removal plus an addition).
        public static let attributeRemoved = Kind(.attributeRemoved)
        /// An attribute's type changed.
        public static let typeChanged = Kind(.typeChanged)
        /// An attribute became required or optional.
        public static let optionalityChanged = Kind(.optionalityChanged)
        /// An attribute's default value changed.
        public static let defaultChanged = Kind(.defaultChanged)
        /// A new index (additive).
        public static let indexAdded = Kind(.indexAdded)
        /// An index the file has is missing from the schema.
        public static let indexRemoved = Kind(.indexRemoved)
        /// An index's attributes or uniqueness changed.
        public static let indexChanged = Kind(.indexChanged)
        /// An entity's id policy changed (additive: it is checked by the store, not by SQLite).
        public static let idPolicyChanged = Kind(.idPolicyChanged)

        public var description: String { self.wrapped.rawValue }
    }

    /// What changed.
    public var kind: Kind
    /// The entity concerned.
    public var entity: String
    /// The attribute or index concerned, if any.
    public var member: String?
    /// What changed, in words, e.g. `Item.price: type changed from int to double`.
    public var summary: String
    /// Whether the store migrates this difference itself.
    public var isAdditive: Bool
    /// What to do about a refused difference; `nil` for additive ones.
    public var advice: String?

    /// Creates a difference.
    public init(kind: Kind, entity: String, member: String?, summary: String, isAdditive: Bool, advice: String?) {
        self.kind = kind
        self.entity = entity
        self.member = member
        self.summary = summary
        self.isAdditive = isAdditive
        self.advice = advice
    }

    /// The summary, followed by the advice for a refused difference.
    public var description: String {
        guard let advice = self.advice else { return self.summary }
        return "\(self.summary); \(advice)"
    }
}

// MARK: - MigrationCheck

/// What opening a store file with a schema would do, answered without opening the file for writing.
public struct MigrationCheck: Sendable, Hashable {
    /// Whether a store file exists at the path (if not, opening creates one).
    public var storeExists: Bool
    /// The schema version recorded in the file.
    public var storedVersion: Int?
    /// The schema fingerprint recorded in the file.
    public var storedFingerprint: String?
    /// The differences between the file's schema and the given one, in schema order.
    public var differences: [SchemaDifference]

    /// Creates a check result.
    public init(storeExists: Bool, storedVersion: Int?, storedFingerprint: String?, differences: [SchemaDifference]) {
        self.storeExists = storeExists
        self.storedVersion = storedVersion
        self.storedFingerprint = storedFingerprint
        self.differences = differences
    }

    /// Whether opening would change the file's schema.
    public var needsMigration: Bool { !self.differences.isEmpty }
    /// Whether every difference is migrated automatically (true when there are none).
    public var isAdditive: Bool { self.differences.allSatisfy(\.isAdditive) }
}
