// MARK: - Operations and conflict policy

package import MeridianCore

/// A write operation as the wire carries it, in Core terms.
///
/// MeridianStore defines the real operation type (`WriteOperation`, whose `Kind` raw values are
/// ``Meridian_V1_Operation/Kind/name``); MeridianProto does not depend on the store, so the server converts this
/// tuple into it.
package typealias WireOperation = (
    kind: Meridian_V1_Operation.Kind, entity: String, id: String?, values: [String: Value], expectedVersion: Int64?
)

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
    package func decoded() throws(ProtoConversionError) -> WireOperation {
        switch self.kind {
        case .unspecified:
            throw ProtoConversionError(.unknownEnumValue, "operation kind is not set")
        case .UNRECOGNIZED(let raw):
            throw ProtoConversionError(.unknownEnumValue, "unknown operation kind \(raw)")
        case .insert, .update, .upsert, .delete:
            break
        }
        if self.kind != .insert, !self.hasID {
            throw ProtoConversionError(.invalidRequest, "\(self.kind.name) of \(self.entity) needs an id")
        }
        if self.kind == .delete, !self.values.isEmpty {
            throw ProtoConversionError(.invalidRequest, "delete of \(self.entity) must not carry values")
        }
        let values = try [String: Value](self.values)
        return (
            self.kind, self.entity, self.hasID ? self.id : nil, values,
            self.hasExpectedVersion ? self.expectedVersion : nil
        )
    }
}

extension Meridian_V1_Operation.Kind {
    /// The kind's lowercase name (`insert`, `update`, `upsert`, `delete`; `unspecified` otherwise), which is also
    /// the raw value of MeridianStore's `WriteOperation.Kind`.
    package var name: String {
        switch self {
        case .insert: "insert"
        case .update: "update"
        case .upsert: "upsert"
        case .delete: "delete"
        case .unspecified, .UNRECOGNIZED: "unspecified"
        }
    }

    /// The kind with this lowercase name, or `nil`.
    package init?(name: String) {
        switch name {
        case "insert": self = .insert
        case "update": self = .update
        case "upsert": self = .upsert
        case "delete": self = .delete
        default: return nil
        }
    }
}

extension Meridian_V1_ConflictPolicy {
    /// The policy in force: `UNSPECIFIED` is store wins, as the protocol says; the result is `.storeWins` or
    /// `.clientWins`.
    ///
    /// - Throws: ``ProtoConversionError`` with code `unknownEnumValue` for a value this build does not know.
    package func resolved() throws(ProtoConversionError) -> Meridian_V1_ConflictPolicy {
        switch self {
        case .unspecified, .storeWins: return .storeWins
        case .clientWins: return .clientWins
        case .UNRECOGNIZED(let raw):
            throw ProtoConversionError(.unknownEnumValue, "unknown conflict policy \(raw)")
        }
    }
}

extension Meridian_V1_ApplyRequest {
    /// The transaction's operations in Core terms.
    ///
    /// - Throws: ``ProtoConversionError`` prefixed with the index of the operation at fault (`operation 2: …`),
    ///   which ``ProtoConversionError/operationIndex`` also holds.
    package func decodedOperations() throws(ProtoConversionError) -> [WireOperation] {
        var out: [WireOperation] = []
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
