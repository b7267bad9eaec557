// MARK: - Sync responses, decoded by hand

internal import Foundation
package import GRPCCore
internal import GRPCProtobuf
package import MeridianCore
internal import SwiftProtobuf

/// Decodes the `SyncResponse`s that carry rows — batches and snapshot chunks — by hand, and every other message
/// (or anything unusual) through swift-protobuf.
///
/// A client spent more CPU decoding each row's `map<string, Value>` through swift-protobuf's generic map decoding than
/// on anything else it does per row (13% of the whole benchmark process streaming 100-row transactions to one
/// client). This reads the same fields straight into the generated structs. It gives up — returns `nil`, and the
/// caller decodes the message with swift-protobuf — on whatever it does not handle the way swift-protobuf does
/// in one simple pass: an unknown field, a field with an unexpected wire type, a message field set twice (which
/// protobuf merges), an unrecognized enum value, invalid UTF-8, a truncated message. So the result is always
/// exactly swift-protobuf's (`SyncResponseWireDecodingTests` pins it on random messages).
package enum SyncResponseWireDecoding {
    /// The message, decoded by hand when it is a batch or a snapshot chunk, else by swift-protobuf.
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> Meridian_V1_SyncResponse {
        if let decoded = self.decodeRows(bytes) { return decoded }
        return try Meridian_V1_SyncResponse(serializedBytes: Array(bytes))
    }

    /// A batch or a snapshot chunk decoded by hand; `nil` for anything else or anything unusual.
    package static func decodeRows(_ bytes: UnsafeRawBufferPointer) -> Meridian_V1_SyncResponse? {
        var reader = Reader(bytes)
        var response = Meridian_V1_SyncResponse()
        var seen = false
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag(), wireType == 2, !seen, let body = reader.lengthDelimited() else {
                return nil
            }
            seen = true
            switch field {
            case 2:
                guard let chunk = self.snapshotChunk(body) else { return nil }
                response.kind = .snapshotChunk(chunk)
            case 3:
                guard let batch = self.batch(body) else { return nil }
                response.kind = .batch(batch)
            default:
                return nil
            }
        }
        return seen ? response : nil
    }

    static func batch(_ bytes: UnsafeRawBufferPointer) -> Meridian_V1_Batch? {
        guard let (header, deltas) = self.batch(bytes, row: self.row) else { return nil }
        var batch = header
        batch.deltas = deltas.map { part in
            var delta = part.delta
            delta.entered = part.entered
            delta.updated = part.updated.map { row, changed in
                var update = Meridian_V1_RowUpdate()
                if let row { update.row = row }
                update.changed = changed
                return update
            }
            return delta
        }
        return batch
    }

    /// A `Batch`'s fields (its `deltas` left empty) and its deltas' parts, each row read by `decodeRow`; `nil` for
    /// anything unusual, as `decodeRow` says for a row.
    @inline(__always)
    static func batch<Decoded>(_ bytes: UnsafeRawBufferPointer, row decodeRow: (UnsafeRawBufferPointer) -> Decoded?)
        -> (Meridian_V1_Batch, [DeltaParts<Decoded>])?
    {
        var reader = Reader(bytes)
        var batch = Meridian_V1_Batch()
        var deltas: [DeltaParts<Decoded>] = []
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 0):
                guard let seq = reader.varint() else { return nil }
                batch.seq = Int64(bitPattern: seq)
            case (2, 2):
                guard let body = reader.lengthDelimited(), let delta = self.delta(body, row: decodeRow) else {
                    return nil
                }
                deltas.append(delta)
            case (3, 0):
                guard let flag = reader.varint() else { return nil }
                batch.continued = flag != 0
            default:
                return nil
            }
        }
        return (batch, deltas)
    }

    /// A `SubscriptionDelta` read apart: its scalar fields and `left` (in `delta`, whose `entered` and `updated` stay
    /// empty), its entered rows, and its updates (the row, `nil` when the update carries none, and the changed names).
    struct DeltaParts<Decoded> {
        var delta = Meridian_V1_SubscriptionDelta()
        var entered: [Decoded] = []
        var updated: [(Decoded?, [String])] = []
    }

    @inline(__always)
    static func delta<Decoded>(_ bytes: UnsafeRawBufferPointer, row decodeRow: (UnsafeRawBufferPointer) -> Decoded?)
        -> DeltaParts<Decoded>?
    {
        var reader = Reader(bytes)
        var parts = DeltaParts<Decoded>()
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 2):
                guard let id = reader.string() else { return nil }
                parts.delta.subscriptionID = id
            case (2, 2):
                guard let body = reader.lengthDelimited(), let row = decodeRow(body) else { return nil }
                parts.entered.append(row)
            case (3, 2):
                guard let id = reader.string() else { return nil }
                parts.delta.left.append(id)
            case (4, 2):
                guard let body = reader.lengthDelimited(), let update = self.rowUpdate(body, row: decodeRow) else {
                    return nil
                }
                parts.updated.append(update)
            case (5, 0):
                guard let flag = reader.varint() else { return nil }
                parts.delta.replaced = flag != 0
            case (6, 0):
                guard let epoch = reader.varint() else { return nil }
                parts.delta.epoch = UInt32(truncatingIfNeeded: epoch)
            case (7, 0):
                guard let flag = reader.varint() else { return nil }
                parts.delta.snapshot = flag != 0
            case (8, 0):
                guard let seq = reader.varint() else { return nil }
                parts.delta.snapshotSeq = Int64(bitPattern: seq)
            default:
                return nil
            }
        }
        return parts
    }

    static func snapshotChunk(_ bytes: UnsafeRawBufferPointer) -> Meridian_V1_SnapshotChunk? {
        guard let (header, rows) = self.snapshotChunk(bytes, row: self.row) else { return nil }
        var chunk = header
        chunk.rows = rows
        return chunk
    }

    /// A `SnapshotChunk`'s fields (its `rows` left empty) and its rows, each read by `decodeRow`; `nil` for anything
    /// unusual, as `decodeRow` says for a row.
    @inline(__always)
    static func snapshotChunk<Decoded>(
        _ bytes: UnsafeRawBufferPointer, row decodeRow: (UnsafeRawBufferPointer) -> Decoded?
    ) -> (Meridian_V1_SnapshotChunk, [Decoded])? {
        var reader = Reader(bytes)
        var chunk = Meridian_V1_SnapshotChunk()
        var rows: [Decoded] = []
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 2):
                guard let id = reader.string() else { return nil }
                chunk.subscriptionID = id
            case (2, 0):
                guard let seq = reader.varint() else { return nil }
                chunk.seq = Int64(bitPattern: seq)
            case (3, 2):
                guard let body = reader.lengthDelimited(), let row = decodeRow(body) else { return nil }
                rows.append(row)
            case (4, 0):
                guard let flag = reader.varint() else { return nil }
                chunk.last = flag != 0
            case (5, 0):
                guard let flag = reader.varint() else { return nil }
                chunk.resnapshot = flag != 0
            case (6, 0):
                guard let index = reader.varint() else { return nil }
                chunk.chunkIndex = UInt32(truncatingIfNeeded: index)
            case (7, 0):
                guard let epoch = reader.varint() else { return nil }
                chunk.epoch = UInt32(truncatingIfNeeded: epoch)
            default:
                return nil
            }
        }
        return (chunk, rows)
    }

    /// A `RowUpdate`: its row (`nil` when it carries none) read by `decodeRow`, and its changed names.
    @inline(__always)
    static func rowUpdate<Decoded>(
        _ bytes: UnsafeRawBufferPointer, row decodeRow: (UnsafeRawBufferPointer) -> Decoded?
    ) -> (Decoded?, [String])? {
        var reader = Reader(bytes)
        var row: Decoded?
        var changed: [String] = []
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 2):
                // Set twice, protobuf would merge the two: left to swift-protobuf.
                guard row == nil, let body = reader.lengthDelimited(), let decoded = decodeRow(body) else {
                    return nil
                }
                row = decoded
            case (2, 2):
                guard let name = reader.string() else { return nil }
                changed.append(name)
            default:
                return nil
            }
        }
        return (row, changed)
    }

    static func row(_ bytes: UnsafeRawBufferPointer) -> Meridian_V1_Row? {
        var values: [String: Meridian_V1_Value] = [:]
        let fields = self.row(bytes, missing: Meridian_V1_Value(), value: self.value) { name, value in
            // Sized at once: `reserveCapacity` runs unspecialized (it looked up the map's type metadata at run
            // time), and a map grown entry by entry rehashes.
            if values.isEmpty { values = Dictionary(minimumCapacity: Self.count(ofField: 3, in: bytes)) }
            values[name] = value
            return true
        }
        guard let (id, version) = fields else { return nil }
        var row = Meridian_V1_Row()
        row.id = id
        row.version = version
        row.values = values
        return row
    }

    /// A `Row`'s id and version, each of its values read by `decode` (`missing` when an entry has none) and handed to
    /// `entry` with its name, in the order they come; `nil` for anything unusual, as `decode` or `entry` (returning
    /// false) says.
    @inline(__always)
    static func row<Decoded>(
        _ bytes: UnsafeRawBufferPointer, missing: Decoded, value decode: (UnsafeRawBufferPointer) -> Decoded?,
        entry: (String, Decoded) -> Bool
    ) -> (id: String, version: Int64)? {
        self.row(bytes, missing: missing, value: decode) { (key: UnsafeRawBufferPointer, value: Decoded) in
            guard let name = Self.string(key) else { return false }
            return entry(name, value)
        }
    }

    /// ``row(_:missing:value:entry:)`` handing `entry` each name as the message's UTF-8 bytes, not checked (valid only
    /// inside the call): a reader that matches names it knows compares bytes instead of making a `String` of every
    /// name of every row, and checks only a name it does not know.
    @inline(__always)
    static func row<Decoded>(
        _ bytes: UnsafeRawBufferPointer, missing: Decoded, value decode: (UnsafeRawBufferPointer) -> Decoded?,
        entry: (UnsafeRawBufferPointer, Decoded) -> Bool
    ) -> (id: String, version: Int64)? {
        var reader = Reader(bytes)
        var id = ""
        var version: Int64 = 0
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 2):
                guard let text = reader.string() else { return nil }
                id = text
            case (2, 0):
                guard let raw = reader.varint() else { return nil }
                version = Int64(bitPattern: raw)
            case (3, 2):
                guard let body = reader.lengthDelimited(),
                    let (key, value) = self.mapEntryKey(body, missing: missing, value: decode),
                    entry(key, value)
                else { return nil }
            default:
                return nil
            }
        }
        return (id, version)
    }

    /// A batch whose rows are read straight into Core rows, each made into the caller's type by `makeRow` (with its
    /// version), as ``coreSnapshotChunk(_:makeRow:)`` does for a chunk: the batch's fields (its `deltas` empty) and,
    /// per delta, its fields (`entered` and `updated` empty), entered rows and updated rows. `nil` for any other
    /// message or anything unusual, an update without a row included.
    package static func coreBatch<CoreRow>(
        _ bytes: UnsafeRawBufferPointer, makeRow: (Row, Int64) -> CoreRow
    ) -> (
        batch: Meridian_V1_Batch,
        deltas: [(delta: Meridian_V1_SubscriptionDelta, entered: [CoreRow], updated: [CoreRow])]
    )? {
        var reader = Reader(bytes)
        var rows = CoreRowReader()
        // Exactly one field: the batch (field 3 of the `kind` oneof).
        guard let (field, wireType) = reader.tag(), field == 3, wireType == 2, let body = reader.lengthDelimited(),
            reader.atEnd,
            let (batch, parts) = self.batch(body, row: { rows.row($0).map(makeRow) })
        else { return nil }
        var deltas: [(delta: Meridian_V1_SubscriptionDelta, entered: [CoreRow], updated: [CoreRow])] = []
        deltas.reserveCapacity(parts.count)
        for part in parts {
            var updated: [CoreRow] = []
            updated.reserveCapacity(part.updated.count)
            for (row, _) in part.updated {
                guard let row else { return nil }
                updated.append(row)
            }
            deltas.append((part.delta, part.entered, updated))
        }
        return (batch, deltas)
    }

    /// Reads the `Row`s of one message straight into compact Core rows (see ``MeridianCore/Row``) that share one
    /// layout: the names in the order the first row gave them, grown by each name a later row adds. A server sends
    /// the rows of an entity with their attributes in one order, so a name is found by one comparison, at the
    /// position after the previous name's.
    struct CoreRowReader {
        /// Past this many names a row falls back (`nil`): rows that keep adding names would copy the layout each time.
        static let maximumNames = 256

        private var layout = RowLayout(names: [])
        /// `layout` shaped by the rows read (``MeridianCore/RowShaper``).
        private var shaper = RowShaper(RowLayout(names: []))
        /// Names read that `layout` lacks, in order (made into a new layout when the row is made).
        private var added: [String] = []
        /// The row being read, one value per name of `layout` and then of `added`; reused for every row.
        private var values: [Value] = []

        /// A row and its version; `nil` for anything unusual.
        @inline(__always)
        mutating func row(_ bytes: UnsafeRawBufferPointer) -> (Row, Int64)? {
            for i in self.values.indices { self.values[i] = .null }
            var next = 0
            let fields = SyncResponseWireDecoding.row(
                bytes, missing: Value.null, value: ApplyRequestWireDecoding.coreValue
            ) { (key: UnsafeRawBufferPointer, value: Value) in
                let position: Int
                // The layout's names, matched by their bytes: no `String` made of a name the layout has.
                if let found = self.layout.position(ofUTF8: key, hint: next) {
                    self.values[found] = value
                    next = found + 1
                    return true
                }
                guard let name = SyncResponseWireDecoding.string(key) else { return false }
                if let found = self.layout.position(of: name, hint: next) {
                    position = found
                } else if let found = self.added.firstIndex(of: name) {
                    position = self.layout.count + found
                } else {
                    guard self.layout.count + self.added.count < Self.maximumNames else { return false }
                    self.added.append(name)
                    self.values.append(.null)
                    position = self.values.count - 1
                }
                // A name given twice: the last value wins, as in a protobuf map.
                self.values[position] = value
                next = position + 1
                return true
            }
            guard let (id, version) = fields else { return nil }
            if !self.added.isEmpty {
                // One new layout a row, however many names it added (the first row of a message adds them all).
                self.layout = RowLayout(names: self.layout.names + self.added)
                self.shaper = RowShaper(self.layout)
                self.added.removeAll(keepingCapacity: true)
            }
            let row = self.values.withUnsafeBufferPointer { values in
                Row(id: id, layout: self.shaper.layout(for: values), values: values)
            }
            return (row, version)
        }
    }

    /// A snapshot chunk whose rows are read straight into Core rows, each made into the caller's type by `makeRow`
    /// (with its version): one map per row, where the generated message's map and then Core's took two. `nil` for
    /// any other message or anything unusual (a NaN double included): the caller then decodes it with ``decode(_:)``
    /// and converts it, which says what is wrong.
    package static func coreSnapshotChunk<CoreRow>(
        _ bytes: UnsafeRawBufferPointer, makeRow: (Row, Int64) -> CoreRow
    ) -> (chunk: Meridian_V1_SnapshotChunk, rows: [CoreRow])? {
        var reader = Reader(bytes)
        // Exactly one field: the chunk (field 2 of the `kind` oneof).
        guard let (field, wireType) = reader.tag(), field == 2, wireType == 2, let body = reader.lengthDelimited(),
            reader.atEnd
        else { return nil }
        var rows = CoreRowReader()
        return self.snapshotChunk(body) { rows.row($0).map(makeRow) }
    }

    /// How many length-delimited fields numbered `field` a message's bytes hold (a map's entries), read quickly:
    /// nothing is decoded, and the count stops at anything unusual (the decoder then says what).
    static func count(ofField field: Int, in bytes: UnsafeRawBufferPointer) -> Int {
        var reader = Reader(bytes)
        var count = 0
        while !reader.atEnd, let (number, wireType) = reader.tag() {
            switch wireType {
            case 0: guard reader.varint() != nil else { return count }
            case 2:
                guard reader.lengthDelimited() != nil else { return count }
                if number == field { count += 1 }
            default: return count
            }
        }
        return count
    }

    /// One entry of `Row.values`: a missing key is "", a missing value a `Value` with no case (as swift-protobuf has).
    static func mapEntry(_ bytes: UnsafeRawBufferPointer) -> (String, Meridian_V1_Value)? {
        self.mapEntry(bytes, missing: Meridian_V1_Value(), value: self.value)
    }

    /// One entry of a `map<string, Value>`, its value read by `decode` (`missing` when absent); `nil` for anything
    /// unusual, as `decode` says for the value.
    @inline(__always)
    static func mapEntry<Decoded>(
        _ bytes: UnsafeRawBufferPointer, missing: Decoded, value decode: (UnsafeRawBufferPointer) -> Decoded?
    ) -> (String, Decoded)? {
        guard let (key, value) = self.mapEntryKey(bytes, missing: missing, value: decode),
            let name = Self.string(key)
        else { return nil }
        return (name, value)
    }

    /// ``mapEntry(_:missing:value:)`` with the key as its UTF-8 bytes in the message, not checked (empty when absent).
    @inline(__always)
    static func mapEntryKey<Decoded>(
        _ bytes: UnsafeRawBufferPointer, missing: Decoded, value decode: (UnsafeRawBufferPointer) -> Decoded?
    ) -> (UnsafeRawBufferPointer, Decoded)? {
        var reader = Reader(bytes)
        var key = UnsafeRawBufferPointer(start: nil, count: 0)
        var value = missing
        var hasValue = false
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 2):
                guard let name = reader.lengthDelimited() else { return nil }
                key = name
            case (2, 2):
                guard !hasValue, let body = reader.lengthDelimited(), let decoded = decode(body) else { return nil }
                value = decoded
                hasValue = true
            default:
                return nil
            }
        }
        return (key, value)
    }

    static func value(_ bytes: UnsafeRawBufferPointer) -> Meridian_V1_Value? {
        var reader = Reader(bytes)
        var value = Meridian_V1_Value()
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            // A oneof: the last case set wins, as in swift-protobuf (every case here is a scalar).
            switch (field, wireType) {
            case (1, 0):
                guard let raw = reader.varint(), raw == 0 else { return nil }
                value.kind = .nullValue(.nullValue)
            case (2, 0):
                guard let raw = reader.varint() else { return nil }
                value.kind = .intValue(Int64(bitPattern: raw))
            case (3, 1):
                guard let raw = reader.fixed64() else { return nil }
                value.kind = .doubleValue(Double(bitPattern: raw))
            case (4, 2):
                guard let text = reader.string() else { return nil }
                value.kind = .stringValue(text)
            case (5, 0):
                guard let raw = reader.varint() else { return nil }
                value.kind = .boolValue(raw != 0)
            case (6, 2):
                guard let body = reader.lengthDelimited() else { return nil }
                value.kind = .bytesValue(Data(body))
            case (7, 0):
                guard let raw = reader.varint() else { return nil }
                value.kind = .timestampMicros(Int64(bitPattern: raw))
            default:
                return nil
            }
        }
        return value
    }

    /// Reads protobuf's wire format; every read returns `nil` past the end or on a malformed varint.
    struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        var atEnd: Bool { self.offset >= self.bytes.count }

        mutating func varint() -> UInt64? {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while self.offset < self.bytes.count {
                let byte = self.bytes[self.offset]
                self.offset += 1
                if shift == 63, byte > 1 { return nil }  // more than 64 bits
                result |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return result }
                shift += 7
                if shift > 63 { return nil }
            }
            return nil
        }

        /// A field's number and wire type; field 0 is invalid.
        mutating func tag() -> (Int, Int)? {
            guard let key = self.varint(), key >> 3 > 0, key >> 3 <= 536_870_911 else { return nil }
            return (Int(key >> 3), Int(key & 7))
        }

        mutating func lengthDelimited() -> UnsafeRawBufferPointer? {
            guard let length = self.varint(), length <= UInt64(self.bytes.count - self.offset) else { return nil }
            let start = self.offset
            self.offset += Int(length)
            return UnsafeRawBufferPointer(rebasing: self.bytes[start..<self.offset])
        }

        mutating func fixed64() -> UInt64? {
            guard self.bytes.count - self.offset >= 8 else { return nil }
            var raw: UInt64 = 0
            withUnsafeMutableBytes(of: &raw) {
                $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: self.bytes[self.offset..<self.offset + 8]))
            }
            self.offset += 8
            return UInt64(littleEndian: raw)
        }

        /// A length-delimited UTF-8 string; `nil` when it is not valid UTF-8 (swift-protobuf rejects those).
        ///
        /// ASCII (ids, most text) is taken as it is: `String(validating:as:)` looks up generic metadata at run time
        /// on every call, 3.8% of a benchmark client's CPU (measured with perf).
        mutating func string() -> String? {
            self.lengthDelimited().flatMap(SyncResponseWireDecoding.string)
        }
    }

    /// A string of UTF-8 bytes; `nil` when they are not valid UTF-8 (see ``Reader/string()``).
    @inline(__always)
    static func string(_ body: UnsafeRawBufferPointer) -> String? {
        if UTF8Bytes.isASCII(body) { return String(decoding: body, as: UTF8.self) }
        return String(validating: body, as: UTF8.self)
    }
}

