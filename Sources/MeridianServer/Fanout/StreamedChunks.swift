// MARK: - A streamed snapshot's or query's chunks, written as the store's cursor reads its rows

internal import MeridianCore
internal import MeridianProto
internal import MeridianStore

/// The chunks of a snapshot streamed from the store, each written as a whole `SyncResponse` while the store's cursor
/// stands on its rows: a row's columns go straight into the message's bytes, never built into a Core row nor measured
/// first. The bytes are those `DeltaWireEncoding.snapshotChunkResponse` writes for the same rows read as Core rows
/// (`StreamedChunksTests` pins it).
///
/// A `Query`'s answer is written the same way, each chunk a whole `QueryResponse` (the bytes
/// `DeltaWireEncoding.queryResponse` writes for the same rows as Core rows).
///
/// A chunk of more than one row stays within `maxBytes` as a whole message: a row that would take it past is taken
/// out again and starts the next chunk. A row larger than that goes alone.
struct StreamedChunks {
    /// What the chunks are.
    enum Kind {
        /// A Sync subscription's snapshot: `SyncResponse`s holding `SnapshotChunk`s.
        case snapshot(subscriptionID: String, epoch: UInt32, resnapshot: Bool)
        /// A `Query`'s answer: `QueryResponse`s.
        case query
    }

    let kind: Kind
    /// The tag of each row's field in the chunk's message.
    private let rowTag: UInt8
    /// The most bytes a chunk's rows may take: the largest message less the chunk's framing.
    private let maxRowBytes: Int
    /// The chunk's rows, each a `rows` field; the buffer is kept from one chunk to the next.
    private let rows: RowBytes
    private var rowCount = 0
    /// The next chunk's index within the snapshot.
    private var index: UInt32 = 0

    /// The chunks of `subscriptionID`'s snapshot, each message at most `maxBytes` long unless its one row is larger.
    init(subscriptionID: String, epoch: UInt32, resnapshot: Bool, maxBytes: Int) {
        self.init(.snapshot(subscriptionID: subscriptionID, epoch: epoch, resnapshot: resnapshot), maxBytes: maxBytes)
    }

    /// The chunks of `kind`, each message at most `maxBytes` long unless its one row is larger.
    init(_ kind: Kind, maxBytes: Int) {
        self.kind = kind
        switch kind {
        case .snapshot(let subscriptionID, _, _):
            self.rowTag = DeltaWireEncoding.snapshotRowTag
            self.maxRowBytes = maxBytes - DeltaWireEncoding.snapshotChunkFraming(subscriptionID: subscriptionID)
        case .query:
            self.rowTag = DeltaWireEncoding.queryRowTag
            self.maxRowBytes = maxBytes - DeltaWireEncoding.queryResponseFraming
        }
        // Small at first: most snapshots are small (a map region's), and a buffer of a whole chunk's size for each
        // would be kept by the allocator after it is freed. A large snapshot grows it once and keeps it.
        self.rows = RowBytes(capacity: 4 << 10)
    }

    /// Writes the row the cursor stands on, read at `seq`, into the chunk; returns the chunk's message when the row
    /// would have taken it past its size: the row then starts the next chunk.
    mutating func append(_ row: CursorRow, seq: Int64) -> [UInt8]? {
        let start = self.rows.count
        Self.appendRow(row, tag: self.rowTag, to: self.rows)
        guard self.rowCount > 0, self.rows.count > self.maxRowBytes else {
            self.rowCount += 1
            return nil
        }
        let full = self.message(seq: seq, rowBytes: start, last: false)
        self.rows.keepTail(from: start)
        self.rowCount = 1
        return full
    }

    /// The last chunk's message (without rows when the read had none, or when every row went in a chunk before).
    mutating func finish(seq: Int64) -> [UInt8] {
        defer { self.rows.keepTail(from: self.rows.count) }
        return self.message(seq: seq, rowBytes: self.rows.count, last: true)
    }

    /// The chunk's message with the first `rowBytes` bytes of its rows.
    private mutating func message(seq: Int64, rowBytes: Int, last: Bool) -> [UInt8] {
        let rows = UnsafeRawBufferPointer(start: self.rows.base, count: rowBytes)
        defer { self.index += 1 }
        switch self.kind {
        case .snapshot(let subscriptionID, let epoch, let resnapshot):
            var message = DeltaWireEncoding.snapshotChunkStart(
                subscriptionID: subscriptionID, seq: seq, capacity: rowBytes + 32)
            message.append(contentsOf: rows)
            DeltaWireEncoding.snapshotChunkEnd(
                &message, last: last, resnapshot: resnapshot, chunkIndex: self.index, epoch: epoch)
            return message
        case .query:
            return DeltaWireEncoding.queryResponse(seq: seq, rowFields: rows, last: last)
        }
    }

    /// A row field whose tag byte is `tag` (a `SnapshotChunk`'s `rows`, field 3, or a `QueryResponse`'s, field 2) of
    /// the row the cursor stands on: the fields of a `Row` as `DeltaWireEncoding.appendRow` writes them from a Core
    /// row (the id, the version, each value that is not null).
    static func appendRow(_ row: CursorRow, tag: UInt8, to out: RowBytes) {
        out.reserve(2)
        out.byte(tag)
        // A one-byte length, widened below for the rare row of 128 bytes or more.
        let lengthAt = out.count
        out.byte(0)
        row.withID { id in
            guard !id.isEmpty else { return }
            out.reserve(11 + id.count)
            out.byte(0x0A)
            out.varint(UInt64(id.count))
            out.bytes(id)
        }
        let version = row.version
        if version != 0 {
            out.reserve(11)
            out.byte(0x10)
            out.varint(UInt64(bitPattern: version))
        }
        row.forEachValue { name, value in
            var name = name
            name.withUTF8 { name in
                switch value {
                case .scalar(let value): Self.valueEntry(name, value, to: out)
                case .text(let utf8): Self.valueEntry(name, field: 4, utf8, to: out)
                case .bytes(let bytes): Self.valueEntry(name, field: 6, bytes, to: out)
                }
            }
        }
        out.setLength(of: lengthAt)
    }

