// MARK: - Transactions for the wire

internal import MeridianCore
internal import MeridianProto

extension Meridian_V1_ApplyRequest {
    /// A transaction of the given operations (MeridianCore's, as every command builds them), store wins.
    init(_ operations: [WriteOperation]) {
        self.init()
        self.operations = operations.map(Meridian_V1_Operation.init)
        self.conflictPolicy = .storeWins
    }
}
