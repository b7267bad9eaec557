import MeridianCore
import MeridianProto
@testable import MeridianServer
import SwiftProtobuf
import Testing

/// A slow client's queued batches are folded row by row; the folded `changed` lists must name what a client would
/// have heard from the batches one by one — derived attributes included.
@Suite struct CoalescingTests {
    let coordinate = DerivedAttribute(name: "coordinate", kind: .coordinate(latitude: "lat", longitude: "lon"))

    func part(entered: [Row] = [], left: [(String, Row?)] = [], updated: [(Row, [String])] = []) -> BatchPart {
        BatchPart(
            subscriptionID: "s",
            delta: SharedDelta(
                entered: entered.map { VersionedRow(row: $0, version: 1) },
                left: left.map { (id: $0.0, before: $0.1) },
                updated: updated.map { (row: VersionedRow(row: $0.0, version: 2), changed: $0.1) }),
            replaced: false, derived: [self.coordinate])
    }

    @Test("a row that left and came back with a new position is an update naming the position and the coordinate")
    func leftAndReentered() {
        let before = Row(id: "a", values: ["title": "A", "lat": 1.0, "lon": 2.0])
        let after = Row(id: "a", values: ["title": "A", "lat": 1.5, "lon": 2.0])
        var merged = MergedDelta()
        merged.fold(self.part(left: [("a", before)]))
        merged.fold(self.part(entered: [after]))
        let proto = merged.proto(subscriptionID: "s")
        #expect(proto.entered.isEmpty && proto.left.isEmpty)
        #expect(proto.updated.map(\.changed) == [["coordinate", "lat"]])
    }

    @Test("updates fold into one naming every changed attribute; a title-only return names no coordinate")
    func updatesFold() {
        let row = Row(id: "a", values: ["title": "B", "lat": 1.0, "lon": 2.0])
        var merged = MergedDelta()
        merged.fold(self.part(updated: [(row, ["coordinate", "lon"])]))
        merged.fold(self.part(updated: [(row, ["title"])]))
        #expect(merged.proto(subscriptionID: "s").updated.map(\.changed) == [["coordinate", "lon", "title"]])

        var back = MergedDelta()
        back.fold(self.part(left: [("a", Row(id: "a", values: ["title": "A", "lat": 1.0, "lon": 2.0]))]))
        back.fold(self.part(entered: [row]))
        #expect(back.proto(subscriptionID: "s").updated.map(\.changed) == [["title"]])
    }

    @Test("an image unknown to the fold reports every attribute, derived ones included")
    func unknownImage() {
        let row = Row(id: "a", values: ["title": "B", "lat": 1.0, "lon": 2.0])
        var merged = MergedDelta()
        merged.fold(self.part(left: [("a", nil)]))
        merged.fold(self.part(entered: [row]))
        #expect(merged.proto(subscriptionID: "s").updated.map(\.changed) == [["coordinate", "lat", "lon", "title"]])
    }

    @Test("a merged batch's hand-written bytes decode to the message built from its merged deltas", arguments: [false, true])
    func mergedBytes(replaced: Bool) throws {
        let a = Row(id: "a", values: ["title": "A", "lat": 1.0, "lon": 2.0, "note": .null, "n": 7])
        let b = Row(id: "b", values: ["title": "", "lat": -1.5, "lon": 0.0])
        let c = Row(id: "c", values: ["title": "C"])
        var first = self.part(entered: [a], left: [("c", c)], updated: [(b, ["lat"])])
        first.replaced = replaced
        var batch = QueuedBatch(seq: 5, parts: [first])
        let second = self.part(entered: [Row(id: "d", values: ["title": "D"])], updated: [(a, ["title"]), (b, ["lon"])])
        _ = batch.merge(seq: 300, parts: [second, BatchPart(subscriptionID: "t", delta: second.delta, replaced: false)])
        var expected = Meridian_V1_SyncResponse()
        expected.batch.seq = 300
        expected.batch.deltas = try batch.mergedOrder.map { try #require(batch.merged[$0]).proto(subscriptionID: $0) }
        #expect(expected.batch.deltas.count == 2)
        #expect(try Meridian_V1_SyncResponse(serializedBytes: batch.encoded()) == expected)
    }
}
