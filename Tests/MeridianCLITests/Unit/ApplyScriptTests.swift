// MARK: - apply's JSON lines

import MeridianCore
import Testing

@testable import MeridianCLI

@Suite struct ApplyScriptTests {
    /// The lines are found in bytes; they must be the ones splitting over Characters gives (CR LF one separator, a
    /// lone CR kept, combining marks after a line break), for random texts.
    @Test("lines split in bytes equal the Character split, for random texts")
    func linesMatchCharacterSplit() {
        var rng = SplitMix64(seed: 20_261_124)
        let pieces = ["a", "\n", "\r", "\r\n", " ", "é", "\u{301}", "{}", "\t", "😀", "\n\n"]
        for _ in 0..<2_000 {
            var text = ""
            for _ in 0..<Int.random(in: 0...12, using: &rng) { text += pieces.randomElement(using: &rng)! }
            let expected = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
                .map(String.init)
            #expect(InputLines.split(text) == expected, "\(Array(text.unicodeScalars))")
        }
    }

    @Test("every operation kind, blank lines skipped, line numbers kept")
    func parsesAll() throws {
        let text = """
            {"op":"insert","entity":"Point","values":{"title":"Café Aurora","category":2,"latitude":38.71}}

            {"op":"update","entity":"Point","id":"p1","values":{"title":"Café Aurora II","latitude":null},"version":3}
            {"op":"upsert","entity":"Author","id":"a1","values":{"firstName":"Ada","lastName":"Lovelace"}}\r
            {"op":"delete","entity":"Point","id":"p2"}

            """
        let operations = try ApplyScript.parse(text, schema: demoSchema)
        #expect(operations.map(\.line) == [1, 3, 4, 5])
        #expect(
            operations.map(\.operation) == [
                WriteOperation(
                    kind: .insert, entity: "Point", values: ["title": "Café Aurora", "category": 2, "latitude": 38.71]),
                WriteOperation(
                    kind: .update, entity: "Point", id: "p1", values: ["title": "Café Aurora II", "latitude": .null],
                    expectedVersion: 3),
                WriteOperation(
                    kind: .upsert, entity: "Author", id: "a1", values: ["firstName": "Ada", "lastName": "Lovelace"]),
                WriteOperation(kind: .delete, entity: "Point", id: "p2"),
            ])
    }

    /// The direct reading of well-formed lines (`parsePlainLine`) must give the generic reading's operation, and give
    /// up (so that the generic reading reports it) on every line that reading refuses: random lines of every member
    /// and value type, right and wrong, in any order, with whitespace, escapes, repeats, unknown names and cut ends.
    @Test("the direct reading of plain lines gives the generic reading's operations, and gives up where it fails")
    func plainLinesMatchGenericReading() throws {
        var rng = SplitMix64(seed: 20_261_129)
        // Each member is mostly right, now and then wrong: so that most lines are good and every fault occurs.
        let goodValues = [
            #""s":"text""#, #""s":"esc\"aped\u00e9""#, #""s":null"#, #""i":42"#, #""i":-7"#, #""d":2.5e3"#, #""d":3"#,
            #""b":true"#, #""b":false"#, #""t":"2026-11-29T04:00:00Z""#, #""t":1700000000000000"#, #""x":"hex:00ff""#,
            #""x":"base64:AP8=""#, #""req":"r2""#,
        ]
        let badValues = [
            #""s":1"#, #""i":1.5"#, #""i":"4""#, #""b":0"#, #""t":"soon""#, #""x":"zz""#, #""id":"no""#,
            #""colour":"red""#, #""i":[1]"#, #""d":{"a":1}"#,
        ]
        func pick(_ good: [String], _ bad: [String]) -> String {
            Int.random(in: 0..<20, using: &rng) == 0
                ? bad.randomElement(using: &rng)! : good.randomElement(using: &rng)!
        }
        let ops = [#""op":"insert""#, #""op":"update""#, #""op":"upsert""#, #""op":"delete""#]
        let badOps = [#""op":"remove""#, #""op":1"#]
        let entities = [#""entity":"Thing""#]
        let badEntities = [#""entity":"Thin""#, #""entity":null"#]
        let ids = [#""id":"t1""#, #""id":"t\n2""#, #""id":null"#]
        let badIDs = [#""id":"""#, #""id":5"#]
        let versions = [#""version":3"#, #""version":null"#]
        let badVersions = [#""version":-1"#, #""version":1.5"#, #""version":"3""#]
        var plain = 0
        var refused = 0
        for round in 0..<4_000 {
            var members: [String] = []
            if Int.random(in: 0..<40, using: &rng) > 0 { members.append(pick(ops, badOps)) }
            if Int.random(in: 0..<40, using: &rng) > 0 { members.append(pick(entities, badEntities)) }
            if Int.random(in: 0..<5, using: &rng) > 0 { members.append(pick(ids, badIDs)) }
            if Int.random(in: 0..<4, using: &rng) == 0 { members.append(pick(versions, badVersions)) }
            switch Int.random(in: 0..<16, using: &rng) {
            case 0: break
            case 1: members.append(#""values":null"#)
            case 2: members.append(#""values":"x""#)
            default:
                let fields = (0..<Int.random(in: 0...4, using: &rng)).map { _ in pick(goodValues, badValues) }
                members.append(#""values":{"# + fields.joined(separator: ",") + "}")
            }
            if Int.random(in: 0..<60, using: &rng) == 0 { members.append(#""extra":1"#) }
            if Int.random(in: 0..<60, using: &rng) == 0, let first = members.first { members.append(first) }
            members.shuffle(using: &rng)
            let space = [" ", "", "\t", "  "]
            var line =
                space.randomElement(using: &rng)! + "{"
                + members.joined(separator: space.randomElement(using: &rng)! + ",")
                + "}" + space.randomElement(using: &rng)!
            switch Int.random(in: 0..<60, using: &rng) {
            case 0: line.removeLast(Int.random(in: 1...3, using: &rng))
            case 1: line += "x"
            case 2: line = line.split(separator: ":", omittingEmptySubsequences: false).joined(separator: " : ")
            default: break
            }
            var shapes = ApplyScript.LineShapes(schema: allTypesSchema)
            let direct = ApplyScript.parsePlainLine(line, &shapes)
            do {
                let generic = try ApplyScript.parseLine(line, schema: allTypesSchema)
                #expect(direct == generic, "round \(round): \(line)")
                if direct != nil { plain += 1 }
            } catch {
                #expect(direct == nil, "round \(round): read \(line), which the generic reading refuses: \(error)")
                refused += 1
            }
        }
        // Both kinds of line occur, and the direct reading takes most of the good ones.
        #expect(plain > 1_000 && refused > 500, "\(plain) read directly, \(refused) refused")
        // Lines of one shape share one layout, and a line of another shape after them is read right.
        var shapes = ApplyScript.LineShapes(schema: allTypesSchema)
        let lines = [
            #"{"op":"insert","entity":"Thing","values":{"s":"a","i":1}}"#,
            #"{"op":"insert","entity":"Thing","values":{"s":"b","i":2}}"#,
            #"{"op":"insert","entity":"Thing","values":{"i":3,"s":"c"}}"#,
            #"{"op":"insert","entity":"Thing","values":{"s":"d","i":4}}"#,
        ]
        for line in lines {
            let direct = try #require(ApplyScript.parsePlainLine(line, &shapes), "\(line)")
            #expect(direct == (try ApplyScript.parseLine(line, schema: allTypesSchema)))
        }
    }

    /// Long inputs are parsed in pieces at once; the result must be one pass's: the same operations and lines, or
    /// the error of the first bad line, however many pieces and wherever the bad lines fall.
    @Test("an input parsed in pieces gives one pass's operations, or its first error")
    func piecesMatchOnePass() throws {
        var rng = SplitMix64(seed: 20_261_127)
        let good = [
            #"{"op":"insert","entity":"Point","values":{"title":"P","category":2,"latitude":38.71}}"#,
            #"{"op":"update","entity":"Point","id":"p1","values":{"title":"Q"},"version":3}"#,
            #"{"op":"delete","entity":"Point","id":"p2"}"#, "", "  ",
        ]
        let bad = [#"{"op":"insert","entity":"Pont"}"#, #"{"op":"delete","entity":"Point","id":7}"#, "[1]"]
        struct Outcome: Equatable {
            var lines: [Int] = []
            var operations: [WriteOperation] = []
            var error: String?
        }
        func outcome(_ text: String, pieces: Int) -> Outcome {
            do {
                let parsed = try ApplyScript.parse(text, schema: demoSchema, pieces: pieces)
                return Outcome(lines: parsed.map(\.line), operations: parsed.map(\.operation))
            } catch {
                return Outcome(error: error.message)
            }
        }
        var errors = 0
        for round in 0..<12 {
            let count = Int.random(in: ApplyScript.linesPerPiece * 2...ApplyScript.linesPerPiece * 6, using: &rng)
            var lines = (0..<count).map { _ in good.randomElement(using: &rng)! }
            // No bad line, one, or several (the first must win): anywhere, so also at a piece's edges.
            for _ in 0..<(round % 3 == 0 ? 0 : Int.random(in: 1...3, using: &rng)) {
                lines[Int.random(in: 0..<count, using: &rng)] = bad.randomElement(using: &rng)!
            }
            let text = lines.joined(separator: "\n")
            let onePass = outcome(text, pieces: 1)
            if onePass.error != nil { errors += 1 }
            for pieces in 2...5 {
                #expect(outcome(text, pieces: pieces) == onePass, "round \(round), \(pieces) pieces")
            }
        }
        #expect(errors >= 4 && errors < 12)
    }

    @Test(
        "errors name the line and what is wrong",
        arguments: [
            (
                #"{"op":"insert","entity":"Point""#,
                "line 2: invalid JSON at column 32: unterminated object: expected ',' or '}'"
            ),
            (#"[1]"#, "line 2: expected a JSON object {\"op\":…,\"entity\":…}, found an array"),
            (#"{"entity":"Point"}"#, "line 2: missing \"op\" (one of insert, update, upsert, delete)"),
            (
                #"{"op":"remove","entity":"Point","id":"x"}"#,
                "line 2: \"op\" must be one of \"insert\", \"update\", \"upsert\", \"delete\", found \"remove\""
            ),
            (#"{"op":"insert"}"#, "line 2: missing \"entity\""),
            (
                #"{"op":"insert","entity":"Pont"}"#,
                "line 2: unknown entity 'Pont' (did you mean 'Point'?); the entities are Point, FamilyMember, Author"
            ),
            (#"{"op":"update","entity":"Point","values":{}}"#, "line 2: update needs an \"id\""),
            (#"{"op":"delete","entity":"Point","id":7}"#, "line 2: \"id\" must be a string, found a number"),
            (
                #"{"op":"delete","entity":"Point","id":"p","values":{"title":"x"}}"#,
                "line 2: delete takes no \"values\""
            ),
            (
                #"{"op":"insert","entity":"Point","values":{"category":"3"}}"#,
                "line 2: values.category: expected an integer, found a string"
            ),
            (
                #"{"op":"insert","entity":"Point","values":{"colour":"red"}}"#,
                "line 2: values: unknown attribute 'colour' for Point; its attributes are id, title, category, "
                    + "latitude, longitude, updatedAt"
            ),
            (
                #"{"op":"insert","entity":"Point","value":{}}"#,
                "line 2: unknown key \"value\" (did you mean \"values\"?); the keys are op, entity, id, values, version"
            ),
            (
                #"{"op":"insert","entity":"Point","version":1.5}"#,
                "line 2: \"version\" must be a whole number, found 1.5"
            ),
            (
                #"{"op":"insert","op":"update","entity":"Point"}"#,
                "line 2: invalid JSON at column 16: key \"op\" appears twice"
            ),
        ])
    func errors(line: String, message: String) {
        let text = #"{"op":"delete","entity":"Point","id":"ok"}"# + "\n" + line + "\n"
        do {
            _ = try ApplyScript.parse(text, schema: demoSchema)
            Issue.record("no error for \(line)")
        } catch {
            #expect(error.status == .badInput)
            #expect(error.message == message)
        }
    }
}
