// MARK: - WriteOperation
//
// The write vocabulary every layer speaks: the client's overlay and queue, the CLI's commands, the wire conversions
// (MeridianProto) and the store. One spelling per concept, checked by one validation (WriteValidation.swift).

/// One write in a transaction: an insert, an update of the given attributes, an upsert or a delete.
///
/// (Named `WriteOperation`, not `Operation`, so that it does not clash with Foundation's `Operation` in code that
/// imports both.)
///
/// ```swift
/// let result = try await store.apply([
///     .insert("Item", id: "a", ["title": "Pen", "price": 2.5]),
///     .update("Item", id: "b", ["price": 3.0], expectedVersion: 4),
///     .delete("Item", id: "c"),
/// ], policy: .storeWins)
/// ```
public struct WriteOperation: Sendable, Hashable {
    /// What the operation does.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Create a row; fails with `alreadyExists` if the id is taken.
        case insert
        /// Change the given attributes of an existing row; fails with `notFound` if there is none.
        case update
        /// Update the row if it exists, else insert it.
        case upsert
        /// Remove a row; fails with `notFound` if there is none.
        case delete
    }

    /// What the operation does.
    public var kind: Kind
    /// The entity written.
    public var entity: String
    /// The row's id; may be `nil` only for an insert into an entity whose id policy is `auto`.
    public var id: String?
    /// The attributes to set (all of them for an insert, only the changed ones for an update).
    public var values: [String: Value]
    /// The row version the writer last saw; a different current version is a conflict unless resolved.
    public var expectedVersion: Int64?

    /// Creates an operation.
    public init(
        kind: Kind, entity: String, id: String? = nil, values: [String: Value] = [:], expectedVersion: Int64? = nil
    ) {
        self.kind = kind
        self.entity = entity
        self.id = id
        self.values = values
        self.expectedVersion = expectedVersion
    }

    /// An insert; without an id, the store generates one (a time-ordered UUID) if the entity's id policy is `auto`.
    public static func insert(_ entity: String, id: String? = nil, _ values: [String: Value]) -> Self {
        Self(kind: .insert, entity: entity, id: id, values: values)
    }

    /// An update of only the given attributes.
    public static func update(
        _ entity: String, id: String, _ values: [String: Value], expectedVersion: Int64? = nil
    ) -> Self {
        Self(kind: .update, entity: entity, id: id, values: values, expectedVersion: expectedVersion)
    }

    /// An update if the row exists, else an insert.
    public static func upsert(
        _ entity: String, id: String, _ values: [String: Value], expectedVersion: Int64? = nil
    ) -> Self {
        Self(kind: .upsert, entity: entity, id: id, values: values, expectedVersion: expectedVersion)
    }

    /// A delete.
    public static func delete(_ entity: String, id: String, expectedVersion: Int64? = nil) -> Self {
        Self(kind: .delete, entity: entity, id: id, expectedVersion: expectedVersion)
    }
}

// MARK: - ConflictPolicy

/// What happens when an operation's expected version is not the row's current version.
///
/// The conflict is decided property by property: the conflicting attributes are those the operation sets that other
/// writes changed after the expected version. Writes to different attributes never conflict, so concurrent edits
/// of different attributes both survive under either policy.
public enum ConflictPolicy: String, Sendable, Hashable {
    /// Reject the transaction with `StoreError.Code.conflict`, listing the conflicting attributes.
    case storeWins
    /// Apply the operation: the writer's attributes overwrite.
    case clientWins
}

// MARK: - CommitResult

/// The result of a committed transaction.
public struct CommitResult: Sendable, Hashable {
    /// One written row.
    public struct WrittenRow: Sendable, Hashable {
        /// The entity.
        public var entity: String
        /// The row's id (generated, for an insert without one).
        public var id: String
        /// What was done (an upsert reports `insert` or `update`).
        public var kind: WriteOperation.Kind
        /// The row's version after the write (for a delete, the version of the deletion in the log).
        public var version: Int64

        /// Creates a written-row record.
        public init(entity: String, id: String, kind: WriteOperation.Kind, version: Int64) {
            self.entity = entity
            self.id = id
            self.kind = kind
            self.version = version
        }
    }

    /// The sequence number of the SQLite commit the transaction was part of (the last `seq` of that commit).
    public var seq: Int64
    /// The written rows, in operation order.
    public var rows: [WrittenRow]

    /// Creates a result.
    public init(seq: Int64, rows: [WrittenRow]) {
        self.seq = seq
        self.rows = rows
    }
}
