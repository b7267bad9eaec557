// MARK: - OperationValidation

internal import Foundation
internal import MeridianCore

/// An operation checked against the schema, with its id resolved and its values converted to the attribute types.
struct PreparedOperation: Sendable {
    var index: Int
    var kind: WriteOperation.Kind
    /// The entity, by reference: a prepared operation is copied into the transaction's array and out of it for each
    /// step, and an `EntitySchema` inline (five arrays and maps) made each copy retain and release all of them (a
    /// twentieth of the server's CPU in an import, perf).
    var shared: SharedEntity
    var entity: EntitySchema { self.shared.schema }
    var id: String
    /// The attribute names set, sorted, so that equal shapes share one cached statement.
    var columns: [String]
    /// The values, parallel to `columns`.
    var values: [Value]
    var expectedVersion: Int64?

    /// The operation as written (its values aside), to label errors about it.
    var operation: WriteOperation {
        WriteOperation(kind: self.kind, entity: self.entity.name, id: self.id, expectedVersion: self.expectedVersion)
    }

    /// `operation 2 (update Item 'a')`, the prefix of every error about this operation.
    var label: String { self.operation.label(index: self.index) }
}

/// An entity's schema held by reference, one per entity of a ``OperationValidation/Plan``.
final class SharedEntity: Sendable {
    let schema: EntitySchema

    init(_ schema: EntitySchema) { self.schema = schema }
}

/// Checks operations against the schema before they reach SQLite: MeridianCore's one validation
/// (`Schema.validate(_:index:)`), with a quick path for the common valid shapes.
enum OperationValidation {
    /// The schema's entities with their attributes in the order prepared operations list them (by name), made once
    /// per store: most operations are valid, and for those, walking the entity's attributes in that order and
    /// looking each up among the operation's values spares sorting the values' names and looking each name up in
    /// the entity for every operation (a sixth of the CPU of a 1000-row insert, measured with perf). Anything
    /// unusual — an unknown entity or attribute, a value to reject, a missing id or required attribute — goes the
    /// general way, ``OperationValidation/prepare(_:index:schema:)``, which gives the same result or the error.
    struct Plan: Sendable {
        struct Entity: Sendable {
            var shared: SharedEntity
            var schema: EntitySchema { self.shared.schema }
            /// The attributes sorted by name (UTF-8 order), as `PreparedOperation.columns` lists them.
            var byName: [Attribute]
            var names: [String]
            var requiredCount: Int
        }

        let schema: Schema
        let entities: [String: Entity]
        /// The largest row a write may leave (`Store.Configuration.maxRowBytes`).
        let maxRowBytes: Int?

        init(schema: Schema, maxRowBytes: Int? = nil) {
            self.schema = schema
            self.maxRowBytes = maxRowBytes
            var entities: [String: Entity] = [:]
            for entity in schema.entities {
                let byName = entity.attributes.sorted { $0.name.utf8Compare($1.name) < 0 }
                entities[entity.name] = Entity(
                    shared: SharedEntity(entity), byName: byName, names: byName.map(\.name),
                    requiredCount: OperationValidation.requiredCount(entity))
            }
            self.entities = entities
        }

        func prepare(_ operations: [WriteOperation]) throws(StoreError) -> [PreparedOperation] {
            var out: [PreparedOperation] = []
            out.reserveCapacity(operations.count)
            var positions = Positions()
            for (index, operation) in operations.enumerated() {
                if let prepared = self.quick(operation, index: index, positions: &positions) {
                    out.append(prepared)
                } else {
                    out.append(try OperationValidation.prepare(operation, index: index, schema: self.schema))
                }
            }
            if let limit = self.maxRowBytes {
                // The values written are part of the row they leave: more than the limit is too large whatever the
                // row held (an update's whole row is measured when it runs, TransactionExecutor.checkSize).
                // (An upsert that inserts is measured with its defaults when it runs, TransactionExecutor.run.)
                for op in out where op.kind != .delete {
                    let size =
                        op.kind == .insert
                        ? OperationValidation.insertedSize(op)
                        : RowSize.of(id: op.id, names: op.columns, values: op.values)
                    try OperationValidation.checkRowSize(size, of: op, limit: limit)
                }
            }
            return out
        }

        /// Where the attributes of an entity (in `byName` order) are in a layout of operations' values, `-1` for one
        /// the layout does not name: worked out once for the operations of a request that share a layout.
        struct Positions {
            var layout: RowLayout?
            var entity = ""
            var positions: [Int] = []

            mutating func of(_ layout: RowLayout, in entity: Entity) -> [Int] {
                if self.layout !== layout || self.entity != entity.schema.name {
                    self.layout = layout
                    self.entity = entity.schema.name
                    self.positions = entity.byName.map { layout.position(of: $0.name) ?? -1 }
                }
                return self.positions
            }
        }

