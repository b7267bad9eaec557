// MARK: - Apply responses, encoded and decoded by hand

package import GRPCCore
internal import GRPCProtobuf
internal import SwiftProtobuf

/// Writes and reads the `ApplyResponse` of a committed transaction by hand: one `WrittenRow` per operation, so a
/// 500-row transaction of `meridian import` is a 500-entry message. swift-protobuf's generic visitor spent ~5% of
/// the server's CPU writing them and its decoder ~8% of the CLI's reading them (perf of a 300,000-row import).
///
/// Anything else — a rejection's `ErrorDetail`, unknown fields, an enum value this build does not name, invalid
/// UTF-8, a truncated message — is left to swift-protobuf, so the bytes and the messages are always swift-protobuf's
/// (`ApplyResponseWireCodingTests` pins both on random responses).
package enum ApplyResponseWireCoding {
    // MARK: Encoding

    /// The response's bytes: exactly swift-protobuf's serialization.
    package static func encode(_ response: Meridian_V1_ApplyResponse) throws -> [UInt8] {
        guard case .result(let result)? = response.outcome, self.isPlain(response, result) else {
            return try response.serializedBytes()
        }
        let resultSize = self.resultSize(result)
        var out: [UInt8] = []
        out.reserveCapacity(DeltaWireEncoding.fieldSize(resultSize) + 2 + response.clientTag.utf8.count + 4)
        out.append(0x0A)
        DeltaWireEncoding.appendVarint(UInt64(resultSize), to: &out)
        if result.seq != 0 {
            out.append(0x08)
            DeltaWireEncoding.appendVarint(UInt64(bitPattern: result.seq), to: &out)
        }
        for row in result.rows {
            out.append(0x12)
            DeltaWireEncoding.appendVarint(UInt64(self.rowSize(row)), to: &out)
            DeltaWireEncoding.appendString(field: 1, row.entity, to: &out)
            DeltaWireEncoding.appendString(field: 2, row.id, to: &out)
            if row.version != 0 {
                out.append(0x18)
                DeltaWireEncoding.appendVarint(UInt64(bitPattern: row.version), to: &out)
            }
            if row.kind.rawValue != 0 {
                out.append(0x20)
                DeltaWireEncoding.appendVarint(UInt64(bitPattern: Int64(row.kind.rawValue)), to: &out)
            }
        }
        DeltaWireEncoding.appendString(field: 3, response.clientTag, to: &out)
        return out
    }

    static func isPlain(_ response: Meridian_V1_ApplyResponse, _ result: Meridian_V1_ApplyResult) -> Bool {
        guard response.unknownFields.data.isEmpty, result.unknownFields.data.isEmpty else { return false }
        return result.rows.allSatisfy { $0.unknownFields.data.isEmpty }
    }

    static func resultSize(_ result: Meridian_V1_ApplyResult) -> Int {
        var size = result.seq == 0 ? 0 : 1 + DeltaWireEncoding.varintSize(UInt64(bitPattern: result.seq))
        for row in result.rows { size += DeltaWireEncoding.fieldSize(self.rowSize(row)) }
        return size
    }

    static func rowSize(_ row: Meridian_V1_WrittenRow) -> Int {
        var size = 0
        if !row.entity.isEmpty { size += DeltaWireEncoding.fieldSize(row.entity.utf8.count) }
        if !row.id.isEmpty { size += DeltaWireEncoding.fieldSize(row.id.utf8.count) }
        if row.version != 0 { size += 1 + DeltaWireEncoding.varintSize(UInt64(bitPattern: row.version)) }
        if row.kind.rawValue != 0 {
            size += 1 + DeltaWireEncoding.varintSize(UInt64(bitPattern: Int64(row.kind.rawValue)))
        }
        return size
    }

    // MARK: Decoding

    /// The response, decoded by hand when it is a plain result, else by swift-protobuf.
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> Meridian_V1_ApplyResponse {
        if let decoded = self.response(bytes) { return decoded }
        return try Meridian_V1_ApplyResponse(serializedBytes: Array(bytes))
    }

    /// The response decoded by hand; `nil` for a rejection or anything unusual.
    package static func response(_ bytes: UnsafeRawBufferPointer) -> Meridian_V1_ApplyResponse? {
        var reader = SyncResponseWireDecoding.Reader(bytes)
        var response = Meridian_V1_ApplyResponse()
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 2):
                // A second `result` would be merged into the first: swift-protobuf's business.
                guard response.outcome == nil, let body = reader.lengthDelimited(), let result = self.result(body)
                else { return nil }
                response.result = result
            case (3, 2):
                guard let tag = reader.string() else { return nil }
                response.clientTag = tag
            default:
                return nil
            }
        }
        return response
    }

    static func result(_ bytes: UnsafeRawBufferPointer) -> Meridian_V1_ApplyResult? {
        var reader = SyncResponseWireDecoding.Reader(bytes)
        var result = Meridian_V1_ApplyResult()
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 0):
                guard let seq = reader.varint() else { return nil }
                result.seq = Int64(bitPattern: seq)
            case (2, 2):
                guard let body = reader.lengthDelimited(), let row = self.row(body) else { return nil }
                if result.rows.isEmpty { result.rows.reserveCapacity(bytes.count / (body.count + 2)) }
                result.rows.append(row)
            default:
                return nil
            }
        }
        return result
    }

    static func row(_ bytes: UnsafeRawBufferPointer) -> Meridian_V1_WrittenRow? {
        var reader = SyncResponseWireDecoding.Reader(bytes)
        var row = Meridian_V1_WrittenRow()
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 2):
                guard let entity = reader.string() else { return nil }
                row.entity = entity
            case (2, 2):
                guard let id = reader.string() else { return nil }
                row.id = id
            case (3, 0):
                guard let version = reader.varint() else { return nil }
                row.version = Int64(bitPattern: version)
            case (4, 0):
                guard let raw = reader.varint(), raw <= 4, let kind = Meridian_V1_Operation.Kind(rawValue: Int(raw))
                else { return nil }
                row.kind = kind
            default:
                return nil
            }
        }
        return row
    }
}

/// A `MessageSerializer` for `Apply` and `ApplyStream` responses that encodes committed results by hand
/// (``ApplyResponseWireCoding``).
package struct ApplyResponseSerializer: MessageSerializer {
    package init() {}

    package func serialize<Bytes: GRPCContiguousBytes>(_ message: Meridian_V1_ApplyResponse) throws -> Bytes {
        do {
            return Bytes(try ApplyResponseWireCoding.encode(message))
        } catch {
            throw RPCError(code: .internalError, message: "can't serialize an ApplyResponse", cause: error)
        }
    }
}

/// A `MessageDeserializer` for `Apply` and `ApplyStream` responses that decodes committed results by hand
/// (``ApplyResponseWireCoding``).
package struct ApplyResponseDeserializer: MessageDeserializer {
    package init() {}

    package func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws
        -> Meridian_V1_ApplyResponse
    {
        do {
            return try serializedMessageBytes.withUnsafeBytes { try ApplyResponseWireCoding.decode($0) }
        } catch {
            throw RPCError(code: .invalidArgument, message: "can't deserialize an ApplyResponse", cause: error)
        }
    }
}
