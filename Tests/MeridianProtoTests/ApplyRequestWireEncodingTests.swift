import Foundation
import MeridianCore
import MeridianProto
import SwiftProtobuf
import Testing

/// The hand-written encoding of Apply requests gives bytes that decode to exactly the message encoded, of exactly
/// swift-protobuf's size.
@Suite struct ApplyRequestWireEncodingTests {
    @Test("2,000 random requests encoded by hand decode to the same message, as long as swift-protobuf's bytes")
    func randomRequests() throws {
        var random = SplitMix64(seed: 17)
        for _ in 0..<2_000 {
            let message = ApplyRequestWireDecodingTests.request(&random)
            let bytes = try ApplyRequestWireEncoding.encode(message)
            #expect(try Meridian_V1_ApplyRequest(serializedBytes: bytes) == message, "\(message)")
            let reference: [UInt8] = try message.serializedBytes()
            #expect(bytes.count == reference.count, "\(message)")
        }
    }

    @Test("the requests the client library builds from Core operations, with every kind of value")
    func fromCoreOperations() throws {
        let operations: [WriteOperation] = [
            .insert(
                "Point", id: "a",
                [
                    "title": "Café ☕️", "qty": .int(-7), "price": .double(-0.0), "on": .bool(false),
                    "blob": .bytes([0, 255]), "at": .timestamp(Timestamp(microseconds: -1)), "note": .null,
                ]),
            .update("Point", id: "a", ["title": ""], expectedVersion: 0),
            .delete("Point", id: "", expectedVersion: 3),
        ]
        for policy in [ConflictPolicy.storeWins, .clientWins] {
            let message = Meridian_V1_ApplyRequest(operations, policy: policy, idempotencyKey: "k:1")
            let bytes = try ApplyRequestWireEncoding.encode(message)
            #expect(try Meridian_V1_ApplyRequest(serializedBytes: bytes) == message)
        }
    }

    @Test("a message with unknown fields is left to swift-protobuf, which keeps them")
    func unknownFields() throws {
        var operation = Meridian_V1_Operation()
        operation.kind = .insert
        operation.entity = "Point"
        var request = Meridian_V1_ApplyRequest()
        request.operations = [operation]
        // Field 9, varint 1: unknown to this schema.
        try request.merge(serializedBytes: [0x48, 0x01] as [UInt8])
        let bytes = try ApplyRequestWireEncoding.encode(request)
        #expect(bytes == (try request.serializedBytes() as [UInt8]))
        #expect(try Meridian_V1_ApplyRequest(serializedBytes: bytes).unknownFields.data == Data([0x48, 0x01]))
    }
}
