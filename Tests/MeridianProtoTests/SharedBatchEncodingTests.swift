import MeridianCore
import MeridianProto
import SwiftProtobuf
import Testing

/// Batches assembled from shared, pre-encoded deltas are the same messages as Batches built field by field.
@Suite struct SharedBatchEncodingTests {
    static func delta(_ id: String, rows: Int) -> Meridian_V1_SubscriptionDelta {
        var delta = Meridian_V1_SubscriptionDelta()
        delta.subscriptionID = id
        delta.entered = (0..<rows).map {
            Meridian_V1_Row(Row(id: "r\($0)", values: ["title": .string("Row \($0)")]), version: 1)
        }
        delta.left = ["gone"]
        return delta
    }

    @Test(
        "assembled bytes decode to the message built directly, and are the bytes it encodes to",
        arguments: [Int64(0), 1, 127, 128, 300, .max, -1]
    )
    func assembledEqualsBuilt(seq: Int64) throws {
        let deltas = [Self.delta("a", rows: 0), Self.delta("b", rows: 3), Self.delta("c", rows: 200)]
        let bytes = SharedBatchEncoding.syncResponse(
            seq: seq,
            encodedDeltas: try deltas.map(SharedBatchEncoding.encode)
        )
        var built = Meridian_V1_SyncResponse()
        built.batch.seq = seq
        built.batch.deltas = deltas
        #expect(try Meridian_V1_SyncResponse(serializedBytes: bytes) == built)
        #expect(bytes == (try built.serializedBytes() as [UInt8]))
    }

    @Test("a batch with no deltas is still a batch")
    func emptyBatch() throws {
        let decoded = try Meridian_V1_SyncResponse(
            serializedBytes: SharedBatchEncoding.syncResponse(seq: 9, encodedDeltas: [])
        )
        guard case .batch(let batch) = decoded.kind else {
            Issue.record("expected a batch, got \(String(describing: decoded.kind))")
            return
        }
        #expect(batch.seq == 9)
        #expect(batch.deltas.isEmpty)
    }

    @Test(
        "batches written in one pass from ids and shared bodies are the messages built directly",
        arguments: [Int64(0), 1, 300, -1]
    )
    func onePassEqualsBuilt(seq: Int64) throws {
        var deltas = [Self.delta("a", rows: 0), Self.delta("bb", rows: 3), Self.delta("c", rows: 200)]
        deltas[1].replaced = true
        deltas[1].epoch = 300
        deltas[2].epoch = 1
        deltas[0].snapshot = true
        deltas[2].snapshot = true
        let parts = try deltas.map { delta in
            var body = delta
            body.subscriptionID = ""
            body.replaced = false
            body.epoch = 0
            body.snapshot = false
            return SharedBatchEncoding.Part(
                subscriptionID: delta.subscriptionID, epoch: delta.epoch, body: try body.serializedBytes() as [UInt8],
                replaced: delta.replaced, snapshot: delta.snapshot)
        }
        let bytes = SharedBatchEncoding.syncResponse(seq: seq, parts: parts)
        var built = Meridian_V1_SyncResponse()
        built.batch.seq = seq
        built.batch.deltas = deltas
        #expect(try Meridian_V1_SyncResponse(serializedBytes: bytes) == built)
        #expect(bytes == (try built.serializedBytes() as [UInt8]))
    }
}
