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

    @Test("2,000 random transactions of Core operations written straight: the bytes of their generated message")
    func straightFromCore() throws {
        var random = SplitMix64(seed: 19)
        for _ in 0..<2_000 {
            var operations: [WriteOperation] = []
            for _ in 0..<Int.random(in: 0...5, using: &random) {
                operations.append(Self.randomOperation(&random))
            }
            let policy = Bool.random(using: &random) ? ConflictPolicy.storeWins : .clientWins
            let key = Bool.random(using: &random) ? "" : "key ☕️"
            let tag = Bool.random(using: &random) ? "" : "tag-1"
            let seqOnly = Bool.random(using: &random)
            var message = Meridian_V1_ApplyRequest(operations, policy: policy, idempotencyKey: key)
            message.clientTag = tag
            message.seqOnly = seqOnly
            let straight = ApplyRequestWireEncoding.encode(
                operations, policy: policy, clientTag: tag, idempotencyKey: key, seqOnly: seqOnly)
            #expect(straight == (try ApplyRequestWireEncoding.encode(message)), "\(operations)")
            #expect(try Meridian_V1_ApplyRequest(serializedBytes: straight) == message)
        }
    }

    /// A random Core operation: any kind, entity and id (empty ones too), some of `names` set to values of every kind.
    static func randomOperation(_ random: inout SplitMix64) -> WriteOperation {
        let names = ["title", "qty", "price", "on", "blob", "at", "note", "", "é"]
        var values: [String: Value] = [:]
        for name in names where Int.random(in: 0..<3, using: &random) == 0 {
            values[name] =
                switch Int.random(in: 0..<7, using: &random) {
                case 0: .null
                case 1: .int([0, -1, 1 << 40, .min, .max].randomElement(using: &random)!)
                case 2: .double([0, -0.0, 1.5, .infinity, -1e300].randomElement(using: &random)!)
                case 3:
                    .string(
                        ["", "x", "Café ☕️", String(repeating: "a", count: 200)].randomElement(using: &random)!)
                case 4: .bool(Bool.random(using: &random))
                case 5: .bytes([[], [0], [255, 1, 2]].randomElement(using: &random)!)
                default:
                    .timestamp(
                        Timestamp(microseconds: Int64.random(in: -(1 << 50)...(1 << 50), using: &random)))
                }
        }
        let kind = [WriteOperation.Kind.insert, .update, .upsert, .delete].randomElement(using: &random)!
        return WriteOperation(
            kind: kind, entity: ["", "Point", "Café"].randomElement(using: &random)!,
            id: [nil, "", "r1", "a-long-identifier-0123456789"].randomElement(using: &random)!,
            values: values,
            expectedVersion: [nil, 0, -1, 7, .max].randomElement(using: &random)!)
    }

    /// A request large enough to be encoded in pieces at once is the same bytes in one piece and in several, and those
    /// of its generated message, wherever the pieces' edges fall.
    @Test("large transactions encoded in pieces at once: the bytes of one piece and of their generated message")
    func largeInPieces() throws {
        var random = SplitMix64(seed: 23)
        let threshold = ApplyRequestWireEncoding.concurrentOperations
        for count in [0, 1, 5, threshold - 1, threshold, threshold + 1, 2 * threshold + 3, 3 * threshold + 7] {
            let operations = (0..<count).map { _ in Self.randomOperation(&random) }
            let key = Bool.random(using: &random) ? "" : "key ☕️"
            var message = Meridian_V1_ApplyRequest(operations, policy: .clientWins, idempotencyKey: key)
            message.seqOnly = true
            let expected = try ApplyRequestWireEncoding.encode(message)
            #expect(
                ApplyRequestWireEncoding.encode(operations, policy: .clientWins, idempotencyKey: key, seqOnly: true)
                    == expected, "\(count) operations, as the CLI encodes them")
            for pieces in 1...4 {
                let bytes = ApplyRequestWireEncoding.encode(
                    operations, policy: .clientWins, clientTag: "", idempotencyKey: key, seqOnly: true, pieces: pieces)
                #expect(bytes == expected, "\(count) operations in \(pieces) pieces")
            }
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
