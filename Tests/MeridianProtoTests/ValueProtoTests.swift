import Foundation
import MeridianCore
import MeridianProto
import SwiftProtobuf
import Testing

/// Values, variables and rows through their wire types and through serialized bytes.
@Suite struct ValueProtoTests {
    /// Every case with its edge values.
    static let values: [Value] = [
        .null,
        .int(0), .int(1), .int(-1), .int(.min), .int(.max),
        .double(0), .double(-0.0), .double(1.5), .double(-1e308), .double(.infinity), .double(-.infinity),
        .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude),
        .string(""), .string("plain"), .string("é"), .string("e\u{301}"), .string("日本語 🗺️"), .string("a\u{0}b"),
        .bool(true), .bool(false),
        .bytes([]), .bytes([0, 1, 255]),
        .timestamp(Timestamp(microseconds: 0)), .timestamp(Timestamp(microseconds: .min)),
        .timestamp(Timestamp(microseconds: .max)), .timestamp(Timestamp(microseconds: 1_714_566_600_250_000)),
    ]

    @Test("every value case survives the wire type unchanged", arguments: Self.values)
    func valueRoundTrip(value: Value) throws {
        let back = try Value(Meridian_V1_Value(value))
        #expect(Identical.values(back, value), "\(value) came back as \(back)")
    }

    @Test("every value case survives serialization to bytes", arguments: Self.values)
    func valueBytesRoundTrip(value: Value) throws {
        let bytes: [UInt8] = try Meridian_V1_Value(value).serializedBytes()
        let back = try Value(Meridian_V1_Value(serializedBytes: bytes))
        #expect(Identical.values(back, value), "\(value) came back as \(back)")
    }

    @Test("each case uses its own oneof field, so int 1, double 1.0, bool true and timestamp 1 stay apart")
    func casesStayApart() {
        #expect(Meridian_V1_Value(.int(1)).kind == .intValue(1))
        #expect(Meridian_V1_Value(.double(1)).kind == .doubleValue(1))
        #expect(Meridian_V1_Value(.bool(true)).kind == .boolValue(true))
        #expect(Meridian_V1_Value(.timestamp(Timestamp(microseconds: 1))).kind == .timestampMicros(1))
        #expect(Meridian_V1_Value(.null).kind == .nullValue(.nullValue))
    }

    @Test("a value with no case set reads as null")
    func unsetIsNull() throws {
        #expect(try Value(Meridian_V1_Value()).isNull)
    }

    @Test("NaN arriving on the wire is rejected with a clear error")
    func nanRejected() throws {
        var proto = Meridian_V1_Value()
        proto.doubleValue = .nan
        let error = try #require(throws: ProtoConversionError.self) { try Value(proto) }
        #expect(error.code == .invalidValue)
        #expect(error.message == "NaN is not a valid double")
    }

    @Test("NaN inside a row names the row and the attribute")
    func nanInRowNamesWhere() throws {
        var row = Meridian_V1_Row(Row(id: "p1", values: ["title": "x"]), version: 3)
        var nan = Meridian_V1_Value()
        nan.doubleValue = -.nan
        row.values["latitude"] = nan
        let error = try #require(throws: ProtoConversionError.self) { try Row(row) }
        #expect(error.code == .invalidValue)
        #expect(error.message == #"row "p1": attribute "latitude": NaN is not a valid double"#)
    }

    @Test("rows keep id, version and every value (a null one is absent), through bytes too")
    func rowRoundTrip() throws {
        var values: [String: Value] = [:]
        for (i, value) in Self.values.enumerated() { values["a\(i)"] = value }
        let row = Row(id: "Ünïcode-id 🗺️", values: values)
        let proto = Meridian_V1_Row(row, version: 42)
        #expect(proto.version == 42)
        #expect(proto.values.count == Self.values.filter { !$0.isNull }.count)
        let bytes: [UInt8] = try proto.serializedBytes()
        let decoded = try Meridian_V1_Row(serializedBytes: bytes)
        #expect(decoded.version == 42)
        let back = try Row(decoded)
        #expect(back.id == row.id)
        #expect(Identical.rows(back, row))
    }

    @Test("an empty row round-trips")
    func emptyRow() throws {
        let back = try Row(Meridian_V1_Row(Row(id: ""), version: 0))
        #expect(back.id == "")
        #expect(back.values.isEmpty)
    }

    @Test("a row update carries the row, its version and the changed names; one without a row is rejected")
    func rowUpdate() throws {
        let row = Row(id: "p", values: ["latitude": 48.85, "title": "Café"])
        let update = Meridian_V1_RowUpdate(row, version: 7, changed: ["coordinate", "latitude"])
        let decoded = try Meridian_V1_RowUpdate(serializedBytes: try update.serializedBytes() as [UInt8]).decoded()
        #expect(Identical.rows(decoded.row, row))
        #expect(decoded.version == 7)
        #expect(decoded.changed == ["coordinate", "latitude"])
        let error = try #require(throws: ProtoConversionError.self) { try Meridian_V1_RowUpdate().decoded() }
        #expect(error.code == .missingField)
    }

    @Test("variables: single values and lists round-trip; an empty variable and a NaN element are rejected")
    func variables() throws {
        let variables: [String: WireVariable] = [
            "min": .value(.int(3)),
            "names": .list(["a", "b", .null]),
            "empty": .list([]),
            "since": .value(.timestamp(Timestamp(microseconds: 5))),
        ]
        let fetch = Meridian_V1_FetchRequest(entity: "Point", predicate: "category >= $min", variables: variables)
        let decoded = try Meridian_V1_FetchRequest(serializedBytes: try fetch.serializedBytes() as [UInt8])
        #expect(try decoded.decodedVariables() == variables)

        var bad = decoded
        bad.variables["x"] = Meridian_V1_Variable()
        let missing = try #require(throws: ProtoConversionError.self) { try bad.decodedVariables() }
        #expect(missing.code == .missingField)
        #expect(missing.message == "variable $x: a variable must hold a value or a list")

        var nanList = decoded
        nanList.variables["x"] = Meridian_V1_Variable(.list([1, .double(.nan)]))
        let nan = try #require(throws: ProtoConversionError.self) { try nanList.decodedVariables() }
        #expect(nan.message == "variable $x: element 1: NaN is not a valid double")
    }
}

/// Strict identity of Core values: same case and same bits (`Value ==` compares numerically, so `-0.0 == 0.0` and
/// `.int(1) == .double(1)`; round trips must preserve more than that).
enum Identical {
    static func values(_ a: Value, _ b: Value) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.int(let x), .int(let y)): x == y
        case (.double(let x), .double(let y)): x.bitPattern == y.bitPattern
        case (.string(let x), .string(let y)): x.utf8.elementsEqual(y.utf8)
        case (.bool(let x), .bool(let y)): x == y
        case (.bytes(let x), .bytes(let y)): x == y
        case (.timestamp(let x), .timestamp(let y)): x.microseconds == y.microseconds
        default: false
        }
    }

    static func rows(_ a: Row, _ b: Row) -> Bool {
        a.id.utf8.elementsEqual(b.id.utf8) && a.values.count == b.values.count
            && a.values.allSatisfy { name, value in b.values[name].map { Self.values(value, $0) } ?? false }
    }
}
