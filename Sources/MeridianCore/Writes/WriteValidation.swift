// MARK: - WriteValidation
//
// The one set of rules a write must follow, and their messages. The client checks its writes with it before showing
// them (so that an optimistic row is never one the store will refuse), the CLI before it sends, and the store before
// SQLite (the server answers with the store's error, whose cause is the same `WriteError`). The store's quick path for
// common valid shapes (MeridianStore `OperationValidation.Plan`) only recognizes what this accepts, and defers to it
// for anything else.

/// Why a write is refused by the schema: the rule it breaks, in a message complete on its own, with the operation at
/// fault and the attributes involved.
///
/// Messages start with the operation (`operation 2 (update Point 'p1'): …`) and never list the schema's entities.
public struct WriteError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of rule broken. New codes may be added; switch with a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Wrapped: String, Sendable, Hashable {
            case validation, unknownEntity, unknownAttribute
        }

        let wrapped: Wrapped
        init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// A value does not fit its attribute, or the id or required attributes are missing or invalid.
        public static let validation = Code(.validation)
        /// The entity is not in the schema.
        public static let unknownEntity = Code(.unknownEntity)
        /// An attribute is not in the entity.
        public static let unknownAttribute = Code(.unknownAttribute)

        public var description: String { self.wrapped.rawValue }
    }

    /// The rule broken.
    public var code: Code
    /// What is wrong, naming the operation, the attribute and the value.
    public var message: String
    /// The 0-based index of the operation at fault in its transaction.
    public var operationIndex: Int
    /// The attributes involved (`id` for an id problem).
    public var attributes: [String]
    /// The entity the operation writes.
    public var entity: String
    /// The operation's id, if it has one.
    public var id: String?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, operationIndex: Int, attributes: [String] = [], entity: String,
        id: String? = nil
    ) {
        self.code = code
        self.message = message
        self.operationIndex = operationIndex
        self.attributes = attributes
        self.entity = entity
        self.id = id
    }

    public var description: String { "\(self.code): \"\(self.message)\"" }
}

/// An operation that passed ``Schema/validate(_:index:)``: its entity, and the attributes it sets with their values
/// converted to the attributes' types (an int written to a double attribute becomes that double).
public struct ValidatedWrite: Sendable, Hashable {
    /// The entity written.
    public var entity: EntitySchema
    /// The attribute names set (none for a delete), sorted by their UTF-8 bytes.
    public var columns: [String]
    /// The values, parallel to `columns`.
    public var values: [Value]
}

extension WriteOperation {
    /// `operation 2 (update Point 'p1')`, the prefix of every message about this operation.
    public func label(index: Int) -> String {
        "operation \(index) (\(self.kind.rawValue) \(self.entity)\(self.id.map { " '\($0)'" } ?? ""))"
    }
}

extension Schema {
    /// The largest integer magnitude every smaller integer of which a double holds exactly (2^53).
    static let exactDoubleLimit: Int64 = 1 << 53