/// A `MessageDeserializer` for the Sync stream's responses that decodes batches and snapshot chunks by hand
/// (``SyncResponseWireDecoding``).
package struct SyncResponseDeserializer: MessageDeserializer {
    package init() {}

    package func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws
        -> Meridian_V1_SyncResponse
    {
        do {
            return try serializedMessageBytes.withUnsafeBytes { try SyncResponseWireDecoding.decode($0) }
        } catch {
            throw RPCError(code: .invalidArgument, message: "can't deserialize a SyncResponse", cause: error)
        }
    }
}

/// The `Sync` call's request serializer (swift-protobuf's), for a caller that opens the call with a deserializer of
/// its own (the client library's, which reads snapshot chunks straight into domain rows).
package struct SyncRequestSerializer: MessageSerializer {
    package init() {}

    package func serialize<Bytes: GRPCContiguousBytes>(_ message: Meridian_V1_SyncRequest) throws -> Bytes {
        try ProtobufSerializer<Meridian_V1_SyncRequest>().serialize(message)
    }
}

extension Meridian_V1_Meridian.ClientProtocol {
    /// The `Sync` call, its responses' batches and snapshot chunks decoded by hand (``SyncResponseDeserializer``).
    package func syncDecodingRowsByHand<Result: Sendable>(
        metadata: Metadata = [:],
        options: CallOptions = .defaults,
        requestProducer producer: @Sendable @escaping (RPCWriter<Meridian_V1_SyncRequest>) async throws -> Void,
        onResponse handleResponse:
            @Sendable @escaping (StreamingClientResponse<Meridian_V1_SyncResponse>) async throws
            -> Result
    ) async throws -> Result {
        try await self.sync(
            request: StreamingClientRequest(metadata: metadata, producer: producer),
            serializer: ProtobufSerializer<Meridian_V1_SyncRequest>(),
            deserializer: SyncResponseDeserializer(),
            options: options,
            onResponse: handleResponse)
    }
}
