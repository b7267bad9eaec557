// MARK: - SyncEvent ← the wire
//
// The Sync stream's decoder: one `SyncResponse` in, one `SyncEvent` out, with every row converted to Core's `Row`.
// It runs where the message arrives (the connection's task), outside the context's actor, so the actor's state
// holds domain types only and its time goes to applying, not decoding.

internal import MeridianCore
internal import MeridianProto

extension SyncEvent {
    /// Decodes one message of the Sync stream.
    ///
    /// - Throws: ``ClientError`` `malformedRequest` when a row does not decode; the stream must then be dropped
    ///   (the connection reconnects and resumes).
    init(_ response: Meridian_V1_SyncResponse) throws(ClientError) {
        switch response.kind {
        case .welcome(let welcome):
            self = .welcome(
                Welcome(
                    seq: welcome.seq, resumed: welcome.resumed,
                    heartbeatIntervalMilliseconds: welcome.heartbeatIntervalMs,
                    schemaFingerprint: welcome.schemaFingerprint, accessFingerprint: welcome.accessFingerprint))
        case .snapshotChunk(let chunk):
            let rows: [VersionedRow]
            do {
                rows = try chunk.rows.map(VersionedRow.init)
            } catch {
                throw ClientError(.malformedRequest, "snapshot row does not decode: \(error)", cause: error)
            }
            self = .snapshotChunk(
                SnapshotChunk(
                    subscriptionID: chunk.subscriptionID, epoch: chunk.epoch, seq: chunk.seq, index: chunk.chunkIndex,
                    isLast: chunk.last, resnapshot: chunk.resnapshot, rows: rows))
        case .batch(let batch):
            var deltas: [Delta] = []
            deltas.reserveCapacity(batch.deltas.count)
            do {
                for delta in batch.deltas {
                    deltas.append(
                        Delta(
                            subscriptionID: delta.subscriptionID, epoch: delta.epoch, snapshot: delta.snapshot,
                            replaced: delta.replaced, left: delta.left,
                            entered: try delta.entered.map(VersionedRow.init),
                            updated: try delta.updated.map { update throws(ProtoConversionError) in
                                let (row, version, _) = try update.decoded()
                                return VersionedRow(row: row, version: version)
                            }, snapshotSeq: delta.snapshotSeq))
                }
            } catch {
                throw ClientError(.malformedRequest, "batch row does not decode: \(error)", cause: error)
            }
            self = .batch(Batch(seq: batch.seq, deltas: deltas, continued: batch.continued))
        case .heartbeat(let heartbeat):
            self = .heartbeat(seq: heartbeat.seq)
        case .subscriptionError(let failure):
            self = .subscriptionError(
                SubscriptionFailure(
                    subscriptionID: failure.subscriptionID, epoch: failure.epoch, error: ClientError(failure.error),
                    ended: failure.ended))
        case .goodbye(let goodbye):
            self = .goodbye(reason: goodbye.reason)
        case nil:
            self = .unknown
        }
    }
}

extension VersionedRow {
    /// A wire row and its version.
    ///
    /// - Throws: ``ProtoConversionError`` naming the row and attribute whose value is invalid.
    init(_ proto: Meridian_V1_Row) throws(ProtoConversionError) {
        self.init(row: try Row(proto), version: proto.version)
    }
}
