// MARK: - Values from text and JSON

import Foundation
import MeridianCore
import Testing

@testable import MeridianCLI

@Suite struct ValueParsingTests {
    @Test(
        "text is parsed by the attribute's type",
        arguments: [
            ("hello", AttributeType.string, Value.string("hello")),
            ("", .string, .string("")),
            ("42", .int, .int(42)),
            ("-9223372036854775808", .int, .int(.min)),
            ("2.5", .double, .double(2.5)),
            ("3", .double, .double(3)),
            ("-1e-3", .double, .double(-0.001)),
            ("inf", .double, .double(.infinity)),
            ("true", .bool, .bool(true)),
            ("false", .bool, .bool(false)),
            ("2024-05-01T12:30:00Z", .timestamp, .timestamp(Timestamp(iso8601: "2024-05-01T12:30:00Z")!)),
            ("2024-05-01", .timestamp, .timestamp(Timestamp(iso8601: "2024-05-01T00:00:00Z")!)),
            ("hex:00ff10", .bytes, .bytes([0, 255, 16])),
            ("base64:AP8Q", .bytes, .bytes([0, 255, 16])),
            ("base64:AP8=", .bytes, .bytes([0, 255])),
        ])
    func parsesText(text: String, type: AttributeType, expected: Value) throws {
        let value = try ValueParsing.parse(text, as: type)
        #expect(value == expected)
        #expect(value.type == expected.type)
    }

    @Test(
        "malformed text says what was expected",
        arguments: [
            ("2.5", AttributeType.int, "\"2.5\" is not an int (a whole number such as 42)"),
            ("abc", .int, "\"abc\" is not an int (expected a whole number such as 42)"),
            ("9223372036854775808", .int, "\"9223372036854775808\" is not an int (a whole number such as 42)"),
            ("nan", .double, "\"nan\" is not a double (expected a number such as 2.5)"),
            ("1,5", .double, "\"1,5\" is not a double (expected a number such as 2.5)"),
            ("yes", .bool, "\"yes\" is not a bool (expected true or false)"),
            (
                "May 1", .timestamp,
                "\"May 1\" is not a timestamp (expected ISO-8601 such as 2024-05-01T12:30:00Z, or now)"
            ),
            ("00ff", .bytes, "bytes are written hex:00ff or base64:AP8="),
            ("hex:0f0", .bytes, "hex bytes need an even number of digits"),
            ("hex:zz", .bytes, "\"hex:zz\" is not valid hex"),
        ])
    func rejectsText(text: String, type: AttributeType, message: String) {
        #expect(throws: ValueError(message)) { try ValueParsing.parse(text, as: type) }
    }

    @Test("now is the clock's time when it is parsed")
    func now() throws {
        let before = Timestamp(secondsSince1970: Date().timeIntervalSince1970)
        let value = try ValueParsing.parse("now", as: .timestamp)
        let after = Timestamp(secondsSince1970: Date().timeIntervalSince1970)
        guard case .timestamp(let t) = value else {
            Issue.record("not a timestamp: \(value)")
            return
        }
        #expect(
            before.microseconds <= t.microseconds && t.microseconds <= after.microseconds, "\(before) \(t) \(after)")
    }

    @Test(
        "JSON is parsed by the attribute's type, exactly",
        arguments: [
            (#""Café""#, AttributeType.string, Value.string("Café")),
            ("9007199254740993", .int, .int(9_007_199_254_740_993)),
            ("2", .double, .double(2)),
            ("1e999", .double, .double(.infinity)),
            ("true", .bool, .bool(true)),
            ("null", .int, .null),
            (#""2024-05-01T12:30:00Z""#, .timestamp, .timestamp(Timestamp(iso8601: "2024-05-01T12:30:00Z")!)),
            ("1714566600000000", .timestamp, .timestamp(Timestamp(microseconds: 1_714_566_600_000_000))),
            (#""hex:0a""#, .bytes, .bytes([10])),
        ])
    func parsesJSON(text: String, type: AttributeType, expected: Value) throws {
        let value = try ValueParsing.parse(try JSON.parse(text), as: type)
        #expect(value == expected)
        #expect(value.type == expected.type)
    }

    @Test(
        "JSON of the wrong kind is rejected",
        arguments: [
            ("3", AttributeType.string, "expected a string, found a number"),
            ("2.5", .int, "2.5 is not an int (expected a whole number in the 64-bit range)"),
            (#""3""#, .int, "expected an integer, found a string"),
            ("1", .bool, "expected true or false, found a number"),
            ("[1]", .double, "expected a number, found an array"),
        ])
    func rejectsJSON(text: String, type: AttributeType, message: String) throws {
        let json = try JSON.parse(text)
        #expect(throws: ValueError(message)) { try ValueParsing.parse(json, as: type) }
    }

    @Test(
        "rendered values read back as the same values",
        arguments: [
            Value.null, .int(-7), .double(0.1), .double(2), .double(-.infinity), .string("a \"q\"\nb"), .bool(true),
            .timestamp(Timestamp(microseconds: 1_714_566_600_250_000)), .bytes([0, 1, 254, 255]),
        ])
    func roundTrip(value: Value) throws {
        guard let type = value.type else {
            #expect(ValueRendering.json(value) == .null)
            #expect(ValueRendering.text(value) == "")
            return
        }
        let json = try JSON.parse(ValueRendering.json(value).text)
        let fromJSON = try ValueParsing.parse(json, as: type)
        #expect(fromJSON == value && fromJSON.type == value.type)
        let fromText = try ValueParsing.parse(ValueRendering.text(value), as: type)
        #expect(fromText == value && fromText.type == value.type)
    }

    @Test("a row renders every attribute in schema order, nulls included")
    func rowJSON() {
        let row = Row(id: "p1", values: ["title": "Café \"A\"", "category": 2, "latitude": 38.5])
        #expect(
            ValueRendering.rowJSON(row, entity: point).text
                == #"{"id":"p1","values":{"title":"Café \"A\"","category":2,"latitude":38.5,"longitude":null,"#
                + #""updatedAt":null}}"#)
    }
}