    /// A `map<string, Value>` entry (a row's field 3) of a number, bool or timestamp.
    @inline(__always)
    private static func valueEntry(_ name: UnsafeBufferPointer<UInt8>, _ value: Value, to out: RowBytes) {
        let (tag, payload): (UInt8, UInt64)
        switch value {
        case .int(let i): (tag, payload) = (0x10, UInt64(bitPattern: i))
        case .bool(let b): (tag, payload) = (0x28, b ? 1 : 0)
        case .timestamp(let t): (tag, payload) = (0x38, UInt64(bitPattern: t.microseconds))
        case .double(let d): (tag, payload) = (0x19, d.bitPattern)
        case .null, .string, .bytes: preconditionFailure("not a scalar column value: \(value)")
        }
        let valueBytes = tag == 0x19 ? 9 : 1 + DeltaWireEncoding.varintSize(payload)
        out.reserve(name.count + 32)
        out.entryHead(name, valueBytes: valueBytes)
        out.byte(tag)
        if tag == 0x19 { out.littleEndian(payload) } else { out.varint(payload) }
    }

    /// A `map<string, Value>` entry of a string (`field` 4) or bytes (`field` 6) given as its bytes.
    @inline(__always)
    private static func valueEntry(
        _ name: UnsafeBufferPointer<UInt8>, field: UInt8, _ bytes: UnsafeRawBufferPointer, to out: RowBytes
    ) {
        let valueBytes = DeltaWireEncoding.fieldSize(bytes.count)
        out.reserve(name.count + bytes.count + 32)
        out.entryHead(name, valueBytes: valueBytes)
        out.byte(field << 3 | 2)
        out.varint(UInt64(bytes.count))
        out.bytes(bytes)
    }
}

/// A growable byte buffer written without `Array`'s checks on every byte (uniqueness, capacity, count): its writer
/// makes room once for each part it writes (``reserve(_:)``), then writes the part's bytes unchecked. Touched by one
/// thread at a time (the store's reader thread that runs a streamed read).
final class RowBytes {
    private(set) var base: UnsafeMutableRawPointer
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        self.base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 8)
    }

    deinit { self.base.deallocate() }

    /// Room for `extra` more bytes.
    @inline(__always)
    func reserve(_ extra: Int) {
        if self.count + extra > self.capacity { self.grow(to: self.count + extra) }
    }

    private func grow(to needed: Int) {
        let capacity = max(needed, 2 * self.capacity)
        let base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        base.copyMemory(from: self.base, byteCount: self.count)
        self.base.deallocate()
        self.base = base
        self.capacity = capacity
    }

    /// Keeps the bytes from `start` on, moved to the front (a row that starts the next chunk), or none.
    func keepTail(from start: Int) {
        let tail = self.count - start
        if tail > 0 { self.base.copyMemory(from: self.base + start, byteCount: tail) }
        self.count = tail
    }

    @inline(__always)
    func byte(_ value: UInt8) {
        self.base.storeBytes(of: value, toByteOffset: self.count, as: UInt8.self)
        self.count += 1
    }

    @inline(__always)
    func varint(_ value: UInt64) {
        self.count += DeltaWireEncoding.writeVarint(value, at: self.base + self.count)
    }

    @inline(__always)
    func littleEndian(_ value: UInt64) {
        self.base.storeBytes(of: value.littleEndian, toByteOffset: self.count, as: UInt64.self)
        self.count += 8
    }

    @inline(__always)
    func bytes(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        (self.base + self.count).copyMemory(from: source, byteCount: bytes.count)
        self.count += bytes.count
    }

    /// A map entry's tag and length, its key (field 1) and its value's tag and length, before the value's own bytes.
    @inline(__always)
    func entryHead(_ name: UnsafeBufferPointer<UInt8>, valueBytes: Int) {
        let nameField = DeltaWireEncoding.fieldSize(name.count)
        let valueField = DeltaWireEncoding.fieldSize(valueBytes)
        self.byte(0x1A)
        self.varint(UInt64(nameField + valueField))
        self.byte(0x0A)
        self.varint(UInt64(name.count))
        self.bytes(UnsafeRawBufferPointer(name))
        self.byte(0x12)
        self.varint(UInt64(valueBytes))
    }

    /// Sets the one-byte length at `lengthAt` to the bytes written after it, moving them up to widen it when they are
    /// 128 or more.
    func setLength(of lengthAt: Int) {
        let length = self.count - lengthAt - 1
        if length < 0x80 {
            self.base.storeBytes(of: UInt8(length), toByteOffset: lengthAt, as: UInt8.self)
            return
        }
        let extra = DeltaWireEncoding.varintSize(UInt64(length)) - 1
        self.reserve(extra)
        (self.base + lengthAt + 1 + extra).copyMemory(from: self.base + lengthAt + 1, byteCount: length)
        let end = self.count + extra
        self.count = lengthAt
        self.varint(UInt64(length))
        self.count = end
    }
}
