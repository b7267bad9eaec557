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
///
/// An operation read from the wire or from a file keeps its values compactly, one per name of a ``RowLayout`` that
/// the operations read with it share (a `.null` there is an explicit null, as in the dictionary), instead of a
/// dictionary of its own: the server, the CLI and the client library's encoder read them in place, and hashing
/// every name into a dictionary per row was a good part of decoding and validating an `Apply` (perf). Reading
/// `values` then builds the dictionary; how an operation keeps its values never shows in its behaviour (equality
/// and hashing are by content).
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
    public var values: [String: Value] {
        get {
            if let compact = self.compact { return Self.dictionary(of: compact) }
            return self.dictionary
        }
        set {
            self.dictionary = newValue
            self.compact = nil
        }
        _modify {
            if let compact = self.compact {
                self.dictionary = Self.dictionary(of: compact)
                self.compact = nil
            }
            yield &self.dictionary
        }
    }
    /// The values by name when `compact` is nil; empty otherwise.
    private var dictionary: [String: Value]
    /// The compact form: one value per name of the buffer's layout, each set (`.null` an explicit null); nil for an
    /// operation kept in `dictionary`. (`nonisolated(unsafe)`: a buffer is never written once shared, as `Row`'s.)
    nonisolated(unsafe) private var compact: RowValueBuffer?
    /// The row version the writer last saw; a different current version is a conflict unless resolved.
    public var expectedVersion: Int64?

    /// Creates an operation.
    public init(
        kind: Kind, entity: String, id: String? = nil, values: [String: Value] = [:], expectedVersion: Int64? = nil
    ) {
        self.kind = kind
        self.entity = entity
        self.id = id
        self.dictionary = values
        self.compact = nil
        self.expectedVersion = expectedVersion
    }

    /// Creates an operation setting each name of `layout` to the value at its position (`.null`: to null).
    package init(
        kind: Kind, entity: String, id: String?, layout: RowLayout, values: UnsafeBufferPointer<Value>,
        expectedVersion: Int64? = nil
    ) {
        self.kind = kind
        self.entity = entity
        self.id = id
        self.dictionary = [:]
        self.compact = layout.count == 0 ? nil : RowValueBuffer.make(layout, values)
        self.expectedVersion = expectedVersion
    }

    private static func dictionary(of buffer: RowValueBuffer) -> [String: Value] {
        let names = buffer.layout.names
        var dictionary = [String: Value](minimumCapacity: names.count)
        buffer.forEachValue { i, value in dictionary[names[i]] = value }
        return dictionary
    }

    /// The number of attributes set (`values.count`).
    package var valueCount: Int {
        if let compact = self.compact { return compact.layout.count }
        return self.dictionary.count
    }

    /// Calls `body` with each attribute set and its value (`.null` for one set to null), in no particular order.
    @inline(__always)
    package func forEachValue(_ body: (String, Value) throws -> Void) rethrows {
        if let compact = self.compact {
            let names = compact.layout.names
            try compact.forEachValue { i, value in try body(names[i], value) }
        } else {
            for (name, value) in self.dictionary { try body(name, value) }
        }
    }

    /// The compact form's layout and values, or `nil` for an operation that keeps a dictionary.
    @inline(__always)
    package func withCompactValues<R>(_ body: (RowLayout, UnsafeBufferPointer<Value>) throws -> R) rethrows -> R? {
        guard let compact = self.compact else { return nil }
        return try compact.withValues { try body(compact.layout, $0) }
    }

    /// ``withCompactValues(_:)`` for the store's validation, which runs in another module: not generic, because a
    /// generic function that is not inlinable runs unspecialized there and instantiated its generic metadata at
    /// every call (a tenth of the store's quick validation of a write, perf). `false`, without calling `body`, for an
    /// operation that keeps a dictionary.
    package func readCompactValues(_ body: (RowLayout, UnsafeBufferPointer<Value>) -> Void) -> Bool {
        guard let compact = self.compact else { return false }
        compact.withValues { body(compact.layout, $0) }
        return true
    }

    /// The value set for `name`, or `nil` when the operation does not set it.
    package func value(named name: String) -> Value? {
        if let compact = self.compact {
            guard let position = compact.layout.position(of: name) else { return nil }
            return compact[position]
        }
        return self.dictionary[name]
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        guard lhs.kind == rhs.kind, lhs.entity == rhs.entity, lhs.id == rhs.id,
            lhs.expectedVersion == rhs.expectedVersion, lhs.valueCount == rhs.valueCount
        else { return false }
        if let a = lhs.compact, let b = rhs.compact, a.layout === b.layout || a.layout.names == b.layout.names {
            return a === b || a.withValues { a in b.withValues { b in a.elementsEqual(b) } }
        }
        var equal = true
        lhs.forEachValue { name, value in
            if equal, rhs.value(named: name) != value { equal = false }
        }
        return equal
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.kind)
        hasher.combine(self.entity)
        hasher.combine(self.id)
        hasher.combine(self.expectedVersion)
        // Order-independent, as the values' names come in no particular order.
        var combined = 0
        self.forEachValue { name, value in
            var element = hasher
            element.combine(name)
            element.combine(value)
            combined ^= element.finalize()
        }
        hasher.combine(combined)
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

extension WriteOperation: CustomReflectable {
    /// The operation's kind, entity, id, values (by name, however it keeps them) and expected version: what its
    /// description and `dump` show.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "kind": self.kind, "entity": self.entity, "id": self.id as Any, "values": self.values,
                "expectedVersion": self.expectedVersion as Any,
            ],
            displayStyle: .struct)
    }
}
