// MARK: - Subscription deltas, encoded by hand

package import MeridianCore

/// Writes the protobuf bytes of rows and of a `SubscriptionDelta`'s fields 2–4 straight from Core values.
///
/// The fan-out encodes every changed row once per distinct subscription. Building `Meridian_V1_Row` messages first
/// (a `[String: Meridian_V1_Value]` dictionary per row) and serializing them through swift-protobuf's generic visitor
/// cost more than everything else the server does per row; this writes the same fields directly. The bytes decode
/// to exactly the message swift-protobuf would build from the same values (`DeltaWireEncodingTests` pins it): proto3
/// rules — `id` omitted when empty, `version` when 0; a oneof case, every map entry's key and value, and every element
/// of a repeated field (an empty string too) always written.
package enum DeltaWireEncoding {
    // Everything is written straight into the output: no scratch buffer per row, map entry or value, and no copy of
    // one into the next. A row is measured (`rowSize`), then written in place into room made for it at once
    // (``writeInPlace(_:to:_:)``); a compact row's values are walked by position, their names copied from its layout.

    /// `SubscriptionDelta` fields 2 (entered), 3 (left) and 4 (updated), in that order. Arrays, not any sequence:
    /// generic over its sequences, this ran unspecialized for the server's callers, walking each through witness
    /// tables (a quarter more time a row than the same rows written one by one, `MERIDIAN_BENCH_ONLY=encode`).
    package static func subscriptionDeltaBody(
        entered: [(row: Row, version: Int64)],
        left: [String],
        updated: [(row: Row, version: Int64, changed: [String])]
    ) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        for (row, version) in entered { appendEntered(row, version: version, to: &out) }
        for id in left { appendLeft(id, to: &out) }
        for (row, version, changed) in updated { appendUpdated(row, version: version, changed: changed, to: &out) }
        return out
    }

    /// One element of `SubscriptionDelta` field 2 (entered). Write every entered row, then every left id, then every
    /// update, as ``subscriptionDeltaBody(entered:left:updated:)`` does.
    package static func appendEntered(_ row: Row, version: Int64, to out: inout [UInt8]) {
        appendRowField(tag: 0x12, row, version: version, to: &out)
    }

    /// A `Row` as a length-delimited field whose tag byte is `tag`: the row measured first, then the tag, the length
    /// and the row written in place into room made for them at once (``writeInPlace(_:to:_:)``).
    static func appendRowField(tag: UInt8, _ row: Row, version: Int64, to out: inout [UInt8]) {
        let size = rowSize(row, version: version)
        writeInPlace(1 + varintSize(UInt64(size)) + size, to: &out) { cursor in
            cursor.byte(tag)
            cursor.varint(UInt64(size))
            writeRow(row, version: version, to: &cursor)
        }
    }

    /// Appends `count` bytes to `out` written by `body` through a ``WireCursor``: room is made for them at once and
    /// written in place, instead of appending byte by byte (each append checked the array's uniqueness and capacity:
    /// half of the fan-out's encoding). `body` must write exactly `count` bytes (checked, after the fact).
    @inline(__always)
    static func writeInPlace(_ count: Int, to out: inout [UInt8], _ body: (inout WireCursor) -> Void) {
        let start = out.count
        if count <= zeros.count {
            zeros.withUnsafeBufferPointer { out.append(contentsOf: UnsafeBufferPointer(rebasing: $0[..<count])) }
        } else {
            out.append(contentsOf: repeatElement(0, count: count))
        }
        out.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress! + start
            var cursor = WireCursor(base)
            body(&cursor)
            precondition(cursor.written(from: base) == count, "an encoded size was misjudged")
        }
    }

    /// 256 zero bytes, copied to make room at the end of an array (`Array` has no append of uninitialized elements,
    /// and appending a `repeatElement` stores its bytes one at a time).
    private static let zeros = [UInt8](repeating: 0, count: 256)

    /// The fields of a `Row` (``appendRow(_:version:to:)``), a compact row's by position (``writeCompactRow``).
    @inline(__always)
    static func writeRow(_ row: Row, version: Int64, to out: inout WireCursor) {
        if let layout = row.compactLayout {
            writeCompactRow(row, version: version, layout: layout, to: &out)
        } else {
            appendRow(row, version: version, to: &out)
        }
    }

    /// ``rowSize(_:version:)`` of a compact row, from its layout and values.
    @inline(__always)
    static func compactRowSize(_ row: Row, version: Int64, layout: RowLayout) -> Int {
        var size = row.id.isEmpty ? 0 : fieldSize(row.id.utf8.count)
        if version != 0 { size += 1 + varintSize(UInt64(bitPattern: version)) }
        forEachValue(row, layout) { name, value in
            size += fieldSize(fieldSize(name.count) + fieldSize(valueSize(value)))
        }
        return size
    }

    /// Calls `body` with the range of each value's name in `layout`'s ``RowLayout/nameBytes`` (the compact row's
    /// layout) and the value, for each value that is not null, in order.
    @inline(__always)
    static func forEachValue(_ row: Row, _ layout: RowLayout, _ body: (Range<Int>, Value) -> Void) {
        layout.nameEnds.withUnsafeBufferPointer { ends in
            row.forEachCompactValue { i, value in
                if !value.isNull { body((i == 0 ? 0 : ends[i &- 1])..<ends[i], value) }
            }
        }
    }

    /// ``appendRow(_:version:to:)`` of a compact row: its values by position, each one's name copied from the layout's
    /// ``RowLayout/nameBytes`` (no closure call, no `String` read, per value).
    @inline(__always)
    static func writeCompactRow(_ row: Row, version: Int64, layout: RowLayout, to out: inout WireCursor) {
        if !row.id.isEmpty { appendString(field: 1, row.id, to: &out) }
        if version != 0 {
            out.byte(0x10)
            out.varint(UInt64(bitPattern: version))
        }
        layout.nameBytes.withUnsafeBufferPointer { names in
            forEachValue(row, layout) { name, value in
                let valueBytes = valueSize(value)
                out.byte(0x1A)
                out.varint(UInt64(fieldSize(name.count) + fieldSize(valueBytes)))
                out.byte(0x0A)
                out.varint(UInt64(name.count))
                out.bytes(UnsafeBufferPointer(rebasing: names[name]))
                out.byte(0x12)
                out.varint(UInt64(valueBytes))
                appendValue(value, to: &out)
            }
        }
    }

    /// A whole `SyncResponse` holding a `SnapshotChunk` (field 2): the bytes swift-protobuf would write for the same
    /// values, fields in number order, proto3 defaults left out. A snapshot's rows were turned into
    /// `Meridian_V1_Row` messages, measured and serialized by swift-protobuf's visitors: most of what the server
    /// spent on an initial sync.
    ///
    /// The chunk's `rowCount` rows are given by index, `row(i)`, each asked for once and written as it comes
    /// (``appendRowField(tag:_:version:to:)``), and the message's own tag and length are put in front of its body at
    /// the end (``snapshotChunkStart(subscriptionID:seq:capacity:)``, ``snapshotChunkEnd(_:last:resnapshot:chunkIndex:epoch:)``)
    /// — where measuring every row first walked each row's values twice. Not generic over a collection: compiled in
    /// this module for any collection, the loops walked the server's lazily mapped slice through witness tables and
    /// instantiated generic metadata for every row (half of this function's time in a `sync` profile).
    package static func snapshotChunkResponse(
        subscriptionID: String, seq: Int64, rowCount: Int, last: Bool, resnapshot: Bool, chunkIndex: UInt32,
        epoch: UInt32, row: (Int) -> (row: Row, version: Int64)
    ) -> [UInt8] {
        var out = snapshotChunkStart(subscriptionID: subscriptionID, seq: seq, capacity: 0)
        for i in 0..<rowCount {
            let (row, version) = row(i)
            appendRowField(tag: 0x1A, row, version: version, to: &out)
        }
        snapshotChunkEnd(&out, last: last, resnapshot: resnapshot, chunkIndex: chunkIndex, epoch: epoch)
        return out
    }

    /// The tag of a `QueryResponse`'s row (field 2).
    package static let queryRowTag: UInt8 = 0x12

    /// The most bytes a `QueryResponse` holds besides its rows' fields: a 10-byte seq and `last`, with their tags.
    package static let queryResponseFraming = 13

    /// A whole `QueryResponse`: the bytes swift-protobuf would write for the same values (fields in number order,
    /// proto3 defaults left out), its rows given as their fields already written (each tagged ``queryRowTag``).
    package static func queryResponse(seq: Int64, rowFields: UnsafeRawBufferPointer, last: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(rowFields.count + queryResponseFraming)
        if seq != 0 {
            out.append(0x08)
            appendVarint(UInt64(bitPattern: seq), to: &out)
        }
        out.append(contentsOf: rowFields)
        if last { out += [0x18, 1] }
        return out
    }

    /// A whole `QueryResponse` of Core rows (a server without a file store reads a query's rows whole).
    package static func queryResponse(
        seq: Int64, rowCount: Int, last: Bool, row: (Int) -> (row: Row, version: Int64)
    ) -> [UInt8] {
        var rows: [UInt8] = []
        for i in 0..<rowCount {
            let (row, version) = row(i)
            appendRowField(tag: queryRowTag, row, version: version, to: &rows)
        }
        return rows.withUnsafeBytes { queryResponse(seq: seq, rowFields: $0, last: last) }
    }

    /// The tag of a `SnapshotChunk`'s row (field 3): its rows, each written after it as a `Row`'s fields, make the
    /// chunk between ``snapshotChunkStart(subscriptionID:seq:capacity:)`` and ``snapshotChunkEnd(_:last:resnapshot:chunkIndex:epoch:)``.
    package static let snapshotRowTag: UInt8 = 0x1A

    /// Room for a `SyncResponse`'s tag and its body's length (a varint of at most 5 bytes below 4 GiB), filled last.
    private static let chunkHeadroom = 6

    /// The start of a `SyncResponse` holding a `SnapshotChunk`, before its rows: room for the response's tag and
    /// length, then the chunk's fields 1 and 2. Its rows follow (fields tagged ``snapshotRowTag``), then
    /// ``snapshotChunkEnd(_:last:resnapshot:chunkIndex:epoch:)``.
    package static func snapshotChunkStart(subscriptionID: String, seq: Int64, capacity: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: chunkHeadroom)
        out.reserveCapacity(chunkHeadroom + max(capacity, 64))
        if !subscriptionID.isEmpty { appendString(field: 1, subscriptionID, to: &out) }
        if seq != 0 {
            out.append(0x10)
            appendVarint(UInt64(bitPattern: seq), to: &out)
        }
        return out
    }

    /// Ends a chunk begun with ``snapshotChunkStart(subscriptionID:seq:capacity:)``: the chunk's fields 4 to 7, then
    /// the response's tag and length put in front of its body.
    package static func snapshotChunkEnd(
        _ out: inout [UInt8], last: Bool, resnapshot: Bool, chunkIndex: UInt32, epoch: UInt32
    ) {
        if last { out += [0x20, 1] }
        if resnapshot { out += [0x28, 1] }
        if chunkIndex != 0 {
            out.append(0x30)
            appendVarint(UInt64(chunkIndex), to: &out)
        }
        if epoch != 0 {
            out.append(0x38)
            appendVarint(UInt64(epoch), to: &out)
        }
        var header: [UInt8] = [0x12]
        appendVarint(UInt64(out.count - chunkHeadroom), to: &header)
        let start = chunkHeadroom - header.count
        precondition(start >= 0, "a snapshot chunk of 4 GiB or more")
        out.replaceSubrange(start..<chunkHeadroom, with: header)
        out.removeFirst(start)
    }

    /// The most bytes a snapshot chunk's message holds besides its rows' fields: what
    /// ``snapshotChunkStart(subscriptionID:seq:capacity:)`` and ``snapshotChunkEnd(_:last:resnapshot:chunkIndex:epoch:)``
    /// write at most (the response's tag and a 5-byte length, the id, a 10-byte seq, both flags, a chunk index and an
    /// epoch of 5 bytes each).
    package static func snapshotChunkFraming(subscriptionID: String) -> Int {
        6 + fieldSize(subscriptionID.utf8.count) + 11 + 2 + 2 + 6 + 6
    }

    /// One element of `SubscriptionDelta` field 3 (left).
    package static func appendLeft(_ id: String, to out: inout [UInt8]) {
        appendString(field: 3, id, to: &out, always: true)
    }

    /// One element of `SubscriptionDelta` field 4 (updated): a `RowUpdate` with the row and the changed names.
    package static func appendUpdated(_ row: Row, version: Int64, changed: [String], to out: inout [UInt8]) {
        let size = rowSize(row, version: version)
        var update = fieldSize(size)
        for name in changed { update += fieldSize(name.utf8.count) }
        writeInPlace(fieldSize(update), to: &out) { cursor in
            cursor.byte(0x22)
            cursor.varint(UInt64(update))
            cursor.byte(0x0A)
            cursor.varint(UInt64(size))
            writeRow(row, version: version, to: &cursor)
            for name in changed { appendString(field: 2, name, to: &cursor, always: true) }
        }
    }

    /// The fields of a `Row` (not length-prefixed).
    package static func appendRow(_ row: Row, version: Int64, to out: inout some WireOutput) {
        if !row.id.isEmpty { appendString(field: 1, row.id, to: &out) }
        if version != 0 {
            out.byte(0x10)
            out.varint(UInt64(bitPattern: version))
        }
        row.forEachValue { name, value in appendValueEntry(tag: 0x1A, name, value, to: &out) }
    }

    /// One entry of a `map<string, Value>` whose field's tag byte is `tag` (a `Row`'s values: field 3, 0x1A; an
    /// `Operation`'s: field 4, 0x22): the key (field 1) and the value (field 2), a Value message holding one oneof
    /// case.
    @inline(__always)
    static func appendValueEntry(tag: UInt8, _ name: String, _ value: Value, to out: inout some WireOutput) {
        let valueBytes = valueSize(value)
        out.byte(tag)
        out.varint(UInt64(fieldSize(name.utf8.count) + fieldSize(valueBytes)))
        appendString(field: 1, name, to: &out, always: true)
        out.byte(0x12)
        out.varint(UInt64(valueBytes))
        appendValue(value, to: &out)
    }

    /// The size of ``appendValueEntry(tag:_:_:to:)``'s output.
    @inline(__always)
    static func valueEntrySize(_ name: String, _ value: Value) -> Int {
        fieldSize(fieldSize(name.utf8.count) + fieldSize(valueSize(value)))
    }

    /// The size of ``appendRow(_:version:to:)``'s output.
    static func rowSize(_ row: Row, version: Int64) -> Int {
        if let layout = row.compactLayout { return compactRowSize(row, version: version, layout: layout) }
        var size = row.id.isEmpty ? 0 : fieldSize(row.id.utf8.count)
        if version != 0 { size += 1 + varintSize(UInt64(bitPattern: version)) }
        row.forEachValue { name, value in size += valueEntrySize(name, value) }
        return size
    }

    /// The size of ``appendValue(_:to:)``'s output.
    static func valueSize(_ value: Value) -> Int {
        switch value {
        case .null, .bool: 2
        case .int(let i): 1 + varintSize(UInt64(bitPattern: i))
        case .double: 9
        case .string(let s): fieldSize(s.utf8.count)
        case .bytes(let b): fieldSize(b.count)
        case .timestamp(let t): 1 + varintSize(UInt64(bitPattern: t.microseconds))
        }
    }

    /// The fields of a `Value` (its oneof case, always written, as proto3 does for a set oneof).
    package static func appendValue(_ value: Value, to out: inout some WireOutput) {
        switch value {
        case .null:
            out.byte(0x08)
            out.byte(0x00)
        case .int(let i):
            out.byte(0x10)
            out.varint(UInt64(bitPattern: i))
        case .double(let d):
            out.byte(0x19)
            withUnsafeBytes(of: d.bitPattern.littleEndian) { out.bytes($0.assumingMemoryBound(to: UInt8.self)) }
        case .string(let s):
            appendString(field: 4, s, to: &out, always: true)
        case .bool(let b):
            out.byte(0x28)
            out.byte(b ? 0x01 : 0x00)
        case .bytes(let b):
            out.byte(0x32)
            out.varint(UInt64(b.count))
            b.withUnsafeBufferPointer { out.bytes($0) }
        case .timestamp(let t):
            out.byte(0x38)
            out.varint(UInt64(bitPattern: t.microseconds))
        }
    }

    // MARK: - Primitives

    static func appendString(field: UInt64, _ text: String, to out: inout some WireOutput, always: Bool = false) {
        var text = text
        text.withUTF8 { utf8 in
            if utf8.isEmpty && !always { return }
            out.varint(field << 3 | 2)
            out.varint(UInt64(utf8.count))
            out.bytes(utf8)
        }
    }

    /// The size of a length-delimited field with a one-byte tag and `length` bytes of payload.
    @inlinable
    package static func fieldSize(_ length: Int) -> Int { 1 + varintSize(UInt64(length)) + length }

    /// The bytes `value` takes as a varint (the server's streamed chunks size their fields with it too).
    @inlinable
    package static func varintSize(_ value: UInt64) -> Int {
        value < 0x80 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    /// Writes `value` as a varint at `start`, into memory with room for it (``varintSize(_:)`` bytes), without
    /// checks; returns the bytes written. (The writers into memory sized up front share it: `WireCursor`, the server's
    /// `RowBytes`.)
    @inlinable @inline(__always)
    package static func writeVarint(_ value: UInt64, at start: UnsafeMutableRawPointer) -> Int {
        var v = value
        var written = 0
        while v >= 0x80 {
            start.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: written, as: UInt8.self)
            written += 1
            v >>= 7
        }
        start.storeBytes(of: UInt8(v), toByteOffset: written, as: UInt8.self)
        return written + 1
    }

    static func appendVarint(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }
}

/// Where protobuf bytes are written: an `Array` that grows (the fan-out's deltas, the server's messages), or a
/// ``WireCursor`` over memory sized up front (requests written from Core operations). The field writers of
/// ``DeltaWireEncoding`` (strings, map entries, values) serve both.
package protocol WireOutput {
    mutating func byte(_ value: UInt8)
    mutating func bytes(_ source: UnsafeBufferPointer<UInt8>)
    mutating func varint(_ value: UInt64)
}

extension Array: WireOutput where Element == UInt8 {
    @inline(__always)
    package mutating func byte(_ value: UInt8) { self.append(value) }

    @inline(__always)
    package mutating func bytes(_ source: UnsafeBufferPointer<UInt8>) { self.append(contentsOf: source) }

    @inline(__always)
    package mutating func varint(_ value: UInt64) { DeltaWireEncoding.appendVarint(value, to: &self) }
}
