import MeridianCore
import MeridianProto
import SwiftProtobuf
import Testing

/// Apply requests read straight into Core operations give exactly what decoding the message and converting it gives:
/// the same operations, policy, id lengths, tag and key, or — left to that general way — the same error.
@Suite struct ApplyTransactionTests {
    /// What a transaction holds, comparable: errors by their text and operation index.
    struct Seen: Equatable, CustomStringConvertible {
        var operations: [WriteOperation]?
        var operationsError: String?
        var policy: ConflictPolicy?
        var policyError: String?
        var idByteCounts: [Int]
        var clientTag: String
        var idempotencyKey: String

        init(_ transaction: ApplyTransaction) {
            switch transaction.operations {
            case .success(let operations): self.operations = operations
            case .failure(let error): self.operationsError = "\(error) at \(String(describing: error.operationIndex))"
            }
            switch transaction.policy {
            case .success(let policy): self.policy = policy
            case .failure(let error): self.policyError = "\(error)"
            }
            self.idByteCounts = transaction.idByteCounts
            self.clientTag = transaction.clientTag
            self.idempotencyKey = transaction.idempotencyKey
        }

        var description: String {
            "\(self.operations.map { "\($0)" } ?? self.operationsError!) \(self.policyError ?? "") \(self.idByteCounts)"
        }
    }

    @Test("3,000 random requests, valid and not: read straight or left to the general way, the same transaction")
    func randomRequests() throws {
        var random = SplitMix64(seed: 31)
        var straight = 0
        for _ in 0..<3_000 {
            let message = ApplyRequestWireDecodingTests.request(&random)
            let bytes: [UInt8] = try message.serializedBytes()
            let general = Seen(ApplyTransaction(message))
            if let plain = bytes.withUnsafeBytes({ ApplyRequestWireDecoding.plainTransaction($0) }) {
                straight += 1
                #expect(Seen(plain) == general, "\(message)")
            } else {
                #expect(general.operationsError != nil || general.policyError != nil, "a valid request: \(message)")
            }
            #expect(Seen(try bytes.withUnsafeBytes { try ApplyRequestWireDecoding.transaction($0) }) == general)
        }
        #expect(straight > 300, "the requests read straight: \(straight)")
    }

    @Test("5,000 damaged requests: the same transaction as the general way, or the same failure to decode")
    func damagedRequests() throws {
        var random = SplitMix64(seed: 37)
        for _ in 0..<5_000 {
            var bytes: [UInt8] = try ApplyRequestWireDecodingTests.request(&random).serializedBytes()
            guard !bytes.isEmpty else { continue }
            switch Int.random(in: 0..<3, using: &random) {
            case 0: bytes.removeLast(Int.random(in: 1...bytes.count, using: &random))
            case 1: bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
            default:
                bytes.insert(
                    UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0..<bytes.count, using: &random))
            }
            let general = (try? Meridian_V1_ApplyRequest(serializedBytes: bytes)).map { Seen(ApplyTransaction($0)) }
            let read = try? bytes.withUnsafeBytes { try ApplyRequestWireDecoding.transaction($0) }
            #expect(read.map(Seen.init) == general, "\(bytes)")
        }
    }

    @Test("an import's plain insert is read straight, its map sized to its entries")
    func plainInsert() throws {
        let message = Meridian_V1_ApplyRequest(
            [.insert("Bench", id: "r1", ["title": "row 1", "stamp": .int(1), "qty": .int(1)])])
        let bytes: [UInt8] = try message.serializedBytes()
        let plain = try #require(bytes.withUnsafeBytes { ApplyRequestWireDecoding.plainTransaction($0) })
        let operation = try #require(try plain.operations.get().first)
        #expect(
            operation == WriteOperation.insert("Bench", id: "r1", ["title": "row 1", "stamp": .int(1), "qty": .int(1)]))
        #expect(operation.values.capacity < 8)
        #expect(plain.idByteCounts == [2])
    }
}
