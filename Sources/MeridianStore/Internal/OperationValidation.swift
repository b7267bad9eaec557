// MARK: - OperationValidation

internal import Foundation
internal import MeridianCore

/// An operation checked against the schema, with its id resolved and its values converted to the attribute types.
struct PreparedOperation: Sendable {
    var index: Int
    var kind: WriteOperation.Kind
    var entity: EntitySchema
    var id: String
    /// The attribute names set, sorted, so that equal shapes share one cached statement.
    var columns: [String]
    /// The values, parallel to `columns`.
    var values: [Value]
    var expectedVersion: Int64?

    /// `operation 2 (update Item 'a')`, the prefix of every error about this operation.
    var label: String { OperationValidation.label(self.index, self.kind, self.entity.name, self.id) }
}

/// Checks operations against the schema before they reach SQLite.
enum OperationValidation {
    static func label(_ index: Int, _ kind: WriteOperation.Kind, _ entity: String, _ id: String?) -> String {
        "operation \(index) (\(kind.rawValue) \(entity)\(id.map { " '\($0)'" } ?? ""))"
    }

    /// The schema's entities with their attributes in the order prepared operations list them (by name), made once
    /// per store: most operations are valid, and for those, walking the entity's attributes in that order and
    /// looking each up among the operation's values spares sorting the values' names and looking each name up in
    /// the entity for every operation (a sixth of the CPU of a 1000-row insert, measured with perf). Anything
    /// unusual — an unknown entity or attribute, a value to reject, a missing id or required attribute — goes the
    /// general way, ``OperationValidation/prepare(_:index:schema:)``, which gives the same result or the error.
    struct Plan: Sendable {
        struct Entity: Sendable {
            var schema: EntitySchema
            /// The attributes sorted by name (UTF-8 order), as `PreparedOperation.columns` lists them.
            var byName: [Attribute]
            var names: [String]
            var requiredCount: Int
        }

        let schema: Schema
        let entities: [String: Entity]

        init(schema: Schema) {
            self.schema = schema
            var entities: [String: Entity] = [:]
            for entity in schema.entities {
                let byName = entity.attributes.sorted { $0.name.utf8Compare($1.name) < 0 }
                entities[entity.name] = Entity(
                    schema: entity, byName: byName, names: byName.map(\.name),
                    requiredCount: OperationValidation.requiredCount(entity))
            }
            self.entities = entities
        }

        func prepare(_ operations: [WriteOperation]) throws(StoreError) -> [PreparedOperation] {
            var out: [PreparedOperation] = []
            out.reserveCapacity(operations.count)
            for (index, operation) in operations.enumerated() {
                if let prepared = self.quick(operation, index: index) {
                    out.append(prepared)
                } else {
                    out.append(try OperationValidation.prepare(operation, index: index, schema: self.schema))
                }
            }
            return out
        }

        /// The prepared operation if it is valid and of the common shape, else `nil` (the general way decides).
        func quick(_ operation: WriteOperation, index: Int) -> PreparedOperation? {
            guard let entity = self.entities[operation.entity] else { return nil }
            if let given = operation.id {
                guard !given.utf8.contains(0) else { return nil }
            } else {
                guard operation.kind == .insert, entity.schema.idPolicy == .auto else { return nil }
            }
            // Generated only once the operation is accepted: one the general way would replace is not drawn.
            var id: String { operation.id ?? RandomID.uuidString() }
            if operation.kind == .delete {
                return PreparedOperation(
                    index: index, kind: .delete, entity: entity.schema, id: id, columns: [], values: [],
                    expectedVersion: operation.expectedVersion)
            }
            let given = operation.values
            var values: [Value] = []
            values.reserveCapacity(given.count)
            var found = 0
            var all = given.count == entity.byName.count
            var requiredGiven = 0
            for attribute in entity.byName {
                guard let value = given[attribute.name] else {
                    all = false
                    continue
                }
                found += 1
                switch (value, attribute.type) {
                case (.null, _):
                    guard attribute.isOptional else { return nil }
                    values.append(.null)
                    continue
                case (.string(let text), .string):
                    guard !text.utf8.contains(0) else { return nil }
                    values.append(value)
                case (.double(let d), .double):
                    guard !d.isNaN else { return nil }
                    values.append(value)
                case (.int(let i), .double):
                    values.append(.double(Double(i)))
                case (.int, .int), (.bool, .bool), (.bytes, .bytes), (.timestamp, .timestamp):
                    values.append(value)
                default:
                    return nil
                }
                if attribute.isRequiredOnInsert { requiredGiven += 1 }
            }
            guard found == given.count else { return nil }  // a name that is not an attribute
            if operation.kind == .insert, requiredGiven != entity.requiredCount { return nil }
            var columns: [String]
            if all {
                columns = entity.names  // shared storage: equal shapes compare by identity first
            } else {
                columns = []
                columns.reserveCapacity(found)
                for attribute in entity.byName where given[attribute.name] != nil { columns.append(attribute.name) }
            }
            return PreparedOperation(
                index: index, kind: operation.kind, entity: entity.schema, id: id, columns: columns, values: values,
                expectedVersion: operation.expectedVersion)
        }
    }

