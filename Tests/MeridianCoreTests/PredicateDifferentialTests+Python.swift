import Foundation
import MeridianCore
import MeridianProcessIO
import Testing

// MARK: - An oracle that is not our code

/// The SQLite side of the differential test calls the same Swift folding and matching as the in-memory evaluator, so
/// it cannot catch a fault in them. Here Python's `unicodedata` and `re` compute what docs/predicates.md specifies —
/// NFD; for `[c]` Unicode lowercase, NFD again, and `ς` as `σ`; for `[d]` every nonspacing mark (Mn) dropped; the
/// operators on the folded scalars; `LIKE`'s `*` any run and `?` one scalar — for every value and pattern below,
/// every string operator and every modifier, and the in-memory evaluator must give the same answers.
///
/// (Python's `lower()` writes a word's last `Σ` as `ς` and Swift's every `Σ` as `σ`: with `ς` folded to `σ` they
/// agree. Before Meridian folded `ς`, this test found `"ΟΔΟΣ" ==[c] "οδος"` false.)
///
/// `python3` is on every machine that runs the tests (`./meridian.sh setup` needs it): missing, the test fails.
extension PredicateDifferentialTests {
    /// Values: precomposed and decomposed letters, marks in non-canonical order, one-to-many and special case
    /// mappings, compatibility characters NFD leaves alone, scripts whose marks are Mn (Hebrew, Arabic, Thai) or Mc.
    static let oracleValues: [String] = [
        "", "Café", "CAFÉ", "cafe\u{301}", "CAFE\u{301}", "Crème Brûlée", "CRÈME BRÛLÉE", "straße", "STRASSE",
        "STRAẞE", "İstanbul", "istanbul", "ISTANBUL", "ıi", "ΟΔΟΣ", "οδος", "οδοσ", "Ωμέγα", "ΩΜΈΓΑ", "ωμεγα",
        "Ångström", "\u{212B}ngstr\u{F6}m", "\u{2126}", "\u{212A}elvin", "ﬁne", "FINE", "Ǆemal", "ǅemal", "ǆemal",
        "e\u{301}\u{327}", "e\u{327}\u{301}", "ȩ́", "Ḉ", "ä", "a\u{308}", "Ä", "ǖ", "한국어", "가", "Ⅻ", "ⅻ", "Ａｂ",
        "𝐀", "Ꭰ", "ꭰ", "Σίσυφος", "ΣΊΣΥΦΟΣ", "Tiếng Việt", "TIẾNG VIỆT", "שָׁלוֹם", "שלום", "قَلَم", "قلم", "ที่นี่",
        "क्षि", "ñandú", "N\u{303}ANDU\u{301}", "👍🏽 ok", "a*b", "a?b", "a\\b", "\u{301}", "x\u{301}y",
    ]

    /// Patterns: pieces of the values in other cases and forms, and `LIKE` wildcards and escapes.
    static let oracleSearches: [String] = [
        "", "caf", "CAFÉ", "café", "cafe", "e\u{301}", "é", "É", "e", "brulee", "BRÛL", "ss", "ß", "ẞ", "i", "İ",
        "i\u{307}", "ı", "istanbul", "σ", "ς", "Σ", "ος", "οδος", "ΟΔΟΣ", "ω", "Ω", "angstrom", "å", "k", "kelvin",
        "fi", "ﬁ", "ǆ", "Ǆ", "ä", "a", "ȩ́", "ḉ", "c", "가", "ㄱ", "ᄀ", "ⅻ", "ａ", "ꭰ", "Ꭰ", "σίσυφος", "viet",
        "việt", "שלום", "قلم", "ทน", "क्ष", "nandu", "ñ", "👍", "🏽",
        "c?f*", "*é", "*e", "?", "*", "??", "caf?", "cafe?", "c*e", "*ss*", "*\u{301}", "ω?ε*", "a\\*b", "a\\?b",
        "a\\\\b", "a*b", "?\u{301}*", "x?y", "x??y",
    ]

    /// Folds like docs/predicates.md and matches like the operators, in Python; reads the cases as JSON on stdin,
    /// writes `{"unicode": version, "results": {"==[cd]": [[Bool]] (values × patterns), …}}`.
    static let oracleScript = #"""
        import json, re, sys, unicodedata

        cases = json.load(sys.stdin)

        def fold(s, c, d):
            if not c and not d:
                return s
            t = unicodedata.normalize("NFD", s)
            if c:
                t = unicodedata.normalize("NFD", t.lower()).replace("\u03c2", "\u03c3")
            if d:
                t = "".join(ch for ch in t if unicodedata.category(ch) != "Mn")
            return t

