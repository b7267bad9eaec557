// MARK: - Operations and conflict policy

package import MeridianCore

extension Meridian_V1_Operation {
    /// An operation for the wire.
    package init(
        kind: Kind,
        entity: String,
        id: String? = nil,
        values: [String: Value] = [:],
        expectedVersion: Int64? = nil
    ) {
        self.init()
        self.kind = kind
        self.entity = entity
        if let id { self.id = id }
        self.values = [String: Meridian_V1_Value](values)
        if let expectedVersion { self.expectedVersion = expectedVersion }
    }

    /// The operation in Core terms, checked for the shape every operation must have.
    ///
    /// Checks only what needs no schema: the kind is known, an update, upsert or delete has an id, a delete has no
    /// values, and no value is NaN. Whether an insert may omit its id depends on the entity's id policy; the store
    /// decides.
    ///
    /// - Throws: ``ProtoConversionError``: `unknownEnumValue`, `invalidRequest` or `invalidValue`.
    package func decoded() throws(ProtoConversionError) -> WriteOperation {
        let kind = try WriteOperation.Kind(self.kind)
        if kind != .insert, !self.hasID {
            throw ProtoConversionError(.invalidRequest, "\(kind.rawValue) of \(self.entity) needs an id")
        }
        if kind == .delete, !self.values.isEmpty {
            throw ProtoConversionError(.invalidRequest, "delete of \(self.entity) must not carry values")
        }
        return WriteOperation(
            kind: kind, entity: self.entity, id: self.hasID ? self.id : nil, values: try [String: Value](self.values),
            expectedVersion: self.hasExpectedVersion ? self.expectedVersion : nil)
    }

    /// An operation for the wire, from Core's.
    package init(_ operation: WriteOperation) {
        self.init(
            kind: Kind(operation.kind), entity: operation.entity, id: operation.id, values: operation.values,
            expectedVersion: operation.expectedVersion)
    }
}

extension Meridian_V1_Operation.Kind {
    /// The wire's kind for Core's.
    package init(_ kind: WriteOperation.Kind) {
        switch kind {
        case .insert: self = .insert
        case .update: self = .update
        case .upsert: self = .upsert
        case .delete: self = .delete
        }
    }
}

extension WriteOperation.Kind {
    /// Core's kind for the wire's.
    ///
    /// - Throws: ``ProtoConversionError`` `unknownEnumValue` when it is not set or unknown to this build.
    package init(_ kind: Meridian_V1_Operation.Kind) throws(ProtoConversionError) {
        switch kind {
        case .insert: self = .insert
        case .update: self = .update
        case .upsert: self = .upsert
        case .delete: self = .delete
        case .unspecified: throw ProtoConversionError(.unknownEnumValue, "operation kind is not set")
        case .UNRECOGNIZED(let raw): throw ProtoConversionError(.unknownEnumValue, "unknown operation kind \(raw)")
        }
    }
}

extension ConflictPolicy {
    /// Core's policy for the wire's: `UNSPECIFIED` is store wins, as the protocol says.
    ///
    /// - Throws: ``ProtoConversionError`` with code `unknownEnumValue` for a value this build does not know.
    package init(_ policy: Meridian_V1_ConflictPolicy) throws(ProtoConversionError) {
        switch policy {
        case .unspecified, .storeWins: self = .storeWins
        case .clientWins: self = .clientWins
        case .UNRECOGNIZED(let raw):
            throw ProtoConversionError(.unknownEnumValue, "unknown conflict policy \(raw)")
        }
    }
}

extension Meridian_V1_ConflictPolicy {
    /// The wire's policy for Core's.
    package init(_ policy: ConflictPolicy) {
        switch policy {
        case .storeWins: self = .storeWins
        case .clientWins: self = .clientWins
        }
    }
}

extension Meridian_V1_WrittenRow {
    /// What an operation wrote, for the wire.
    package init(_ row: CommitResult.WrittenRow) {
        self.init()
        self.entity = row.entity
        self.id = row.id
        self.version = row.version
        self.kind = Meridian_V1_Operation.Kind(row.kind)
    }
}

extension CommitResult {
    /// Core's form of a commit the server answered with.
    ///
    /// - Throws: ``ProtoConversionError`` `unknownEnumValue` for a written row whose kind is unset or unknown.
    package init(_ result: Meridian_V1_ApplyResult) throws(ProtoConversionError) {
        var rows: [CommitResult.WrittenRow] = []
        rows.reserveCapacity(result.rows.count)
        for (i, row) in result.rows.enumerated() {
            do {
                rows.append(
                    CommitResult.WrittenRow(
                        entity: row.entity, id: row.id, kind: try WriteOperation.Kind(row.kind), version: row.version))
            } catch {
                throw error.within("written row \(i)")
            }
        }
        self.init(seq: result.seq, rows: rows)
    }
}

extension Meridian_V1_ApplyRequest {
    /// A transaction of Core operations.
    ///
    /// - Parameters:
    ///   - operations: The operations, committed together or not at all.
    ///   - policy: How conflicts with concurrent changes are settled.
    ///   - idempotencyKey: A key that makes a retry answer the first commit instead of applying again ("" for none).
    package init(_ operations: [WriteOperation], policy: ConflictPolicy = .storeWins, idempotencyKey: String = "") {
        self.init()
        self.operations = operations.map(Meridian_V1_Operation.init)
        self.conflictPolicy = Meridian_V1_ConflictPolicy(policy)
        self.idempotencyKey = idempotencyKey
    }

    /// The transaction's operations in Core terms.
    ///
    /// - Throws: ``ProtoConversionError`` prefixed with the index of the operation at fault (`operation 2: …`),
    ///   which ``ProtoConversionError/operationIndex`` also holds.
    package func decodedOperations() throws(ProtoConversionError) -> [WriteOperation] {
        var out: [WriteOperation] = []
        out.reserveCapacity(self.operations.count)
        for (i, operation) in self.operations.enumerated() {
            do {
                out.append(try operation.decoded())
            } catch {
                var wrapped = error.within("operation \(i)")
                wrapped.operationIndex = i
                throw wrapped
            }
        }
        return out
    }
}