    static func prepare(_ operation: WriteOperation, index: Int, schema: Schema) throws(StoreError) -> PreparedOperation
    {
        // Built only for an error message: formatting it for every operation of a large transaction costs more than
        // the rest of the validation.
        var prefix: String { label(index, operation.kind, operation.entity, operation.id) }
        guard let entity = schema.entity(named: operation.entity) else {
            let known = schema.entities.map(\.name).joined(separator: ", ")
            throw StoreError(
                .validation, "\(prefix): unknown entity '\(operation.entity)' (the schema has: \(known))",
                operationIndex: index)
        }
        let id: String
        if let given = operation.id {
            guard !given.utf8.contains(0) else {
                throw StoreError(
                    .validation, "\(prefix): the id contains a NUL character (U+0000), which ids may not hold",
                    operationIndex: index, attributes: ["id"])
            }
            id = given
        } else if operation.kind == .insert, entity.idPolicy == .auto {
            id = RandomID.uuidString()
        } else {
            let why = operation.kind == .insert ? " (\(entity.name)'s id policy is 'client')" : ""
            throw StoreError(
                .validation, "\(prefix): an id is required\(why)", operationIndex: index, attributes: ["id"])
        }
        let names = operation.kind == .delete ? [] : operation.values.keys.sorted { $0.utf8Compare($1) < 0 }
        var values: [Value] = []
        values.reserveCapacity(names.count)
        var requiredGiven = 0
        for name in names {
            let value = operation.values[name]!
            guard let attribute = entity.attribute(named: name) else {
                let why =
                    name == EntitySchema.idAttribute
                    ? "'id' is not an attribute: set the operation's id instead" : "unknown attribute '\(name)'"
                throw StoreError(.validation, "\(prefix): \(why)", operationIndex: index, attributes: [name])
            }
            guard value.isValid else {
                throw StoreError(
                    .validation, "\(prefix): attribute '\(name)' is NaN", operationIndex: index, attributes: [name])
            }
            if case .string(let text) = value, text.utf8.contains(0) {
                // SQLite's text functions (LIKE, and the C strings custom functions receive) stop at a NUL, so the
                // same predicate could select such a row in memory and not in SQL.
                throw StoreError(
                    .validation,
                    "\(prefix): attribute '\(name)' contains a NUL character (U+0000), which strings may not hold",
                    operationIndex: index, attributes: [name])
            }
            if value.isNull {
                guard attribute.isOptional else {
                    throw StoreError(
                        .validation, "\(prefix): attribute '\(name)' is required and cannot be nil",
                        operationIndex: index,
                        attributes: [name])
                }
                values.append(.null)
                continue
            }
            if attribute.isRequiredOnInsert { requiredGiven += 1 }
            switch (value, attribute.type) {
            case (.int(let i), .double):
                values.append(.double(Double(i)))
            default:
                guard value.type == attribute.type else {
                    throw StoreError(
                        .validation,
                        "\(prefix): attribute '\(name)' is \(attribute.type.rawValue), got \(value.type!.rawValue) \(value)",
                        operationIndex: index, attributes: [name])
                }
                values.append(value)
            }
        }
        let prepared = PreparedOperation(
            index: index, kind: operation.kind, entity: entity, id: id, columns: names, values: values,
            expectedVersion: operation.expectedVersion)
        // The names are distinct attributes, so every required one is given when as many required ones were counted.
        if operation.kind == .insert, requiredGiven != requiredCount(entity) { try checkRequired(prepared) }
        return prepared
    }

    /// How many attributes an insert must supply.
    static func requiredCount(_ entity: EntitySchema) -> Int {
        var count = 0
        for attribute in entity.attributes where attribute.isRequiredOnInsert { count += 1 }
        return count
    }

    /// Checks that an insert (or an upsert that turns out to be one) gives every attribute that has no default.
    static func checkRequired(_ operation: PreparedOperation) throws(StoreError) {
        let given = Set(operation.columns)
        let missing = operation.entity.attributes.filter { $0.isRequiredOnInsert && !given.contains($0.name) }.map(
            \.name)
        guard missing.isEmpty else {
            let list = missing.map { "'\($0)'" }.joined(separator: ", ")
            throw StoreError(
                .validation,
                "\(operation.label): required attribute\(missing.count == 1 ? "" : "s") \(list) missing",
                operationIndex: operation.index, attributes: missing)
        }
    }
}
