// MARK: - WriteOperation

internal import MeridianCore
internal import MeridianProto

/// One write of a transaction, as the CLI builds it before sending: what `insert`, `update`, `upsert`, `delete`,
/// `apply` and `import` produce.
struct WriteOperation: Sendable, Equatable {
    /// What an operation does.
    enum Kind: String, Sendable, CaseIterable {
        case insert, update, upsert, delete

        var wire: Meridian_V1_Operation.Kind {
            switch self {
            case .insert: .insert
            case .update: .update
            case .upsert: .upsert
            case .delete: .delete
            }
        }
    }

    var kind: Kind
    var entity: String
    var id: String?
    var values: [String: Value]
    var expectedVersion: Int64?

    init(_ kind: Kind, entity: String, id: String? = nil, values: [String: Value] = [:], expectedVersion: Int64? = nil)
    {
        self.kind = kind
        self.entity = entity
        self.id = id
        self.values = values
        self.expectedVersion = expectedVersion
    }

    /// The operation on the wire.
    var wire: Meridian_V1_Operation {
        Meridian_V1_Operation(
            kind: self.kind.wire, entity: self.entity, id: self.id, values: self.values,
            expectedVersion: self.expectedVersion)
    }
}

extension Meridian_V1_ApplyRequest {
    /// A transaction of the given operations, store wins.
    init(_ operations: [WriteOperation]) {
        self.init()
        self.operations = operations.map(\.wire)
        self.conflictPolicy = .storeWins
    }
}