        def like(value, pattern):
            parts, escaped = [], False
            for ch in pattern:
                if escaped:
                    parts.append(re.escape(ch))
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == "*":
                    parts.append(".*")
                elif ch == "?":
                    parts.append(".")
                else:
                    parts.append(re.escape(ch))
            return re.fullmatch("".join(parts), value, re.DOTALL) is not None

        operators = {
            "==": lambda v, p: v == p,
            "BEGINSWITH": lambda v, p: v.startswith(p),
            "ENDSWITH": lambda v, p: v.endswith(p),
            "CONTAINS": lambda v, p: p in v,
            "LIKE": like,
        }
        results = {}
        for name, match in operators.items():
            for c in (False, True):
                for d in (False, True):
                    modifier = "[" + ("c" if c else "") + ("d" if d else "") + "]" if c or d else ""
                    results[name + modifier] = [
                        [match(fold(v, c, d), fold(p, c, d)) for p in cases["patterns"]] for v in cases["values"]
                    ]
        json.dump({"unicode": unicodedata.unidata_version, "results": results}, sys.stdout)
        """#

    struct OracleAnswer: Decodable {
        var unicode: String
        var results: [String: [[Bool]]]
    }

    /// Runs the oracle on the cases.
    static func askPython(values: [String], patterns: [String]) throws -> OracleAnswer {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.oracleScript]
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Read the answer on its own thread while the cases are written, so that neither pipe fills up.
        let answer = OracleOutput()
        Thread.detachNewThread { answer.set(output.fileHandleForReading.remainingData()) }
        input.fileHandleForWriting.write(try JSONEncoder().encode(["values": values, "patterns": patterns]))
        try input.fileHandleForWriting.close()
        let stderr = errors.fileHandleForReading.remainingData()
        process.waitUntilExit()
        try #require(
            process.terminationStatus == 0,
            "python3 failed (exit \(process.terminationStatus)): \(String(decoding: stderr, as: UTF8.self))")
        return try JSONDecoder().decode(OracleAnswer.self, from: answer.wait())
    }

    @Test("string operators and [c], [d], [cd] folding equal Python's unicodedata on Unicode edge cases")
    func pythonOracle() throws {
        let values = Self.oracleValues
        let patterns = Self.oracleSearches
        let oracle = try Self.askPython(values: values, patterns: patterns)
        let operators = ["==", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE"]
        let modifiers = ["", "[c]", "[d]", "[cd]"]
        #expect(oracle.results.count == operators.count * modifiers.count)
        var compared = 0
        var matched = 0
        var failures = 0
        for op in operators {
            for modifier in modifiers {
                let expected = try #require(oracle.results[op + modifier], "no answers for \(op)\(modifier)")
                for (j, pattern) in patterns.enumerated() {
                    let text = "title \(op)\(modifier) $p"
                    let predicate = try PredicateExpression.parse(text)
                        .bind(to: Self.entity, variables: ["p": .value(.string(pattern))])
                    for (i, value) in values.enumerated() {
                        let actual = predicate.evaluate(Row(id: "r", values: ["title": .string(value)]))
                        compared += 1
                        if actual { matched += 1 }
                        guard actual != expected[i][j] else { continue }
                        failures += 1
                        Issue.record(
                            """
                            \(Value.quote(value)) \(op)\(modifier) \(Value.quote(pattern)): Meridian says \(actual), \
                            Python (Unicode \(oracle.unicode)) says \(expected[i][j])
                            scalars: \(Self.scalars(value)) / \(Self.scalars(pattern))
                            """)
                        if failures >= 20 { return }
                    }
                }
            }
        }
        #expect(compared == operators.count * modifiers.count * values.count * patterns.count)
        // The cases are not trivially all false: thousands match (3,221 on the machine it was written on).
        #expect(matched > compared / 50, "only \(matched) of \(compared) cases match")
    }

    static func scalars(_ s: String) -> String {
        s.unicodeScalars.map { "U+" + String($0.value, radix: 16, uppercase: true) }.joined(separator: " ")
    }
}

/// The oracle's output, set once by the thread reading it and waited for by the test.
private final class OracleOutput: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: Data?

    func set(_ value: Data) {
        self.condition.lock()
        self.value = value
        self.condition.broadcast()
        self.condition.unlock()
    }

    func wait() -> Data {
        self.condition.lock()
        defer { self.condition.unlock() }
        while self.value == nil { self.condition.wait() }
        return self.value!
    }
}
