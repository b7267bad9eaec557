import MeridianCore
import MeridianProto
import SwiftProtobuf
import Testing

/// The hand-written delta encoding decodes to exactly the message swift-protobuf builds from the same values.
@Suite struct DeltaWireEncodingTests {
    /// ``dictionaryRows`` and the same rows in the compact form a store's read or a decoded message gives (a layout
    /// naming an absent attribute too, so a `.null` position is skipped), and a compact row whose one name is long
    /// enough for a two-byte length: the compact form is written by position from its layout's key bytes. The compact
    /// rows twice: with their kinds in the buffer, and with a layout shaped like them (payloads only).
    static let rows: [(row: Row, version: Int64)] =
        dictionaryRows + dictionaryRows.map { (compact($0.row), $0.version) }
        + dictionaryRows.map { (compact($0.row, shaped: true), $0.version) } + [
            (compact(Row(id: "k", values: [String(repeating: "n", count: 200): .int(1)])), 2)
        ]

    static func compact(_ row: Row, shaped: Bool = false) -> Row {
        let names = ["absent"] + row.values.keys.sorted()
        let values = names.map { row.values[$0] ?? .null }
        let layout = RowLayout(names: names)
        return Row(id: row.id, layout: shaped ? layout.shaped(like: values) : layout, values: values)
    }

    static let dictionaryRows: [(row: Row, version: Int64)] = [
        (
            Row(
                id: "a",
                values: [
                    "title": .string("Café ☕️"), "empty": .string(""), "qty": .int(0), "neg": .int(-5),
                    "big": .int(.max), "small": .int(.min), "price": .double(-0.0), "inf": .double(-.infinity),
                    "pi": .double(3.141592653589793), "on": .bool(true), "off": .bool(false),
                    "blob": .bytes([0, 255, 7]),
                    "none": .bytes([]), "at": .timestamp(Timestamp(microseconds: -1)), "nil": .null,
                ]), 7
        ),
        (Row(id: "", values: [:]), 0),
        // Encoded in 64 to 127 bytes: a one-byte length with its high bits in use.
        (Row(id: "mid", values: ["note": .string(String(repeating: "z", count: 90))]), 3),
        (
            Row(id: String(repeating: "x", count: 300), values: ["long": .string(String(repeating: "y", count: 200))]),
            1 << 40
        ),
    ]

    @Test("entered, left and updated rows decode to the message built field by field")
    func matchesSwiftProtobuf() throws {
        #expect(Self.rows.count { $0.row.withCompactValues { _, _ in } != nil } == 2 * Self.dictionaryRows.count + 1)
        #expect(Self.rows.count { $0.row.withCompactValues { layout, _ in layout.isShaped } == true } == 4)
        var expected = Meridian_V1_SubscriptionDelta()
        expected.subscriptionID = "sub"
        expected.entered = Self.rows.map { Meridian_V1_Row($0.row, version: $0.version) }
        expected.left = ["gone", "", "ü"]
        expected.updated = Self.rows.map { Meridian_V1_RowUpdate($0.row, version: $0.version, changed: ["qty", ""]) }

        let body = DeltaWireEncoding.subscriptionDeltaBody(
            entered: Self.rows, left: expected.left,
            updated: Self.rows.map { ($0.row, $0.version, ["qty", ""]) })
        var bytes: [UInt8] = [0x0A, 3] + Array("sub".utf8)
        bytes += body
        let decoded = try Meridian_V1_SubscriptionDelta(serializedBytes: bytes)
        #expect(decoded == expected)
    }

    @Test(
        "a snapshot chunk response decodes to the message built field by field, defaults and all",
        arguments: [false, true])
    func snapshotChunk(defaults: Bool) throws {
        var chunk = Meridian_V1_SnapshotChunk()
        if !defaults {
            chunk.subscriptionID = "sub ü"
            chunk.seq = 1 << 33
            chunk.rows = Self.rows.map { Meridian_V1_Row($0.row, version: $0.version) }
            chunk.last = true
            chunk.resnapshot = true
            chunk.chunkIndex = 300
            chunk.epoch = 7
        }
        var expected = Meridian_V1_SyncResponse()
        expected.snapshotChunk = chunk
        let rows = defaults ? [] : Self.rows
        let bytes = DeltaWireEncoding.snapshotChunkResponse(
            subscriptionID: chunk.subscriptionID, seq: chunk.seq, rowCount: rows.count, last: chunk.last,
            resnapshot: chunk.resnapshot, chunkIndex: chunk.chunkIndex, epoch: chunk.epoch, row: { rows[$0] })
        #expect(try Meridian_V1_SyncResponse(serializedBytes: bytes) == expected)
        // The same length as swift-protobuf's own encoding (map entries may come in another order).
        #expect(bytes.count == (try expected.serializedBytes() as [UInt8]).count)
    }

