// MARK: - Batches from pre-encoded deltas

internal import SwiftProtobuf

/// Builds the bytes of a `SyncResponse{batch}` from subscription deltas encoded once and shared by every client.
///
/// DESIGN's fan-out rule is that each distinct subscription's delta is encoded once per commit, whatever the number
/// of clients holding it. A client's Batch holds the deltas of its own subscriptions, so Batches differ per client,
/// but protobuf encodes a repeated message field as the concatenation of its elements (each a tag and a length
/// prefix before the element's bytes): a client's Batch is its seq plus the shared delta bytes, copied, never
/// re-encoded. The result decodes exactly as the message built field by field would (a test pins this).
package enum SharedBatchEncoding {
    /// The bytes of one `SubscriptionDelta`, to be shared between clients.
    package static func encode(_ delta: Meridian_V1_SubscriptionDelta) throws -> [UInt8] {
        try delta.serializedBytes()
    }

    /// The serialized `SyncResponse` whose `batch` has this `seq` and these deltas (each as ``encode(_:)`` gave it).
    package static func syncResponse(seq: Int64, encodedDeltas: [[UInt8]]) -> [UInt8] {
        // Batch: field 1 `seq` (varint, omitted when 0 as proto3 does), field 2 `deltas` (length-delimited, repeated).
        var batch: [UInt8] = []
        batch.reserveCapacity(encodedDeltas.reduce(11) { $0 + $1.count + 6 })
        if seq != 0 {
            batch.append(0x08)
            appendVarint(UInt64(bitPattern: seq), to: &batch)
        }
        for delta in encodedDeltas {
            batch.append(0x12)
            appendVarint(UInt64(delta.count), to: &batch)
            batch.append(contentsOf: delta)
        }
        // SyncResponse: field 3 `batch` (length-delimited).
        var out: [UInt8] = [0x1A]
        out.reserveCapacity(batch.count + 11)
        appendVarint(UInt64(batch.count), to: &out)
        out.append(contentsOf: batch)
        return out
    }

    /// One subscription's part of a batch: its wire identity, the shared delta body, and its flags.
    package struct Part: Sendable {
        /// `SubscriptionDelta.subscription_id` (field 1).
        package var subscriptionID: String
        /// `SubscriptionDelta.epoch` (field 6), omitted when 0.
        package var epoch: UInt32
        /// Fields 2–4, as `DeltaWireEncoding.subscriptionDeltaBody` gives them (shared between clients).
        package var body: [UInt8]
        /// `SubscriptionDelta.replaced` (field 5).
        package var replaced: Bool
        /// `SubscriptionDelta.snapshot` (field 7).
        package var snapshot: Bool
        /// `SubscriptionDelta.snapshot_seq` (field 8), omitted when 0.
        package var snapshotSeq: Int64

        package init(
            subscriptionID: String, epoch: UInt32, body: [UInt8], replaced: Bool, snapshot: Bool,
            snapshotSeq: Int64 = 0
        ) {
            self.subscriptionID = subscriptionID
            self.epoch = epoch
            self.body = body
            self.replaced = replaced
            self.snapshot = snapshot
            self.snapshotSeq = snapshotSeq
        }

        /// The encoded size of the `SubscriptionDelta`.
        var size: Int {
            DeltaWireEncoding.fieldSize(self.subscriptionID.utf8.count) + self.body.count + (self.replaced ? 2 : 0)
                + (self.epoch != 0 ? 1 + DeltaWireEncoding.varintSize(UInt64(self.epoch)) : 0)
                + (self.snapshot ? 2 : 0)
                + (self.snapshotSeq != 0 ? 1 + DeltaWireEncoding.varintSize(UInt64(bitPattern: self.snapshotSeq)) : 0)
        }
    }

    /// The serialized `SyncResponse` whose `batch` has this `seq` and, per part, the `SubscriptionDelta` with field 1
    /// `subscription_id` (always written), the shared `body` (fields 2–4), field 5 `replaced`, field 6 `epoch`,
    /// field 7 `snapshot` and field 8 `snapshot_seq` when set — in field order, as swift-protobuf writes them —
    /// written in one pass into one buffer of the exact size (every length is known beforehand), each body copied
    /// once.
    ///
    /// - Parameter continued: `Batch.continued` (field 3): more parts of this batch follow (protocol version 2).
    package static func syncResponse(seq: Int64, parts: [Part], continued: Bool = false) -> [UInt8] {
        var batchSize = seq != 0 ? 1 + DeltaWireEncoding.varintSize(UInt64(bitPattern: seq)) : 0
        for part in parts { batchSize += DeltaWireEncoding.fieldSize(part.size) }
        if continued { batchSize += 2 }
        var out: [UInt8] = []
        out.reserveCapacity(DeltaWireEncoding.fieldSize(batchSize))
        // SyncResponse: field 3 `batch`.
        out.append(0x1A)
        appendVarint(UInt64(batchSize), to: &out)
        // Batch: field 1 `seq` (omitted when 0, as proto3 does), field 2 `deltas`.
        if seq != 0 {
            out.append(0x08)
            appendVarint(UInt64(bitPattern: seq), to: &out)
        }
        for part in parts {
            out.append(0x12)
            appendVarint(UInt64(part.size), to: &out)
            DeltaWireEncoding.appendString(field: 1, part.subscriptionID, to: &out, always: true)
            out.append(contentsOf: part.body)
            if part.replaced { out.append(contentsOf: [0x28, 0x01]) }
            if part.epoch != 0 {
                out.append(0x30)
                appendVarint(UInt64(part.epoch), to: &out)
            }
            if part.snapshot { out.append(contentsOf: [0x38, 0x01]) }
            if part.snapshotSeq != 0 {
                out.append(0x40)
                appendVarint(UInt64(bitPattern: part.snapshotSeq), to: &out)
            }
        }
        if continued { out.append(contentsOf: [0x18, 0x01]) }
        return out
    }

    /// The serialized `SyncResponse`s of one batch, cut so that each is at most `maxBytes` long (protocol version 2):
    /// the parts in order, a part too large for what is left of a message cut between its rows (its flags and
    /// `snapshot_seq` on its first piece), every message but the last flagged `continued`. Only a message holding a
    /// single row larger than `maxBytes` is longer. One message, as ``syncResponse(seq:parts:continued:)`` writes
    /// it, when the batch fits.
    package static func syncResponses(seq: Int64, parts: [Part], maxBytes: Int) -> [[UInt8]] {
        let seqSize = seq != 0 ? 1 + DeltaWireEncoding.varintSize(UInt64(bitPattern: seq)) : 0
        let whole = parts.reduce(seqSize) { $0 + DeltaWireEncoding.fieldSize($1.size) }
        if DeltaWireEncoding.fieldSize(whole) <= maxBytes { return [self.syncResponse(seq: seq, parts: parts)] }
        // What a message's parts may take: the limit less the response's tag and length, the seq and `continued`.
        let budget = max(1, maxBytes - 1 - DeltaWireEncoding.varintSize(UInt64(max(0, maxBytes))) - seqSize - 2)
        var messages: [[Part]] = []
        var current: [Part] = []
        var used = 0
        func flush() {
            guard !current.isEmpty else { return }
            messages.append(current)
            current = []
            used = 0
        }
        for part in parts {
            let cost = DeltaWireEncoding.fieldSize(part.size)
            if used + cost <= budget {
                current.append(part)
                used += cost
                continue
            }
            if cost <= budget {
                flush()
                current.append(part)
                used = cost
                continue
            }
            // Too large for any message: cut between its rows (each a whole field of the body).
            let header = part.size - part.body.count
            var piece = Part(
                subscriptionID: part.subscriptionID, epoch: part.epoch, body: [], replaced: part.replaced,
                snapshot: part.snapshot, snapshotSeq: part.snapshotSeq)
            for field in self.fields(of: part.body) {
                let grown = DeltaWireEncoding.fieldSize(header + piece.body.count + field.count)
                if used + grown > budget {
                    if !piece.body.isEmpty {
                        // The piece ends this message; the next one goes on without the flags.
                        current.append(piece)
                        piece = Part(
                            subscriptionID: part.subscriptionID, epoch: part.epoch, body: [], replaced: false,
                            snapshot: false)
                    }
                    flush()
                }
                piece.body += part.body[field]
            }
            let last = DeltaWireEncoding.fieldSize(piece.size)
            if used + last > budget { flush() }
            current.append(piece)
            used += last
        }
        flush()
        if messages.isEmpty { messages = [[]] }
        return messages.enumerated().map { index, parts in
            self.syncResponse(seq: seq, parts: parts, continued: index < messages.count - 1)
        }
    }

    /// The ranges of a delta body's top-level fields (each a row, an id or a row update: length-delimited); what
    /// does not parse as such is one range to the end.
    static func fields(of body: [UInt8]) -> [Range<Int>] {
        body.withUnsafeBytes { bytes in
            var reader = SyncResponseWireDecoding.Reader(bytes)
            var ranges: [Range<Int>] = []
            while !reader.atEnd {
                let start = reader.offset
                guard let (_, wireType) = reader.tag(), wireType == 2, reader.lengthDelimited() != nil else {
                    ranges.append(start..<body.count)
                    break
                }
                ranges.append(start..<reader.offset)
            }
            return ranges
        }
    }

    private static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }
}
