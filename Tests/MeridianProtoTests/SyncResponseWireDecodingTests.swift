import Foundation
import MeridianCore
import MeridianProto
import SwiftProtobuf
import Testing

/// The hand-written decoding of batches and snapshot chunks gives exactly swift-protobuf's message, or leaves the
/// message to swift-protobuf.
@Suite struct SyncResponseWireDecodingTests {
    static func value(_ random: inout SplitMix64) -> Meridian_V1_Value {
        var value = Meridian_V1_Value()
        switch Int.random(in: 0..<9, using: &random) {
        case 0: value.kind = .nullValue(.nullValue)
        case 1:
            value.kind = .intValue(
                [0, -1, .min, .max, Int64.random(in: -1000...1000, using: &random)][
                    Int.random(in: 0..<5, using: &random)])
        case 2:
            value.kind = .doubleValue(
                [0.0, -0.0, .infinity, -.infinity, 1e-300, Double.random(in: -1e9...1e9, using: &random)][
                    Int.random(in: 0..<6, using: &random)])
        case 3:
            value.kind = .stringValue(
                ["", "Café ☕️", String(repeating: "z", count: Int.random(in: 0...300, using: &random))][
                    Int.random(in: 0..<3, using: &random)])
        case 4: value.kind = .boolValue(Bool.random(using: &random))
        case 5:
            value.kind = .bytesValue(Data((0..<Int.random(in: 0...20, using: &random)).map { UInt8($0 * 13 % 256) }))
        case 6: value.kind = .timestampMicros(Int64.random(in: -1_000_000...1_000_000_000, using: &random))
        default: break  // a Value with no case
        }
        return value
    }

    static func row(_ random: inout SplitMix64) -> Meridian_V1_Row {
        var row = Meridian_V1_Row()
        row.id = Bool.random(using: &random) ? "row-\(Int.random(in: 0...999, using: &random))" : ""
        row.version = [0, 1, Int64.random(in: 2...(1 << 40), using: &random)][Int.random(in: 0..<3, using: &random)]
        for name in ["", "title", "qty", "price", "on", "blob", "at", "nul"] where Bool.random(using: &random) {
            row.values[name] = self.value(&random)
        }
        return row
    }

    static func response(_ random: inout SplitMix64) -> Meridian_V1_SyncResponse {
        var response = Meridian_V1_SyncResponse()
        if Bool.random(using: &random) {
            var batch = Meridian_V1_Batch()
            batch.seq = Int64.random(in: 0...1_000_000, using: &random)
            for d in 0..<Int.random(in: 0...3, using: &random) {
                var delta = Meridian_V1_SubscriptionDelta()
                delta.subscriptionID = d == 0 ? "" : "sub-\(d)"
                delta.entered = (0..<Int.random(in: 0...4, using: &random)).map { _ in self.row(&random) }
                delta.left = (0..<Int.random(in: 0...3, using: &random)).map { "gone-\($0)" } + (d == 1 ? [""] : [])
                delta.updated = (0..<Int.random(in: 0...3, using: &random)).map { i in
                    var update = Meridian_V1_RowUpdate()
                    if i != 2 { update.row = self.row(&random) }  // a RowUpdate without a row too
                    update.changed = ["price", "title", ""].filter { _ in Bool.random(using: &random) }
                    return update
                }
                delta.replaced = Bool.random(using: &random)
                delta.epoch = UInt32.random(in: 0...3, using: &random)
                delta.snapshot = Bool.random(using: &random)
                delta.snapshotSeq = delta.snapshot ? Int64.random(in: 0...1_000_000, using: &random) : 0
                batch.deltas.append(delta)
            }
            response.batch = batch
        } else {
            var chunk = Meridian_V1_SnapshotChunk()
            chunk.subscriptionID = "s"
            chunk.seq = Int64.random(in: 0...1_000_000, using: &random)
            chunk.rows = (0..<Int.random(in: 0...5, using: &random)).map { _ in self.row(&random) }
            chunk.last = Bool.random(using: &random)
            chunk.resnapshot = Bool.random(using: &random)
            chunk.chunkIndex = UInt32.random(in: 0...UInt32.max, using: &random)
            response.snapshotChunk = chunk
        }
        return response
    }