    @Test("random rows, compact or not, of every kind of value, encode to what swift-protobuf decodes them to")
    func randomRows() throws {
        let seed = SplitMix64.seedFromEnvironment()
        var random = SplitMix64(seed: seed)
        let names = ["", "title", "qty", "ü", String(repeating: "n", count: 130), "at", "blob", "price"]
        for index in 0..<300 {
            var rows: [(row: Row, version: Int64)] = []
            for _ in 0..<Int.random(in: 0...6, using: &random) {
                var values: [String: Value] = [:]
                for name in names where Bool.random(using: &random) { values[name] = Self.value(&random) }
                let id = ["", "r\(Int.random(in: 0...999, using: &random))", String(repeating: "i", count: 140)][
                    Int.random(in: 0..<3, using: &random)]
                let row = Row(id: id, values: values)
                let version = [0, 1, Int64.random(in: 2...(1 << 50), using: &random)][
                    Int.random(in: 0..<3, using: &random)]
                rows.append((Bool.random(using: &random) ? Self.compact(row) : row, version))
            }
            var expected = Meridian_V1_SubscriptionDelta()
            expected.entered = rows.map { Meridian_V1_Row($0.row, version: $0.version) }
            expected.updated = rows.map { Meridian_V1_RowUpdate($0.row, version: $0.version, changed: ["qty"]) }
            let body = DeltaWireEncoding.subscriptionDeltaBody(
                entered: rows, left: [String](), updated: rows.map { ($0.row, $0.version, ["qty"]) })
            #expect(
                try Meridian_V1_SubscriptionDelta(serializedBytes: body) == expected,
                "MERIDIAN_SEED=\(seed) case \(index): \(rows)")
            var chunk = Meridian_V1_SnapshotChunk()
            chunk.subscriptionID = "s"
            chunk.rows = expected.entered
            var response = Meridian_V1_SyncResponse()
            response.snapshotChunk = chunk
            let bytes = DeltaWireEncoding.snapshotChunkResponse(
                subscriptionID: "s", seq: 0, rowCount: rows.count, last: false, resnapshot: false, chunkIndex: 0,
                epoch: 0, row: { rows[$0] })
            #expect(
                try Meridian_V1_SyncResponse(serializedBytes: bytes) == response,
                "MERIDIAN_SEED=\(seed) case \(index): \(rows)")
        }
    }

    /// A value of a random kind, with the edges each kind has (`.null` left out of rows as they hold none).
    static func value(_ random: inout SplitMix64) -> Value {
        switch Int.random(in: 0..<7, using: &random) {
        case 0: .null
        case 1:
            .int(
                [0, -1, .min, .max, Int64.random(in: -1000...1000, using: &random)][
                    Int.random(in: 0..<5, using: &random)])
        case 2: .double([0.0, -0.0, .infinity, -.infinity, 1e-300, 2.5][Int.random(in: 0..<6, using: &random)])
        case 3:
            .string(
                ["", "Café ☕️", String(repeating: "z", count: Int.random(in: 0...300, using: &random))][
                    Int.random(in: 0..<3, using: &random)])
        case 4: .bool(Bool.random(using: &random))
        case 5: .bytes((0..<Int.random(in: 0...200, using: &random)).map { UInt8($0 * 13 % 256) })
        default: .timestamp(Timestamp(microseconds: Int64.random(in: -1_000_000...(1 << 52), using: &random)))
        }
    }

    @Test("an empty delta has an empty body")
    func empty() {
        let body = DeltaWireEncoding.subscriptionDeltaBody(
            entered: [(row: Row, version: Int64)](), left: [String](),
            updated: [(row: Row, version: Int64, changed: [String])]())
        #expect(body.isEmpty)
    }
}
