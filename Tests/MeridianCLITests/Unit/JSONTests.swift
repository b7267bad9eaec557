// MARK: - JSON

import MeridianCore
import Testing

@testable import MeridianCLI

@Suite struct JSONTests {
    @Test("numbers keep their text, keys their order; output is compact")
    func roundTrip() throws {
        let text = #"{"b":[1,2.50,-3e-2,true,false,null],"a":{"x":"é\n\"\\\u0001"}}"#
        let json = try JSON.parse(text)
        #expect(
            json["b"] == .array([.number("1"), .number("2.50"), .number("-3e-2"), .bool(true), .bool(false), .null]))
        #expect(json.text == #"{"b":[1,2.50,-3e-2,true,false,null],"a":{"x":"é\n\"\\\u0001"}}"#)
        #expect(try JSON.parse(#""\ud83d\ude00""#) == .string("😀"))
        // Plain runs around escapes, and non-ASCII text, come through whole.
        #expect(try JSON.parse(#""Café \"Aurora\"\tLisboa 😀""#) == .string("Café \"Aurora\"\tLisboa 😀"))
    }

    @Test(
        "string literals: plain text whole, quotes, backslashes and control characters escaped",
        arguments: [
            ("Café Aurora 😀", #""Café Aurora 😀""#), ("", #""""#), ("a\"b", #""a\"b""#), ("a\\b", #""a\\b""#),
            ("line\nnext\tcol\r", #""line\nnext\tcol\r""#), ("\u{1}é\u{7F}", #""\u0001é\u007f""#),
            ("x\u{7F}", #""x\u007f""#),
        ])
    func literals(text: String, literal: String) {
        var out = ""
        JSONText.write(text, to: &out)
        #expect(out == literal)
    }

    @Test("an error names the character it found, whole")
    func describesCharacters() {
        do {
            _ = try JSON.parse("[1 é]")
            Issue.record("no error")
        } catch {
            #expect(error.message == "expected ',' or ']', found 'é'", "\(error)")
        }
    }

    @Test(
        "syntax errors give the column",
        arguments: [
            ("{", 2), ("{\"a\" 1}", 6), ("[1,]", 4), ("01", 2), ("\"abc", 5), ("tru", 1), ("{} x", 4), ("1.", 3),
            // Columns count characters (Unicode scalars), not UTF-8 bytes.
            ("[\"é😀\" x]", 7), ("{\"é\":1,\"é\":2}", 8), ("\"ab\\q\"", 5), ("\"a\u{1}\"", 3), ("é", 1),
        ])
    func errors(text: String, column: Int) {
        do {
            _ = try JSON.parse(text)
            Issue.record("no error for \(text)")
        } catch {
            #expect(error.column == column, "\(text): \(error)")
        }
    }

    @Test("a repeated key is refused at its column, in small objects (keys compared) and large ones (keys hashed)")
    func repeatedKeys() throws {
        // Up to 8 keys are compared with each other, more are hashed (`JSONParser.keysComparedInPlace`).
        for count in [2, 8, 9, 40] {
            let keys = (0..<count).map { "\"k\($0)\":\($0)" }
            #expect(try JSON.parse("{" + keys.joined(separator: ",") + "}").kindDescription == "an object")
            for repeated in [0, count / 2, count - 1] {
                let text = "{" + keys.joined(separator: ",") + ",\"k\(repeated)\":0}"
                do {
                    _ = try JSON.parse(text)
                    Issue.record("no error for key k\(repeated) repeated after \(count) keys")
                } catch {
                    #expect(error.message == "key \"k\(repeated)\" appears twice", "\(error)")
                    #expect(error.column == text.count - "\"k\(repeated)\":0}".count + 1)
                }
            }
        }
    }

    @Test("doubles: shortest round-trip form; infinity as 1e999")
    func doubles() {
        #expect(JSON.double(0.1).text == "0.1")
        #expect(JSON.double(2).text == "2.0")
        #expect(JSON.double(-.infinity).text == "-1e999")
    }
}
