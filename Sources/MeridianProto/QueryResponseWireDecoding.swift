// MARK: - Query responses, decoded by hand

package import GRPCCore
internal import GRPCProtobuf
package import MeridianCore
internal import SwiftProtobuf

/// One chunk of a `Query`'s answer: its rows read straight into Core rows where the bytes arrive, or — for anything
/// the hand reading does not take — the generated message, which the caller converts (and which says what is wrong).
package enum QueryChunk: Sendable {
    /// The chunk's seq, its rows, and whether it is the last.
    case rows(seq: Int64, rows: [Row], last: Bool)
    /// Anything else, decoded by swift-protobuf.
    case message(Meridian_V1_QueryResponse)
}

extension SyncResponseWireDecoding {
    /// A `QueryResponse` whose rows are read straight into Core rows, each made into the caller's type by `makeRow`
    /// (with its version), one map per row as for snapshot chunks (``coreSnapshotChunk(_:makeRow:)``); `nil` for
    /// anything unusual — an unknown field, an unexpected wire type, a row the reader does not take whole (a NaN
    /// double, invalid UTF-8, a truncated field) — which the caller then decodes with swift-protobuf. A `meridian query` of 300,000 rows spent half of its CPU in swift-protobuf's
    /// generic decoding of each row's map (perf), and a generated message and then a Core row per row.
    package static func coreQueryChunk<CoreRow>(
        _ bytes: UnsafeRawBufferPointer, makeRow: (Row, Int64) -> CoreRow
    ) -> (seq: Int64, rows: [CoreRow], last: Bool)? {
        var reader = Reader(bytes)
        var rowReader = CoreRowReader()
        var seq: Int64 = 0
        var last = false
        var rows: [CoreRow] = []
        rows.reserveCapacity(self.count(ofField: 2, in: bytes))
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 0):
                guard let value = reader.varint() else { return nil }
                seq = Int64(bitPattern: value)
            case (2, 2):
                guard let body = reader.lengthDelimited(), let (row, version) = rowReader.row(body) else { return nil }
                rows.append(makeRow(row, version))
            case (3, 0):
                guard let flag = reader.varint() else { return nil }
                last = flag != 0
            default:
                return nil
            }
        }
        return (seq, rows, last)
    }
}

/// A `MessageDeserializer` for `Query` responses that reads their rows by hand
/// (``SyncResponseWireDecoding/coreQueryChunk(_:makeRow:)``), and anything else through swift-protobuf. The client's
/// query hands out rows without their versions.
package struct QueryChunkDeserializer: MessageDeserializer {
    package init() {}

    package func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> QueryChunk {
        let chunk = serializedMessageBytes.withUnsafeBytes { bytes in
            SyncResponseWireDecoding.coreQueryChunk(bytes) { row, _ in row }
        }
        if let (seq, rows, last) = chunk { return .rows(seq: seq, rows: rows, last: last) }
        return .message(try ProtobufDeserializer<Meridian_V1_QueryResponse>().deserialize(serializedMessageBytes))
    }
}
