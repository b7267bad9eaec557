// MARK: - The protocol's minor version

/// The minor versions of `meridian.v1` (`Hello.protocol_version`, `Welcome.protocol_version`).
///
/// - 0: before the field existed. A client applied each subscription's snapshot when its last chunk arrived, and held
///   what arrived after a reconnection until every re-added subscription had its answer.
/// - 1: the apply-on-Batch rule. A `SnapshotChunk` never changes what a client shows; a `Batch` does: it applies the
///   staged snapshots its deltas name (`SubscriptionDelta.snapshot`) and its deltas, as one step at its seq. Messages
///   about a subscription carry the epoch of the Subscribe that made it; Hello re-adds subscriptions as one group.
/// - 2: a Batch larger than `Hello.max_batch_bytes` comes in parts (`Batch.continued`), applied together.
package enum ProtocolVersion {
    /// The version this code speaks.
    package static let current: UInt32 = 2
    /// The first version whose clients take a Batch in parts.
    package static let batchParts: UInt32 = 2
    /// The lowest version a server serves: a client that announces less would misread the stream.
    package static let minimum: UInt32 = 1
}