    /// Damages a message's bytes one way, at random: truncated, a byte flipped, a trailing field of the wrong wire type,
    /// a byte inserted — or, with `sometimesIntact`, left as they are.
    static func damage(_ bytes: inout [UInt8], _ random: inout SplitMix64, sometimesIntact: Bool = false) {
        switch Int.random(in: 0..<(sometimesIntact ? 5 : 4), using: &random) {
        case 0: bytes.removeLast(Int.random(in: 1...bytes.count, using: &random))
        case 1: bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
        case 2: bytes += [0x08, 0x01]  // SyncResponse field 1 as a varint: a wire-type mismatch
        case 3 where sometimesIntact: break
        default:
            bytes.insert(UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0..<bytes.count, using: &random))
        }
    }

    @Test("2,000 random batches and snapshot chunks decode by hand to swift-protobuf's message")
    func wellFormed() throws {
        var random = SplitMix64(seed: 3)
        for _ in 0..<2_000 {
            let message = Self.response(&random)
            let bytes: [UInt8] = try message.serializedBytes()
            let decoded = bytes.withUnsafeBytes { SyncResponseWireDecoding.decodeRows($0) }
            #expect(decoded != nil, "left to swift-protobuf: \(message)")
            #expect(decoded == message)
        }
    }

    @Test("a damaged message is decoded as swift-protobuf decodes it, or left to it; never differently")
    func damaged() throws {
        var random = SplitMix64(seed: 5)
        var handled = 0
        for _ in 0..<3_000 {
            var bytes: [UInt8] = try Self.response(&random).serializedBytes()
            guard !bytes.isEmpty else { continue }
            Self.damage(&bytes, &random)
            let reference = try? Meridian_V1_SyncResponse(serializedBytes: bytes)
            guard let decoded = bytes.withUnsafeBytes({ SyncResponseWireDecoding.decodeRows($0) }) else { continue }
            handled += 1
            #expect(reference != nil, "decoded by hand what swift-protobuf rejects: \(bytes)")
            // Compared as text (map entries sorted by key): damage can make a double NaN, which is not equal to itself.
            #expect(decoded.textFormatString() == reference?.textFormatString(), "\(bytes)")
        }
        #expect(handled > 0)
    }

    /// What a client gets for a message the slow way: swift-protobuf's (or the hand decoder's) message, its chunk's
    /// rows converted to Core rows; `nil` when it is no snapshot chunk or a row does not convert.
    static func convertedChunk(_ bytes: [UInt8]) -> (Meridian_V1_SnapshotChunk, [Row], [Int64])? {
        guard let message = try? Meridian_V1_SyncResponse(serializedBytes: bytes),
            case .snapshotChunk(var chunk)? = message.kind, let rows = try? chunk.rows.map({ try Row($0) })
        else { return nil }
        let versions = chunk.rows.map(\.version)
        chunk.rows = []
        return (chunk, rows, versions)
    }

    @Test("2,000 random snapshot chunks read straight into Core rows give the converted message's rows; batches don't")
    func coreChunks() throws {
        var random = SplitMix64(seed: 11)
        var chunks = 0
        for _ in 0..<2_000 {
            let message = Self.response(&random)
            let bytes: [UInt8] = try message.serializedBytes()
            let core = bytes.withUnsafeBytes { SyncResponseWireDecoding.coreSnapshotChunk($0) { ($0, $1) } }
            guard case .snapshotChunk = message.kind else {
                #expect(core == nil, "a batch read as a chunk: \(message)")
                continue
            }
            chunks += 1
            let reference = Self.convertedChunk(bytes)
            #expect(core != nil && reference != nil, "left to the slow path: \(message)")
            guard let core, let reference else { continue }
            #expect(core.chunk == reference.0)
            #expect(core.rows.map(\.0) == reference.1)
            #expect(core.rows.map(\.1) == reference.2)
        }
        #expect(chunks > 500)
    }

    /// A batch decoded by swift-protobuf, each delta's rows converted to Core rows (with versions); `nil` when it is
    /// no batch or a row does not convert (an update without a row included).
    static func convertedBatch(_ bytes: [UInt8]) -> (
        Meridian_V1_Batch, [(Meridian_V1_SubscriptionDelta, [Row], [Int64], [Row], [Int64])]
    )? {
        guard let message = try? Meridian_V1_SyncResponse(serializedBytes: bytes),
            case .batch(var batch)? = message.kind
        else { return nil }
        var deltas: [(Meridian_V1_SubscriptionDelta, [Row], [Int64], [Row], [Int64])] = []
        for var delta in batch.deltas {
            guard let entered = try? delta.entered.map({ try Row($0) }),
                let updated = try? delta.updated.map({ try $0.decoded() })
            else { return nil }
            let enteredVersions = delta.entered.map(\.version)
            delta.entered = []
            delta.updated = []
            deltas.append((delta, entered, enteredVersions, updated.map(\.row), updated.map(\.version)))
        }
        batch.deltas = []
        return (batch, deltas)
    }

    /// Whether the Core batch reader's result is the converted batch's.
    static func same(
        _ core: (
            batch: Meridian_V1_Batch,
            deltas: [(delta: Meridian_V1_SubscriptionDelta, entered: [(Row, Int64)], updated: [(Row, Int64)])]
        ),
        _ reference: (Meridian_V1_Batch, [(Meridian_V1_SubscriptionDelta, [Row], [Int64], [Row], [Int64])])
    ) -> Bool {
        core.batch == reference.0 && core.deltas.count == reference.1.count
            && zip(core.deltas, reference.1).allSatisfy { c, r in
                c.delta == r.0 && c.entered.map(\.0) == r.1 && c.entered.map(\.1) == r.2 && c.updated.map(\.0) == r.3
                    && c.updated.map(\.1) == r.4
            }
    }

    @Test(
        "a row naming an attribute twice keeps the last value, as a protobuf map does, whether the name is new or not")
    func repeatedNames() throws {
        // Two rows' bytes concatenated parse as one row (protobuf merges them): a map entry repeated.
        func row(_ id: String, _ values: [String: Meridian_V1_Value]) throws -> [UInt8] {
            var row = Meridian_V1_Row()
            row.id = id
            row.values = values
            return try row.serializedBytes()
        }
        let one = Meridian_V1_Value.with { $0.intValue = 1 }
        let two = Meridian_V1_Value.with { $0.intValue = 2 }
        let rows = [
            try row("a", ["x": one]),
            // "y" new to the message's names, given twice; "x" known, given twice.
            try row("b", ["y": one]) + row("", ["x": one]) + row("", ["y": two]) + row("", ["x": two]),
        ]
        var chunk: [UInt8] = []
        for bytes in rows {
            chunk += [0x1A] + Self.varint(bytes.count) + bytes  // SnapshotChunk.rows is field 3
        }
        let message = [0x12] + Self.varint(chunk.count) + chunk  // SyncResponse.snapshot_chunk is field 2
        let core = try #require(message.withUnsafeBytes { SyncResponseWireDecoding.coreSnapshotChunk($0) { ($0, $1) } })
        let reference = try #require(Self.convertedChunk(message))
        #expect(core.rows.map(\.0) == reference.1)
        #expect(
            core.rows.map(\.0) == [
                Row(id: "a", values: ["x": .int(1)]), Row(id: "b", values: ["x": .int(2), "y": .int(2)]),
            ])
    }

    static func varint(_ value: Int) -> [UInt8] {
        var value = UInt64(value)
        var bytes: [UInt8] = []
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        return bytes + [UInt8(value)]
    }

    @Test("2,000 random batches read straight into Core rows give the converted message's rows; chunks don't")
    func coreBatches() throws {
        var random = SplitMix64(seed: 17)
        var batches = 0
        var slow = 0
        for _ in 0..<2_000 {
            let message = Self.response(&random)
            let bytes: [UInt8] = try message.serializedBytes()
            let core = bytes.withUnsafeBytes { SyncResponseWireDecoding.coreBatch($0) { ($0, $1) } }
            guard case .batch = message.kind else {
                #expect(core == nil, "a chunk read as a batch: \(message)")
                continue
            }
            batches += 1
            let reference = Self.convertedBatch(bytes)
            // An update without a row does not convert: both leave it (the slow path says what is wrong).
            #expect((core == nil) == (reference == nil), "\(message)")
            guard let core, let reference else {
                slow += 1
                continue
            }
            #expect(Self.same(core, reference), "\(message)")
        }
        #expect(batches > 500 && slow < batches)
    }

    @Test("a damaged batch is read into Core rows as decoding and converting reads it, or left to them")
    func damagedCoreBatches() throws {
        var random = SplitMix64(seed: 19)
        var handled = 0
        for _ in 0..<3_000 {
            let message = Self.response(&random)
            guard case .batch = message.kind else { continue }
            var bytes: [UInt8] = try message.serializedBytes()
            guard !bytes.isEmpty else { continue }
            Self.damage(&bytes, &random)
            guard let core = bytes.withUnsafeBytes({ SyncResponseWireDecoding.coreBatch($0) { ($0, $1) } }) else {
                continue
            }
            handled += 1
            let reference = Self.convertedBatch(bytes)
            #expect(reference != nil, "read straight what decoding and converting rejects: \(bytes)")
            if let reference { #expect(Self.same(core, reference), "\(bytes)") }
        }
        #expect(handled > 0)
    }

    @Test("a damaged snapshot chunk is read into Core rows as decoding and converting reads it, or left to them")
    func damagedCoreChunks() throws {
        var random = SplitMix64(seed: 13)
        var handled = 0
        for _ in 0..<3_000 {
            var message = Self.response(&random)
            if case .batch = message.kind { continue }
            if Int.random(in: 0..<10, using: &random) == 0, !message.snapshotChunk.rows.isEmpty {
                // A NaN: decodes, but does not convert.
                message.snapshotChunk.rows[0].values["nan"] = .with { $0.doubleValue = .nan }
            }
            var bytes: [UInt8] = try message.serializedBytes()
            guard !bytes.isEmpty else { continue }
            Self.damage(&bytes, &random, sometimesIntact: true)  // intact: with its NaN, if any
            guard let core = bytes.withUnsafeBytes({ SyncResponseWireDecoding.coreSnapshotChunk($0) { ($0, $1) } })
            else { continue }
            handled += 1
            let reference = Self.convertedChunk(bytes)
            #expect(reference != nil, "read straight what decoding and converting rejects: \(bytes)")
            #expect(core.chunk == reference?.0 && core.rows.map(\.0) == reference?.1, "\(bytes)")
        }
        #expect(handled > 0)
    }

    static func queryResponse(_ random: inout SplitMix64) -> Meridian_V1_QueryResponse {
        var response = Meridian_V1_QueryResponse()
        response.seq = [0, 1, Int64.random(in: 2...(1 << 40), using: &random)][Int.random(in: 0..<3, using: &random)]
        response.rows = (0..<Int.random(in: 0...6, using: &random)).map { _ in self.row(&random) }
        response.last = Bool.random(using: &random)
        return response
    }

    /// A query chunk decoded by swift-protobuf, its rows converted to Core rows (with versions); `nil` when it does
    /// not decode or a row does not convert.
    static func convertedQueryChunk(_ bytes: [UInt8]) -> (Int64, [Row], [Int64], Bool)? {
        guard let message = try? Meridian_V1_QueryResponse(serializedBytes: bytes),
            let rows = try? message.rows.map({ try Row($0) })
        else { return nil }
        return (message.seq, rows, message.rows.map(\.version), message.last)
    }

    @Test("2,000 random query chunks, whole or damaged, read into Core rows as decoding and converting reads them")
    func coreQueryChunks() throws {
        var random = SplitMix64(seed: 17)
        var intact = 0
        var damaged = 0
        for round in 0..<4_000 {
            var message = Self.queryResponse(&random)
            if Int.random(in: 0..<10, using: &random) == 0, !message.rows.isEmpty {
                // A NaN: decodes, but does not convert.
                message.rows[0].values["nan"] = .with { $0.doubleValue = .nan }
            }
            var bytes: [UInt8] = try message.serializedBytes()
            let damage = round % 2 == 1 && !bytes.isEmpty
            if damage { Self.damage(&bytes, &random) }
            let core = bytes.withUnsafeBytes { SyncResponseWireDecoding.coreQueryChunk($0) { ($0, $1) } }
            let reference = Self.convertedQueryChunk(bytes)
            if !damage, reference != nil {
                // Every chunk that converts is read straight.
                #expect(core != nil, "left to the slow path: \(message)")
            }
            guard let core else { continue }
            if damage { damaged += 1 } else { intact += 1 }
            #expect(reference != nil, "read straight what decoding and converting rejects: \(bytes)")
            guard let reference else { continue }
            #expect(core.seq == reference.0 && core.last == reference.3, "\(bytes)")
            #expect(core.rows.map(\.0) == reference.1 && core.rows.map(\.1) == reference.2, "\(bytes)")
        }
        #expect(intact > 1_500 && damaged > 0)
        // The deserializer: rows read straight, or the generated message for what it does not take.
        var unknown: [UInt8] = try Self.queryResponse(&random).serializedBytes()
        unknown += [0x20, 0x01]  // field 4: unknown to the reader, skipped by swift-protobuf
        guard case .message = try QueryChunkDeserializer().deserialize(unknown) else {
            Issue.record("an unknown field was read by hand")
            return
        }
        guard
            case .rows(_, let rows, true) = try QueryChunkDeserializer().deserialize([
                0x12, 0x02, 0x0A, 0x00, 0x18, 0x01,
            ])
        else {
            Issue.record("a plain chunk was not read by hand")
            return
        }
        #expect(rows.map(\.id) == [""])
    }

    @Test("other messages, and the deserializer's answer to garbage")
    func others() throws {
        var welcome = Meridian_V1_SyncResponse()
        welcome.welcome.seq = 7
        welcome.welcome.schemaFingerprint = "f"
        let bytes: [UInt8] = try welcome.serializedBytes()
        #expect(bytes.withUnsafeBytes { SyncResponseWireDecoding.decodeRows($0) } == nil)
        #expect(try bytes.withUnsafeBytes { try SyncResponseWireDecoding.decode($0) } == welcome)
        #expect(throws: (any Error).self) {
            try [0x1A, 0x05, 0x01].withUnsafeBytes { try SyncResponseWireDecoding.decode($0) }
        }
    }
}
