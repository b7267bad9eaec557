// MARK: - A streamed snapshot's chunks, written as the store's cursor reads its rows

internal import MeridianCore
internal import MeridianProto
internal import MeridianStore

/// The chunks of a snapshot streamed from the store, each written as a whole `SyncResponse` while the store's cursor
/// stands on its rows: a row's columns go straight into the message's bytes, never built into a Core row nor measured
/// first. The bytes are those `DeltaWireEncoding.snapshotChunkResponse` writes for the same rows read as Core rows
/// (`StreamedChunksTests` pins it).
///
/// A chunk of more than one row stays within `maxBytes` as a whole message: a row that would take it past is taken
/// out again and starts the next chunk. A row larger than that goes alone.
struct StreamedChunks {
    let subscriptionID: String
    let epoch: UInt32
    let resnapshot: Bool
    /// The most bytes a chunk's rows may take: the largest message less the chunk's framing.
    private let maxRowBytes: Int
    private let capacity: Int
    /// The chunk being written, once the read's first row came.
    private var bytes: [UInt8] = []
    private var started = false
    /// Where the chunk's first row starts.
    private var rowsStart = 0
    private var rowCount = 0
    /// The next chunk's index within the snapshot.
    private var index: UInt32 = 0

    /// The chunks of `subscriptionID`'s snapshot, each message at most `maxBytes` long unless its one row is larger.
    init(subscriptionID: String, epoch: UInt32, resnapshot: Bool, maxBytes: Int) {
        self.subscriptionID = subscriptionID
        self.epoch = epoch
        self.resnapshot = resnapshot
        self.maxRowBytes = maxBytes - DeltaWireEncoding.snapshotChunkFraming(subscriptionID: subscriptionID)
        self.capacity = min(max(maxBytes, 0), 1 << 20)
    }

    /// Writes the row the cursor stands on, read at `seq`, into the chunk; returns the chunk's message when the row
    /// would have taken it past its size: the row then starts the next chunk.
    mutating func append(_ row: CursorRow, seq: Int64) -> [UInt8]? {
        if !self.started { self.start(seq: seq) }
        let start = self.bytes.count
        Self.appendRow(row, to: &self.bytes)
        guard self.rowCount > 0, self.bytes.count - self.rowsStart > self.maxRowBytes else {
            self.rowCount += 1
            return nil
        }
        let spilled = Array(self.bytes[start...])
        let full = self.finishChunk(last: false, withoutTail: self.bytes.count - start)
        self.start(seq: seq)
        self.bytes += spilled
        self.rowCount = 1
        return full
    }

    /// The last chunk's message (without rows when the read had none, or when every row went in a chunk before).
    mutating func finish(seq: Int64) -> [UInt8] {
        if !self.started { self.start(seq: seq) }
        return self.finishChunk(last: true, withoutTail: 0)
    }

    private mutating func start(seq: Int64) {
        self.bytes = DeltaWireEncoding.snapshotChunkStart(
            subscriptionID: self.subscriptionID, seq: seq, capacity: self.capacity)
        self.rowsStart = self.bytes.count
        self.rowCount = 0
        self.started = true
    }

    /// The chunk's message, its last `tail` bytes left out; the chunk is started again before its next row.
    private mutating func finishChunk(last: Bool, withoutTail tail: Int) -> [UInt8] {
        var message = self.bytes
        self.bytes = []
        self.started = false
        message.removeLast(tail)
        DeltaWireEncoding.snapshotChunkEnd(
            &message, last: last, resnapshot: self.resnapshot, chunkIndex: self.index, epoch: self.epoch)
        self.index += 1
        return message
    }

    /// A `SnapshotChunk`'s row field (`rows`, field 3) of the row the cursor stands on: the fields of a `Row` as
    /// `DeltaWireEncoding.appendRow` writes them from a Core row (the id, the version, each value that is not null).
    static func appendRow(_ row: CursorRow, to out: inout [UInt8]) {
        DeltaWireEncoding.appendLengthDelimited(tag: DeltaWireEncoding.snapshotRowTag, to: &out) { out in
            row.withID { id in
                guard !id.isEmpty else { return }
                out.append(0x0A)
                DeltaWireEncoding.appendVarint(UInt64(id.count), to: &out)
                out.append(contentsOf: id)
            }
            let version = row.version
            if version != 0 {
                out.append(0x10)
                DeltaWireEncoding.appendVarint(UInt64(bitPattern: version), to: &out)
            }
            row.forEachValue { name, value in
                switch value {
                case .scalar(let value):
                    DeltaWireEncoding.appendValueEntry(tag: 0x1A, name, value, to: &out)
                case .text(let utf8):
                    DeltaWireEncoding.appendValueEntry(tag: 0x1A, name, field: 4, utf8, to: &out)
                case .bytes(let bytes):
                    DeltaWireEncoding.appendValueEntry(tag: 0x1A, name, field: 6, bytes, to: &out)
                }
            }
        }
    }
}