    /// Checks an operation against the schema: the rules every layer applies to a write.
    ///
    /// - The entity exists; the id, when given, is not empty and holds no NUL; an update, upsert or delete has one,
    ///   and an insert has one unless the entity's id policy is `auto`.
    /// - Every attribute named exists (`id` is not an attribute); a delete names none.
    /// - Every value has its attribute's type — an int may be written to a double attribute when the double holds it
    ///   exactly (|i| ≤ 2^53) — is not NaN, holds no NUL in a string, and is null only for an optional attribute.
    ///   The values returned are as stored (``Value/stored``: a double −0.0 is 0.0).
    /// - An insert gives every attribute that is required and has no default (an update or upsert may not: an
    ///   upsert that turns out to insert is checked by the store, which knows).
    ///
    /// - Parameters:
    ///   - operation: The operation.
    ///   - index: Its index in the transaction (named in the message).
    /// - Returns: The entity and the converted values, sorted by attribute name.
    /// - Throws: ``WriteError``.
    public func validate(_ operation: WriteOperation, index: Int) throws(WriteError) -> ValidatedWrite {
        // Built only for an error message: formatting it for every operation of a large transaction costs more than
        // the rest of the validation.
        var prefix: String { operation.label(index: index) }
        func refuse(_ code: WriteError.Code, _ why: String, _ attributes: [String] = []) -> WriteError {
            WriteError(
                code, "\(prefix): \(why)", operationIndex: index, attributes: attributes, entity: operation.entity,
                id: operation.id)
        }
        guard let entity = self.entity(named: operation.entity) else {
            throw refuse(.unknownEntity, "unknown entity '\(operation.entity)'")
        }
        if let id = operation.id {
            guard !id.isEmpty else { throw refuse(.validation, "the id is empty", ["id"]) }
            guard !UTF8Bytes.containsNUL(id) else {
                throw refuse(.validation, "the id contains a NUL character (U+0000), which ids may not hold", ["id"])
            }
            guard id.isNormalizedID else {
                throw refuse(
                    .validation,
                    "the id is not in Unicode normalization form C (NFC): Swift compares strings by canonical "
                        + "equivalence, so ids that differ only in normalization would be one row to every client; "
                        + "write its NFC form", ["id"])
            }
        } else if operation.kind != .insert || entity.idPolicy != .auto {
            let why = operation.kind == .insert ? " (\(entity.name)'s id policy is 'client')" : ""
            throw refuse(.validation, "an id is required\(why)", ["id"])
        }
        if operation.kind == .delete, let name = operation.values.keys.min(by: { $0.utf8Compare($1) < 0 }) {
            throw refuse(.validation, "a delete sets no attributes (it sets '\(name)')", [name])
        }
        let names = operation.values.keys.sorted { $0.utf8Compare($1) < 0 }
        var values: [Value] = []
        values.reserveCapacity(names.count)
        var requiredGiven = 0
        for name in names {
            let value = operation.values[name]!
            guard let attribute = entity.attribute(named: name) else {
                let why =
                    name == EntitySchema.idAttribute
                    ? "'id' is not an attribute: set the operation's id instead" : "unknown attribute '\(name)'"
                throw refuse(.unknownAttribute, why, [name])
            }
            guard value.isValid else { throw refuse(.validation, "attribute '\(name)' is NaN", [name]) }
            if case .string(let text) = value, UTF8Bytes.containsNUL(text) {
                // SQLite's text functions (LIKE, and the C strings custom functions receive) stop at a NUL, so the
                // same predicate could select such a row in memory and not in SQL.
                throw refuse(
                    .validation, "attribute '\(name)' contains a NUL character (U+0000), which strings may not hold",
                    [name])
            }
            if value.isNull {
                guard attribute.isOptional else {
                    throw refuse(.validation, "attribute '\(name)' is required and cannot be nil", [name])
                }
                values.append(.null)
                continue
            }
            if attribute.isRequiredOnInsert { requiredGiven += 1 }
            switch (value, attribute.type) {
            case (.int(let i), .double):
                guard i.magnitude <= UInt64(Self.exactDoubleLimit) else {
                    throw refuse(
                        .validation,
                        "attribute '\(name)' is double, and \(i) is beyond what a double holds exactly (±2^53); "
                            + "write it as a double if rounding is meant", [name])
                }
                values.append(.double(Double(i)))
            default:
                guard value.type == attribute.type else {
                    throw refuse(
                        .validation,
                        "attribute '\(name)' is \(attribute.type.rawValue), got \(value.type!.rawValue) \(value)",
                        [name])
                }
                values.append(value.stored)
            }
        }
        // The names are distinct attributes, so every required one is given when as many required ones were counted.
        if operation.kind == .insert, requiredGiven != entity.requiredOnInsertCount {
            try entity.checkInsert(setting: names, operation, index: index)
        }
        return ValidatedWrite(entity: entity, columns: names, values: values)
    }
}

extension EntitySchema {
    /// Checks that a row inserted by `operation` (an insert, or an upsert that turns out to insert), setting the
    /// attributes `names`, gives every attribute that is required and has no default.
    ///
    /// - Throws: ``WriteError`` `validation`, naming the missing attributes.
    public func checkInsert(setting names: [String], _ operation: WriteOperation, index: Int) throws(WriteError) {
        let given = Set(names)
        let missing = self.attributes.filter { $0.isRequiredOnInsert && !given.contains($0.name) }.map(\.name)
        guard missing.isEmpty else {
            let list = missing.map { "'\($0)'" }.joined(separator: ", ")
            throw WriteError(
                .validation,
                "\(operation.label(index: index)): required attribute\(missing.count == 1 ? "" : "s") \(list) missing",
                operationIndex: index, attributes: missing, entity: operation.entity, id: operation.id)
        }
    }

    /// How many attributes an insert must give (required, without a default).
    public var requiredOnInsertCount: Int {
        var count = 0
        for attribute in self.attributes where attribute.isRequiredOnInsert { count += 1 }
        return count
    }
}
