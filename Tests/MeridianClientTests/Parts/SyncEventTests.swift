// MARK: - The Sync stream's decoder, alone

import MeridianCore
import MeridianProto
import SwiftProtobuf
import Testing

@testable import MeridianClient

@Suite("Sync stream decoder")
struct SyncEventTests {
    func response(_ kind: Meridian_V1_SyncResponse.OneOf_Kind) -> Meridian_V1_SyncResponse {
        var response = Meridian_V1_SyncResponse()
        response.kind = kind
        return response
    }

    @Test("a Batch decodes into deltas of Core rows with their versions")
    func batch() throws {
        var delta = Meridian_V1_SubscriptionDelta()
        delta.subscriptionID = "s"
        delta.epoch = 2
        delta.snapshot = true
        delta.replaced = true
        delta.left = ["gone"]
        delta.entered = [Meridian_V1_Row(point("a", "Alpha", 1), version: 3)]
        delta.updated = [Meridian_V1_RowUpdate(point("b", "Bravo", 2), version: 5, changed: ["title"])]
        var batch = Meridian_V1_Batch()
        batch.seq = 9
        batch.deltas = [delta]
        guard case .batch(let decoded) = try SyncEvent(self.response(.batch(batch))) else {
            Issue.record("not a batch")
            return
        }
        #expect(decoded.seq == 9)
        #expect(
            decoded.deltas == [
                SyncEvent.Delta(
                    subscriptionID: "s", epoch: 2, snapshot: true, replaced: true, left: ["gone"],
                    entered: [VersionedRow(row: point("a", "Alpha", 1), version: 3)],
                    updated: [VersionedRow(row: point("b", "Bravo", 2), version: 5)])
            ])
    }

    @Test("a snapshot chunk, a heartbeat, a welcome and a subscription error decode to their events")
    func others() throws {
        var chunk = Meridian_V1_SnapshotChunk()
        chunk.subscriptionID = "s"
        chunk.epoch = 1
        chunk.seq = 4
        chunk.chunkIndex = 2
        chunk.last = true
        chunk.resnapshot = true
        chunk.rows = [Meridian_V1_Row(point("a", "Alpha", 1), version: 7)]
        guard case .snapshotChunk(let decoded) = try SyncEvent(self.response(.snapshotChunk(chunk))) else {
            Issue.record("not a chunk")
            return
        }
        #expect(
            decoded
                == SyncEvent.SnapshotChunk(
                    subscriptionID: "s", epoch: 1, seq: 4, index: 2, isLast: true, resnapshot: true,
                    rows: [VersionedRow(row: point("a", "Alpha", 1), version: 7)]))

        var heartbeat = Meridian_V1_Heartbeat()
        heartbeat.seq = 11
        guard case .heartbeat(let seq) = try SyncEvent(self.response(.heartbeat(heartbeat))) else {
            Issue.record("not a heartbeat")
            return
        }
        #expect(seq == 11)

        var welcome = Meridian_V1_Welcome()
        welcome.heartbeatIntervalMs = 250
        welcome.resumed = true
        guard case .welcome(let hello) = try SyncEvent(self.response(.welcome(welcome))) else {
            Issue.record("not a welcome")
            return
        }
        #expect(hello.heartbeatIntervalMilliseconds == 250 && hello.resumed)

        var failure = Meridian_V1_SubscriptionError()
        failure.subscriptionID = "s"
        failure.epoch = 3
        failure.error = Meridian_V1_ErrorDetail(.badPredicate, "no")
        guard case .subscriptionError(let error) = try SyncEvent(self.response(.subscriptionError(failure))) else {
            Issue.record("not an error")
            return
        }
        #expect(error.subscriptionID == "s" && error.epoch == 3 && error.error.code == .badPredicate)

        guard case .unknown = try SyncEvent(Meridian_V1_SyncResponse()) else {
            Issue.record("an empty message is not unknown")
            return
        }
    }

    @Test("the stream's deserializer gives a snapshot chunk the event converting its message gives")
    func deserializedChunk() throws {
        var chunk = Meridian_V1_SnapshotChunk()
        chunk.subscriptionID = "s"
        chunk.epoch = 4
        chunk.seq = 12
        chunk.chunkIndex = 2
        chunk.last = true
        chunk.resnapshot = true
        chunk.rows = [
            Meridian_V1_Row(point("a", "Alpha", 1), version: 3), Meridian_V1_Row(point("b", "", 2), version: 1),
            Meridian_V1_Row(Row(id: "c"), version: 9),
        ]
        let response = self.response(.snapshotChunk(chunk))
        let message = try SyncMessageDeserializer().deserialize(try response.serializedBytes() as [UInt8])
        guard case .event(.snapshotChunk(let straight)) = message,
            case .snapshotChunk(let converted) = try SyncEvent(response)
        else {
            Issue.record("not read straight into an event: \(message)")
            return
        }
        #expect(straight == converted)
        #expect(straight.rows.count == 3)

        // A batch too.
        var delta = Meridian_V1_SubscriptionDelta()
        delta.subscriptionID = "s"
        delta.epoch = 2
        delta.snapshot = true
        delta.left = ["gone"]
        delta.entered = [Meridian_V1_Row(point("a", "Alpha", 1), version: 3)]
        delta.updated = [Meridian_V1_RowUpdate(point("b", "Bravo", 2), version: 5, changed: ["title"])]
        var batch = Meridian_V1_Batch()
        batch.seq = 9
        batch.continued = true
        batch.deltas = [delta, Meridian_V1_SubscriptionDelta()]
        let batchResponse = self.response(.batch(batch))
        let batchMessage = try SyncMessageDeserializer().deserialize(try batchResponse.serializedBytes() as [UInt8])
        guard case .event(.batch(let straightBatch)) = batchMessage,
            case .batch(let convertedBatch) = try SyncEvent(batchResponse)
        else {
            Issue.record("not read straight into an event: \(batchMessage)")
            return
        }
        #expect(straightBatch == convertedBatch)
        #expect(straightBatch.deltas.count == 2 && straightBatch.continued)

        // Anything else is the message, converted as before.
        var welcome = Meridian_V1_SyncResponse()
        welcome.welcome.seq = 7
        let other = try SyncMessageDeserializer().deserialize(try welcome.serializedBytes() as [UInt8])
        guard case .response(let decoded) = other else {
            Issue.record("a welcome read as an event")
            return
        }
        #expect(decoded == welcome)
    }

    @Test("a row that does not decode refuses the whole message")
    func malformedRow() throws {
        var update = Meridian_V1_RowUpdate()
        update.changed = ["title"]  // and no row
        var delta = Meridian_V1_SubscriptionDelta()
        delta.subscriptionID = "s"
        delta.updated = [update]
        var batch = Meridian_V1_Batch()
        batch.deltas = [delta]
        let error = #expect(throws: ClientError.self) { try SyncEvent(self.response(.batch(batch))) }
        #expect(error?.code == .malformedRequest)
    }
}
