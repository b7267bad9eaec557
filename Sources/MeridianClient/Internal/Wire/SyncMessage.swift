// MARK: - SyncMessage: what the Sync stream's deserializer hands the connection
//
// Snapshot chunks and batches carry the rows: their rows are read straight into Core rows where the message arrives
// (`SyncResponseWireDecoding.coreSnapshotChunk` and `coreBatch`), one map per row, instead of the generated message's
// map and then Core's. Every other message — and one with anything unusual — is the generated message, converted by
// `SyncEvent.init(_:)` as before, which also says what is wrong with it.

internal import GRPCCore
internal import MeridianCore
internal import MeridianProto

/// One message of the Sync stream, decoded.
enum SyncMessage: Sendable {
    /// A snapshot chunk or a batch already in domain terms.
    case event(SyncEvent)
    /// Any other message, to convert.
    case response(Meridian_V1_SyncResponse)
}

/// The Sync stream's deserializer: snapshot chunks and batches straight to ``SyncEvent``, the rest as generated
/// messages (``SyncResponseDeserializer``).
struct SyncMessageDeserializer: MessageDeserializer {
    func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> SyncMessage {
        let chunk = serializedMessageBytes.withUnsafeBytes { bytes in
            SyncResponseWireDecoding.coreSnapshotChunk(bytes, makeRow: VersionedRow.init(row:version:))
        }
        if let (chunk, rows) = chunk {
            return .event(
                .snapshotChunk(
                    SyncEvent.SnapshotChunk(
                        subscriptionID: chunk.subscriptionID, epoch: chunk.epoch, seq: chunk.seq,
                        index: chunk.chunkIndex, isLast: chunk.last, resnapshot: chunk.resnapshot, rows: rows)))
        }
        let batch = serializedMessageBytes.withUnsafeBytes { bytes in
            SyncResponseWireDecoding.coreBatch(bytes, makeRow: VersionedRow.init(row:version:))
        }
        if let (batch, deltas) = batch {
            return .event(
                .batch(
                    SyncEvent.Batch(
                        seq: batch.seq,
                        deltas: deltas.map { delta, entered, updated in
                            SyncEvent.Delta(
                                subscriptionID: delta.subscriptionID, epoch: delta.epoch, snapshot: delta.snapshot,
                                replaced: delta.replaced, left: delta.left, entered: entered, updated: updated,
                                snapshotSeq: delta.snapshotSeq)
                        }, continued: batch.continued)))
        }
        return .response(try SyncResponseDeserializer().deserialize(serializedMessageBytes))
    }
}

extension SyncEvent {
    /// The event of a decoded message.
    ///
    /// - Throws: ``ClientError`` `malformedRequest` when a row does not decode (see ``init(_:)``).
    init(_ message: SyncMessage) throws(ClientError) {
        switch message {
        case .event(let event): self = event
        case .response(let response): self = try SyncEvent(response)
        }
    }
}