        /// The prepared operation if it is valid and of the common shape, else `nil` (the general way decides);
        /// `positions` carries the previous operation's layout over to this one.
        func quick(_ operation: WriteOperation, index: Int, positions: inout Positions) -> PreparedOperation? {
            guard let entity = self.entities[operation.entity] else { return nil }
            if let given = operation.id {
                guard !given.isEmpty, !UTF8Bytes.containsNUL(given), given.isNormalizedID else { return nil }
            } else {
                guard operation.kind == .insert, entity.schema.idPolicy == .auto else { return nil }
            }
            // Generated only once the operation is accepted: one the general way would replace is not drawn.
            var id: String { operation.id ?? RandomID.uuidString() }
            if operation.kind == .delete {
                guard operation.valueCount == 0 else { return nil }
                return PreparedOperation(
                    index: index, kind: .delete, shared: entity.shared, id: id, columns: [], values: [],
                    expectedVersion: operation.expectedVersion)
            }
            var checked: PreparedOperation?
            _ = operation.readCompactValues { layout, given in
                let at = positions.of(layout, in: entity)
                checked = self.check(operation, index: index, entity: entity, id: id, count: given.count) { i in
                    // Not `nil`: `Value` is expressible by `nil`, which would read as a value set to null.
                    at[i] < 0 ? Value?.none : given[at[i]]
                }
            }
            if let checked { return checked }
            let given = operation.values
            return self.check(operation, index: index, entity: entity, id: id, count: given.count) { i in
                given[entity.byName[i].name]
            }
        }

        /// The prepared operation if its `count` values, `given(i)` the one for the `i`-th attribute of
        /// `entity.byName` (`nil` for one not set), are valid and of the common shape, else `nil`.
        @inline(__always)
        private func check(
            _ operation: WriteOperation, index: Int, entity: Entity, id: @autoclosure () -> String, count: Int,
            given: (Int) -> Value?
        ) -> PreparedOperation? {
            var values: [Value] = []
            values.reserveCapacity(count)
            var found = 0
            var all = count == entity.byName.count
            var requiredGiven = 0
            var set: [Bool] = []
            for (i, attribute) in entity.byName.enumerated() {
                guard let value = given(i) else {
                    if all {
                        all = false
                        set = Array(repeating: true, count: i)
                    }
                    set.append(false)
                    continue
                }
                if !all { set.append(true) }
                found += 1
                switch (value, attribute.type) {
                case (.null, _):
                    guard attribute.isOptional else { return nil }
                    values.append(.null)
                    continue
                case (.string(let text), .string):
                    guard !UTF8Bytes.containsNUL(text) else { return nil }
                    values.append(value)
                case (.double(let d), .double):
                    guard !d.isNaN else { return nil }
                    values.append(value.stored)
                case (.int(let i), .double):
                    guard i.magnitude <= 1 << 53 else { return nil }  // not exactly a double: refused in Core
                    values.append(.double(Double(i)))
                case (.int, .int), (.bool, .bool), (.bytes, .bytes), (.timestamp, .timestamp):
                    values.append(value)
                default:
                    return nil
                }
                if attribute.isRequiredOnInsert { requiredGiven += 1 }
            }
            guard found == count else { return nil }  // a name that is not an attribute
            if operation.kind == .insert, requiredGiven != entity.requiredCount { return nil }
            var columns: [String]
            if all {
                columns = entity.names  // shared storage: equal shapes compare by identity first
            } else {
                columns = []
                columns.reserveCapacity(found)
                for (i, attribute) in entity.byName.enumerated() where set[i] { columns.append(attribute.name) }
            }
            return PreparedOperation(
                index: index, kind: operation.kind, shared: entity.shared, id: id(), columns: columns, values: values,
                expectedVersion: operation.expectedVersion)
        }
    }

    /// The general way: MeridianCore's validation, its error as a `validation` store error whose cause is the
    /// ``WriteError`` (the server answers with its code).
    static func prepare(_ operation: WriteOperation, index: Int, schema: Schema) throws(StoreError) -> PreparedOperation
    {
        let validated: ValidatedWrite
        do {
            validated = try schema.validate(operation, index: index)
        } catch {
            throw StoreError(error)
        }
        return PreparedOperation(
            index: index, kind: operation.kind, shared: SharedEntity(validated.entity),
            id: operation.id ?? RandomID.uuidString(), columns: validated.columns, values: validated.values,
            expectedVersion: operation.expectedVersion)
    }

    /// How many attributes an insert must supply.
    /// The size of the row an insert leaves: its values, and the defaults of the attributes it does not set.
    static func insertedSize(_ op: PreparedOperation) -> Int {
        var size = RowSize.of(id: op.id, names: op.columns, values: op.values)
        for attribute in op.entity.attributes {
            guard let value = attribute.defaultValue, !op.columns.contains(attribute.name) else { continue }
            size += attribute.name.utf8.count + value.sizeInRow
        }
        return size
    }

    /// Refuses a write whose row would be `size` bytes, when that is more than the store's bound.
    static func checkRowSize(_ size: Int, of op: PreparedOperation, limit: Int) throws(StoreError) {
        guard size > limit else { return }
        throw StoreError(
            .tooLarge, "\(op.label): the row would be \(size) bytes; at most \(limit) are allowed",
            operationIndex: op.index)
    }

    static func requiredCount(_ entity: EntitySchema) -> Int {
        entity.requiredOnInsertCount
    }

    /// Checks that an insert (or an upsert that turns out to be one) gives every attribute that has no default.
    static func checkRequired(_ operation: PreparedOperation) throws(StoreError) {
        do {
            try operation.entity.checkInsert(setting: operation.columns, operation.operation, index: operation.index)
        } catch {
            throw StoreError(error)
        }
    }
}

extension StoreError {
    /// A write the schema refuses: `validation`, with the operation and attributes, caused by `error`.
    init(_ error: WriteError) {
        self.init(
            .validation, error.message, operationIndex: error.operationIndex, attributes: error.attributes, cause: error
        )
    }
}
