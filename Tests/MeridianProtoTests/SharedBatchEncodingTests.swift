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

    @Test(
        "a batch cut to a message size: every message fits, parts share the seq, and together they are the batch",
        arguments: [200, 1_000, 4_096, 1 << 20])
    func cutToSize(maxBytes: Int) throws {
        let deltas = [Self.delta("a", rows: 0), Self.delta("b", rows: 3), Self.delta("c", rows: 200)]
        var parts: [SharedBatchEncoding.Part] = []
        for (i, delta) in deltas.enumerated() {
            let body = DeltaWireEncoding.subscriptionDeltaBody(
                entered: try delta.entered.map { (try Row($0), Int64(1)) }, left: delta.left,
                updated: [(row: Row, version: Int64, changed: [String])]())
            parts.append(
                SharedBatchEncoding.Part(
                    subscriptionID: delta.subscriptionID, epoch: UInt32(i + 1), body: body, replaced: i == 2,
                    snapshot: i == 1, snapshotSeq: i == 1 ? 41 : 0))
        }
        let messages = SharedBatchEncoding.syncResponses(seq: 42, parts: parts, maxBytes: maxBytes)
        let whole = try Meridian_V1_SyncResponse(
            serializedBytes: SharedBatchEncoding.syncResponse(seq: 42, parts: parts)
        ).batch
        var joined: [Meridian_V1_SubscriptionDelta] = []
        for (i, bytes) in messages.enumerated() {
            // A row here is under 40 bytes: every message fits, whatever the size.
            #expect(bytes.count <= maxBytes)
            let batch = try Meridian_V1_SyncResponse(serializedBytes: bytes).batch
            #expect(batch.seq == 42)
            #expect(batch.continued == (i < messages.count - 1))
            for delta in batch.deltas {
                if let last = joined.last, last.subscriptionID == delta.subscriptionID {
                    // A delta cut across parts: its flags are on its first piece only.
                    #expect(!delta.snapshot && !delta.replaced && delta.snapshotSeq == 0)
                    joined[joined.count - 1].entered += delta.entered
                    joined[joined.count - 1].left += delta.left
                    joined[joined.count - 1].updated += delta.updated
                } else {
                    joined.append(delta)
                }
            }
        }
        #expect(joined == whole.deltas)
        #expect((messages.count == 1) == (maxBytes == 1 << 20))
    }

    @Test("a row larger than the message size goes alone, whole")
    func oversizedRow() throws {
        let big = Row(id: "big", values: ["title": .string(String(repeating: "x", count: 5_000))])
        let small = Row(id: "small", values: ["title": .string("s")])
        let body = DeltaWireEncoding.subscriptionDeltaBody(
            entered: [(small, Int64(1)), (big, Int64(1)), (small, Int64(2))], left: [String](),
            updated: [(row: Row, version: Int64, changed: [String])]())
        let part = SharedBatchEncoding.Part(
            subscriptionID: "s", epoch: 1, body: body, replaced: false, snapshot: true, snapshotSeq: 1)
        let messages = SharedBatchEncoding.syncResponses(seq: 1, parts: [part], maxBytes: 1_000)
        let batches = try messages.map { try Meridian_V1_SyncResponse(serializedBytes: $0).batch }
        #expect(batches.map { $0.deltas.flatMap { $0.entered.map(\.id) } } == [["small"], ["big"], ["small"]])
        #expect(batches.map(\.continued) == [true, true, false])
        #expect(batches.map { $0.deltas.first?.snapshot == true } == [true, false, false])
        #expect(batches.map { $0.deltas.first?.snapshotSeq } == [1, 0, 0])
        #expect(messages[1].count > 1_000)
        #expect(messages[0].count <= 1_000 && messages[2].count <= 1_000)
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
        deltas[0].snapshotSeq = 300
        deltas[2].snapshot = true
        deltas[2].snapshotSeq = seq
        let parts = try deltas.map { delta in
            var body = delta
            body.subscriptionID = ""
            body.replaced = false
            body.epoch = 0
            body.snapshot = false
            body.snapshotSeq = 0
            return SharedBatchEncoding.Part(
                subscriptionID: delta.subscriptionID, epoch: delta.epoch, body: try body.serializedBytes() as [UInt8],
                replaced: delta.replaced, snapshot: delta.snapshot, snapshotSeq: delta.snapshotSeq)
        }
        let bytes = SharedBatchEncoding.syncResponse(seq: seq, parts: parts)
        var built = Meridian_V1_SyncResponse()
        built.batch.seq = seq
        built.batch.deltas = deltas
        #expect(try Meridian_V1_SyncResponse(serializedBytes: bytes) == built)
        #expect(bytes == (try built.serializedBytes() as [UInt8]))
    }
}
