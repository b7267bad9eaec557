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
    /// `SubscriptionDelta` fields 2 (entered), 3 (left) and 4 (updated), in that order.
    package static func subscriptionDeltaBody(
        entered: some Sequence<(row: Row, version: Int64)>,
        left: some Sequence<String>,
        updated: some Sequence<(row: Row, version: Int64, changed: [String])>
    ) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        var scratch: [UInt8] = []
        for (row, version) in entered {
            scratch.removeAll(keepingCapacity: true)
            appendRow(row, version: version, to: &scratch)
            appendLengthDelimited(field: 2, scratch, to: &out)
        }
        for id in left { appendString(field: 3, id, to: &out, always: true) }
        var update: [UInt8] = []
        for (row, version, changed) in updated {
            scratch.removeAll(keepingCapacity: true)
            appendRow(row, version: version, to: &scratch)
            update.removeAll(keepingCapacity: true)
            appendLengthDelimited(field: 1, scratch, to: &update)
            for name in changed { appendString(field: 2, name, to: &update, always: true) }
            appendLengthDelimited(field: 4, update, to: &out)
        }
        return out
    }

    /// The fields of a `Row` (not length-prefixed).
    package static func appendRow(_ row: Row, version: Int64, to out: inout [UInt8]) {
        if !row.id.isEmpty { appendString(field: 1, row.id, to: &out) }
        if version != 0 {
            out.append(0x10)
            appendVarint(UInt64(bitPattern: version), to: &out)
        }
        var entry: [UInt8] = []
        for (name, value) in row.values {
            entry.removeAll(keepingCapacity: true)
            appendString(field: 1, name, to: &entry, always: true)
            // The entry's value: a Value message (field 2) holding one oneof case.
            var valueBytes: [UInt8] = []
            appendValue(value, to: &valueBytes)
            appendLengthDelimited(field: 2, valueBytes, to: &entry)
            appendLengthDelimited(field: 3, entry, to: &out)
        }
    }

    /// The fields of a `Value` (its oneof case, always written, as proto3 does for a set oneof).
    package static func appendValue(_ value: Value, to out: inout [UInt8]) {
        switch value {
        case .null:
            out.append(contentsOf: [0x08, 0x00])
        case .int(let i):
            out.append(0x10)
            appendVarint(UInt64(bitPattern: i), to: &out)
        case .double(let d):
            out.append(0x19)
            withUnsafeBytes(of: d.bitPattern.littleEndian) { out.append(contentsOf: $0) }
        case .string(let s):
            appendString(field: 4, s, to: &out, always: true)
        case .bool(let b):
            out.append(contentsOf: [0x28, b ? 0x01 : 0x00])
        case .bytes(let b):
            out.append(0x32)
            appendVarint(UInt64(b.count), to: &out)
            out.append(contentsOf: b)
        case .timestamp(let t):
            out.append(0x38)
            appendVarint(UInt64(bitPattern: t.microseconds), to: &out)
        }
    }

    // MARK: - Primitives

    static func appendString(field: UInt64, _ text: String, to out: inout [UInt8], always: Bool = false) {
        var text = text
        text.withUTF8 { utf8 in
            if utf8.isEmpty && !always { return }
            appendVarint(field << 3 | 2, to: &out)
            appendVarint(UInt64(utf8.count), to: &out)
            out.append(contentsOf: utf8)
        }
    }

    static func appendLengthDelimited(field: UInt64, _ bytes: [UInt8], to out: inout [UInt8]) {
        appendVarint(field << 3 | 2, to: &out)
        appendVarint(UInt64(bytes.count), to: &out)
        out.append(contentsOf: bytes)
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
