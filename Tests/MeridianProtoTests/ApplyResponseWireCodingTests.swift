import Foundation
import MeridianCore
import MeridianProto
import SwiftProtobuf
import Testing

/// The hand-written coding of Apply responses: the bytes are swift-protobuf's, and whatever bytes arrive decode to
/// swift-protobuf's message or fail as it does.
@Suite struct ApplyResponseWireCodingTests {
    @Test("2,000 random responses: swift-protobuf's exact bytes, and decoded back to the same message")
    func randomResponses() throws {
        var random = SplitMix64(seed: 23)
        for _ in 0..<2_000 {
            let message = Self.response(&random)
            let bytes = try ApplyResponseWireCoding.encode(message)
            #expect(bytes == (try message.serializedBytes() as [UInt8]), "\(message)")
            #expect(try bytes.withUnsafeBytes { try ApplyResponseWireCoding.decode($0) } == message, "\(message)")
        }
    }

    @Test(
        "20,000 damaged responses (truncated, bytes changed) decode as swift-protobuf decodes them, or fail as it does")
    func damagedResponses() throws {
        var random = SplitMix64(seed: 29)
        for _ in 0..<20_000 {
            var bytes: [UInt8] = try Self.response(&random).serializedBytes()
            if bytes.isEmpty { continue }
            switch Int.random(in: 0..<3, using: &random) {
            case 0: bytes.removeLast(Int.random(in: 1...bytes.count, using: &random))
            case 1: bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            default:
                bytes.insert(
                    UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0...bytes.count, using: &random))
            }
            let reference = Result { try Meridian_V1_ApplyResponse(serializedBytes: bytes) }
            let byHand = Result { try bytes.withUnsafeBytes { try ApplyResponseWireCoding.decode($0) } }
            switch (reference, byHand) {
            case (.success(let expected), .success(let decoded)): #expect(decoded == expected, "\(bytes)")
            case (.failure, .failure): break
            default: Issue.record("swift-protobuf: \(reference); by hand: \(byHand); bytes \(bytes)")
            }
        }
    }

    @Test("a response with unknown fields is left to swift-protobuf both ways, which keeps them")
    func unknownFields() throws {
        var response = Meridian_V1_ApplyResponse()
        var result = Meridian_V1_ApplyResult()
        result.seq = 4
        response.result = result
        // Field 9, varint 1: unknown to this schema.
        try response.merge(serializedBytes: [0x48, 0x01] as [UInt8])
        let bytes = try ApplyResponseWireCoding.encode(response)
        #expect(bytes == (try response.serializedBytes() as [UInt8]))
        let decoded = try bytes.withUnsafeBytes { try ApplyResponseWireCoding.decode($0) }
        #expect(decoded.unknownFields.data == Data([0x48, 0x01]))
        #expect(
            ApplyResponseWireCoding.response(UnsafeRawBufferPointer(start: nil, count: 0))
                == Meridian_V1_ApplyResponse())
    }

    /// A random response: mostly committed results (0 to 40 rows, every kind, empty and non-ASCII strings, 0 and
    /// negative numbers, an unknown kind now and then), sometimes a rejection or no outcome.
    static func response(_ random: inout SplitMix64) -> Meridian_V1_ApplyResponse {
        let texts = ["", "Point", "r1", "Café ☕️", "a-much-longer-identifier-of-the-row-0123456789", "x"]
        var response = Meridian_V1_ApplyResponse()
        if Bool.random(using: &random) { response.clientTag = texts.randomElement(using: &random)! }
        switch Int.random(in: 0..<10, using: &random) {
        case 0:
            response.error = Meridian_V1_ErrorDetail(.conflict, texts.randomElement(using: &random)!)
        case 1:
            break
        default:
            var result = Meridian_V1_ApplyResult()
            result.seq = [0, 1, 127, 128, Int64.max, -1, Int64.random(in: 0...1_000_000, using: &random)]
                .randomElement(using: &random)!
            for _ in 0..<Int.random(in: 0...40, using: &random) {
                var row = Meridian_V1_WrittenRow()
                row.entity = texts.randomElement(using: &random)!
                row.id = texts.randomElement(using: &random)!
                row.version = [0, 1, 300, -5, Int64.random(in: 0...Int64.max, using: &random)]
                    .randomElement(using: &random)!
                row.kind =
                    Int.random(in: 0..<20, using: &random) == 0
                    ? .UNRECOGNIZED(9) : Meridian_V1_Operation.Kind(rawValue: Int.random(in: 0...4, using: &random))!
                result.rows.append(row)
            }
            response.result = result
        }
        return response
    }
}
