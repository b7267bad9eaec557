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
        var seqOnly: Bool

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
            self.seqOnly = transaction.seqOnly
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

    @Test("an import's plain insert is read straight, its values kept compactly")
    func plainInsert() throws {
        let message = Meridian_V1_ApplyRequest(
            [.insert("Bench", id: "r1", ["title": "row 1", "stamp": .int(1), "qty": .int(1)])])
        let bytes: [UInt8] = try message.serializedBytes()
        let plain = try #require(bytes.withUnsafeBytes { ApplyRequestWireDecoding.plainTransaction($0) })
        let operation = try #require(try plain.operations.get().first)
        #expect(
            operation == WriteOperation.insert("Bench", id: "r1", ["title": "row 1", "stamp": .int(1), "qty": .int(1)]))
        #expect(operation.withCompactValues { layout, values in layout.count == 3 && values.count == 3 } == true)
        #expect(plain.idByteCounts == [2])
    }

    @Test("operations of one shape share one layout of their names; a name given twice keeps its last value")
    func layouts() throws {
        let message = Meridian_V1_ApplyRequest([
            .insert("Bench", id: "r1", ["title": "a", "qty": .int(1)]),
            .insert("Bench", id: "r2", ["title": "b", "qty": .int(2)]),
            .update("Bench", id: "r1", ["qty": .int(3)]),
        ])
        let bytes: [UInt8] = try message.serializedBytes()
        let plain = try #require(bytes.withUnsafeBytes { ApplyRequestWireDecoding.plainTransaction($0) })
        let operations = try plain.operations.get()
        #expect(operations == (try ApplyTransaction(message).operations.get()))
        let layouts = operations.map { $0.withCompactValues { layout, _ in ObjectIdentifier(layout) } }
        #expect(layouts[0] != nil && layouts[0] == layouts[1] && layouts[2] != layouts[0])

        // One operation whose map names `qty` twice (two messages' bytes merged, as protobuf allows): the last wins.
        var first = Meridian_V1_Operation()
        first.kind = .insert
        first.entity = "Bench"
        first.id = "r1"
        first.values = ["qty": Meridian_V1_Value(.int(1)), "title": Meridian_V1_Value(.string("a"))]
        var second = Meridian_V1_Operation()
        second.values = ["qty": Meridian_V1_Value(.int(2))]
        let operationBytes: [UInt8] = try first.serializedBytes() + second.serializedBytes()
        var request: [UInt8] = [0x0A]
        var length = UInt64(operationBytes.count)
        while length >= 0x80 {
            request.append(UInt8(truncatingIfNeeded: length) | 0x80)
            length >>= 7
        }
        request.append(UInt8(length))
        request += operationBytes
        let decoded = try Meridian_V1_ApplyRequest(serializedBytes: request)
        let merged = try #require(request.withUnsafeBytes { ApplyRequestWireDecoding.plainTransaction($0) })
        #expect(try merged.operations.get() == (try ApplyTransaction(decoded).operations.get()))
        #expect(try merged.operations.get().first?.values == ["qty": .int(2), "title": .string("a")])
    }

    @Test("operations of one shape whose names come in another order share its layout, each value at its own name")
    func reorderedNames() throws {
        // Map entries in the order given (swift-protobuf writes a map in its dictionary's order, which varies).
        func field(_ number: UInt8, _ body: [UInt8]) -> [UInt8] { [number << 3 | 2, UInt8(body.count)] + body }
        func string(_ number: UInt8, _ text: String) -> [UInt8] { field(number, Array(text.utf8)) }
        func operation(_ id: String, _ entries: [(String, Int64)]) -> [UInt8] {
            var bytes: [UInt8] = [0x08, 0x01] + string(2, "Bench") + string(3, id)
            for (name, value) in entries {
                bytes += field(4, string(1, name) + field(2, [0x10, UInt8(value)]))
            }
            return bytes
        }
        let operations: [[(String, Int64)]] = [
            [("a", 1), ("b", 2), ("c", 3)],
            [("c", 6), ("a", 4), ("b", 5)],
            [("b", 8), ("c", 9), ("a", 7)],
            [("a", 10), ("b", 11), ("c", 12)],
            // As many names as the layout, one of them twice: the last value wins, and the layout is not shared.
            [("b", 13), ("a", 14), ("b", 15)],
            [("a", 16), ("c", 18), ("b", 17)],
        ]
        let request = operations.enumerated().flatMap { field(1, operation("r\($0)", $1)) }
        let plain = try #require(request.withUnsafeBytes { ApplyRequestWireDecoding.plainTransaction($0) })
        let read = try plain.operations.get()
        let decoded = try ApplyTransaction(Meridian_V1_ApplyRequest(serializedBytes: request)).operations.get()
        #expect(read == decoded)
        for (i, entries) in operations.enumerated() {
            var expected: [String: Value] = [:]
            for (name, value) in entries { expected[name] = .int(value) }
            #expect(read[i].values == expected, "operation \(i)")
        }
        let layouts = read.map { $0.withCompactValues { layout, _ in ObjectIdentifier(layout) } }
        #expect(layouts[0] != nil && [1, 2, 3, 5].allSatisfy { layouts[$0] == layouts[0] }, "\(layouts)")
        #expect(layouts[4] != layouts[0])
    }
}
