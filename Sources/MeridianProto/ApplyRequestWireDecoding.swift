// MARK: - Apply requests, decoded by hand

internal import Foundation
internal import SwiftProtobuf

/// Decodes `ApplyRequest`s by hand, as ``SyncResponseWireDecoding`` does for the rows a client receives.
///
/// The server spent a good part of an import's CPU in swift-protobuf's generic decoding of each operation's
/// `map<string, Value>` (generic metadata looked up at run time for every entry; `meridian import` of 200,000 rows,
/// perf). This reads the same fields straight into the generated structs, and gives up — `nil`, and the caller
/// decodes with swift-protobuf — on anything it does not handle exactly as swift-protobuf does in one simple pass:
/// an unknown field, an unexpected wire type, an enum value the schema does not name, invalid UTF-8, a truncated
/// message. So the result is always swift-protobuf's (`ApplyRequestWireDecodingTests` pins it on random requests).
package enum ApplyRequestWireDecoding {
    /// The request, decoded by hand when it can be, else by swift-protobuf.
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> Meridian_V1_ApplyRequest {
        if let decoded = self.request(bytes) { return decoded }
        return try Meridian_V1_ApplyRequest(serializedBytes: Array(bytes))
    }

    /// The request decoded by hand; `nil` for anything unusual.
    package static func request(_ bytes: UnsafeRawBufferPointer) -> Meridian_V1_ApplyRequest? {
        var reader = SyncResponseWireDecoding.Reader(bytes)
        var request = Meridian_V1_ApplyRequest()
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 2):
                guard let body = reader.lengthDelimited(), let operation = self.operation(body) else { return nil }
                request.operations.append(operation)
            case (2, 0):
                guard let raw = reader.varint(), raw <= 2, let policy = Meridian_V1_ConflictPolicy(rawValue: Int(raw))
                else { return nil }
                request.conflictPolicy = policy
            case (3, 2):
                guard let tag = reader.string() else { return nil }
                request.clientTag = tag
            case (4, 2):
                guard let key = reader.string() else { return nil }
                request.idempotencyKey = key
            case (5, 0):
                // A bool, as swift-protobuf reads one: any varint but 0 is true.
                guard let raw = reader.varint() else { return nil }
                request.seqOnly = raw != 0
            default:
                return nil
            }
        }
        return request
    }

    static func operation(_ bytes: UnsafeRawBufferPointer) -> Meridian_V1_Operation? {
        var reader = SyncResponseWireDecoding.Reader(bytes)
        var operation = Meridian_V1_Operation()
        var values: [String: Meridian_V1_Value] = [:]
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 0):
                guard let raw = reader.varint(), raw <= 4, let kind = Meridian_V1_Operation.Kind(rawValue: Int(raw))
                else { return nil }
                operation.kind = kind
            case (2, 2):
                guard let entity = reader.string() else { return nil }
                operation.entity = entity
            case (3, 2):
                guard let id = reader.string() else { return nil }
                operation.id = id
            case (4, 2):
                guard let body = reader.lengthDelimited(), let (name, value) = SyncResponseWireDecoding.mapEntry(body)
                else { return nil }
                if values.isEmpty {
                    values = Dictionary(minimumCapacity: SyncResponseWireDecoding.count(ofField: 4, in: bytes))
                }
                values[name] = value
            case (5, 0):
                guard let raw = reader.varint() else { return nil }
                operation.expectedVersion = Int64(bitPattern: raw)
            default:
                return nil
            }
        }
        if !values.isEmpty { operation.values = values }
        return operation
    }
}
