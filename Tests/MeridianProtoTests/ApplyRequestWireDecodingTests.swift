import Foundation
import MeridianCore
import MeridianProto
import SwiftProtobuf
import Testing

/// The hand-written decoding of Apply requests gives exactly swift-protobuf's message, or leaves the message to
/// swift-protobuf.
@Suite struct ApplyRequestWireDecodingTests {
    static func request(_ random: inout SplitMix64) -> Meridian_V1_ApplyRequest {
        var request = Meridian_V1_ApplyRequest()
        for _ in 0..<Int.random(in: 0...4, using: &random) {
            var operation = Meridian_V1_Operation()
            operation.kind = Meridian_V1_Operation.Kind(rawValue: Int.random(in: 0...4, using: &random))!
            operation.entity = ["", "Point", "Café"][Int.random(in: 0..<3, using: &random)]
            if Bool.random(using: &random) {
                operation.id = Bool.random(using: &random) ? "r\(Int.random(in: 0...99, using: &random))" : ""
            }
            for name in ["", "title", "qty", "price", "on", "blob", "at", "nul"] where Bool.random(using: &random) {
                operation.values[name] = SyncResponseWireDecodingTests.value(&random)
            }
            if Bool.random(using: &random) {
                operation.expectedVersion =
                    [0, 1, -1, Int64.random(in: 2...(1 << 40), using: &random)][
                        Int.random(in: 0..<4, using: &random)]
            }
            request.operations.append(operation)
        }
        request.conflictPolicy = Meridian_V1_ConflictPolicy(rawValue: Int.random(in: 0...2, using: &random))!
        if Bool.random(using: &random) { request.clientTag = "tag-\(Int.random(in: 0...9, using: &random))" }
        if Bool.random(using: &random) { request.idempotencyKey = "key ☕️ \(Int.random(in: 0...9, using: &random))" }
        request.seqOnly = Bool.random(using: &random)
        return request
    }

    @Test("2,000 random requests decode by hand to swift-protobuf's message")
    func wellFormed() throws {
        var random = SplitMix64(seed: 11)
        for _ in 0..<2_000 {
            let message = Self.request(&random)
            let bytes: [UInt8] = try message.serializedBytes()
            let decoded = bytes.withUnsafeBytes { ApplyRequestWireDecoding.request($0) }
            #expect(decoded != nil, "left to swift-protobuf: \(message)")
            #expect(decoded == message)
        }
    }

    @Test("a damaged request is decoded as swift-protobuf decodes it, or left to it; never differently")
    func damaged() throws {
        var random = SplitMix64(seed: 13)
        var handled = 0
        for _ in 0..<3_000 {
            var bytes: [UInt8] = try Self.request(&random).serializedBytes()
            guard !bytes.isEmpty else { continue }
            switch Int.random(in: 0..<5, using: &random) {
            case 0: bytes.removeLast(Int.random(in: 1...bytes.count, using: &random))
            case 1: bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
            case 2: bytes += [0x10, 0x07]  // conflict_policy 7: a value the schema does not name
            case 3: bytes += [0x0A, 0x02, 0x08, 0x09]  // an operation of kind 9
            default:
                bytes.insert(
                    UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0..<bytes.count, using: &random))
            }
            let reference = try? Meridian_V1_ApplyRequest(serializedBytes: bytes)
            guard let decoded = bytes.withUnsafeBytes({ ApplyRequestWireDecoding.request($0) }) else {
                // Left to swift-protobuf: the deserializer answers exactly as it does.
                let fallback = try? bytes.withUnsafeBytes { try ApplyRequestWireDecoding.decode($0) }
                #expect(fallback?.textFormatString() == reference?.textFormatString())
                continue
            }
            handled += 1
            #expect(reference != nil, "decoded by hand what swift-protobuf rejects: \(bytes)")
            // Compared as text (map entries sorted by key): damage can make a double NaN, which is not equal to itself.
            #expect(decoded.textFormatString() == reference?.textFormatString(), "\(bytes)")
        }
        #expect(handled > 0)
    }

    @Test("unknown enum values and fields are left to swift-protobuf, which keeps them")
    func leftToSwiftProtobuf() throws {
        let policy: [UInt8] = [0x10, 0x07]
        #expect(policy.withUnsafeBytes { ApplyRequestWireDecoding.request($0) } == nil)
        let decoded = try policy.withUnsafeBytes { try ApplyRequestWireDecoding.decode($0) }
        #expect(decoded.conflictPolicy == .UNRECOGNIZED(7))
        let unknownField: [UInt8] = [0x30, 0x01]  // field 6: none of ApplyRequest's
        #expect(unknownField.withUnsafeBytes { ApplyRequestWireDecoding.request($0) } == nil)
        #expect(throws: (any Error).self) {
            try [0x0A, 0x05, 0x01].withUnsafeBytes { try ApplyRequestWireDecoding.decode($0) }
        }
    }
}
