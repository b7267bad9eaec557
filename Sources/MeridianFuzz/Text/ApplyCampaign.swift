// MARK: - The apply-script campaign

internal import Foundation
internal import MeridianCLI
internal import MeridianCore

/// Random and mutated JSON lines to `meridian apply`'s parser and, for a sample, to the real `meridian apply -`
/// against a running server.
///
/// The parser either returns operations or throws a ``CLIError`` with exit status 2 whose message names a line of
/// the input (`line 3: …`). The binary exits 0 (printing the commit's seq), 2 with a message (bad input: exactly
/// when the parser rejects the text or it holds no operation) or 4 with a message (the server rejected the write) —
/// never another status, never killed by a signal, never longer than the timeout.
struct ApplyCampaign {
    let seed: UInt64
    let schema: Schema
    /// The `meridian` binary and the server it talks to, for the sampled runs; nil to test the parser only.
    var binary: (path: String, server: String)?
    /// Every how many inputs one also goes through the binary.
    var binaryEvery = 50
    var timeout: Duration = .seconds(30)

    static let tokens = [
        "{", "}", "[", "]", ",", ":", "\"", "\\", "\\u0000", "\\ud800", "\\udc00x", "\\u00e9", "\\n", "\"op\"",
        "\"entity\"", "\"id\"", "\"values\"", "\"version\"", "\"insert\"", "\"update\"", "\"upsert\"", "\"delete\"",
        "\"Point\"", "\"Author\"", "\"title\"", "\"category\"", "\"latitude\"", "\"photo\"", "\"updatedAt\"",
        "\"hex:00ff\"", "\"base64:AAE=\"", "\"base64:!!\"", "null", "true", "false", "0", "-0", "1e999", "-1e999",
        "1.5e-400", "9223372036854775807", "9223372036854775808", "-9223372036854775809", "1.0", "01", ".5", "NaN",
        "Infinity", "\n", "\r\n", " ", "\t", "\u{FEFF}", "\"2024-05-01T00:00:00Z\"", "\"2024-02-30T25:61:61Z\"",
    ]

    func run(budget: FuzzBudget) async -> CampaignReport {
        var report = CampaignReport(campaign: .apply, seed: self.seed)
        var index = 0
        while budget.allows(index) {
            // Run beside a soak, a campaign shares two threads with the checker's fault schedule and verifier:
            // it lets them run between inputs instead of holding a thread for its whole share of the time.
            if index % 16 == 0 { await Task.yield() }
            var random = FuzzRandom(seed: self.seed, campaign: .apply, index: index)
            let text = self.input(random: &random)
            let parsed = Self.parse(text, schema: self.schema)
            var outcome = parsed
            if case .success = parsed, let binary, index % self.binaryEvery == 0 {
                outcome = await Self.runBinary(text, binary: binary, parsed: parsed, timeout: self.timeout)
            }
            switch outcome {
            case .success(let kind): report.record(kind)
            case .failure(let failure): report.fail(index: index, failure.message, input: text)
            }
            index += 1
        }
        return report
    }

    func input(random: inout FuzzRandom) -> String {
        let lines = (0..<random.within(1...4)).map { _ in self.validLine(random: &random) }
        switch random.below(10) {
        case 0:
            return String(decoding: random.bytes(random.length(upTo: 200)), as: UTF8.self)
        case 1:
            let depth = random.pick([100, 1_000, 100_000])
            let open = random.pick(["[", "{\"a\":", "{\"op\":\"insert\",\"entity\":\"Point\",\"values\":{\"title\":"])
            return String(repeating: open, count: depth)
        case 2...7:
            var mutated = lines
            let i = random.below(mutated.count)
            mutated[i] = TextMutator.mutate(mutated[i], random: &random, tokens: Self.tokens)
            return mutated.joined(separator: random.oneIn(5) ? "\r\n" : "\n")
        default:
            return lines.joined(separator: "\n")
        }
    }

    /// One valid operation line for the schema.
    func validLine(random: inout FuzzRandom) -> String {
        guard !self.schema.entities.isEmpty else { return "{}" }
        let entity = random.pick(self.schema.entities)
        let op = random.pick(["insert", "update", "upsert", "delete"])
        var members = ["\"op\":\"\(op)\"", "\"entity\":" + Self.json(entity.name)]
        if op != "insert" || entity.idPolicy == .client || random.oneIn(2) {
            members.append("\"id\":" + Self.json("fuzz-\(random.below(8))"))
        }
        if op != "delete" {
            var values: [String] = []
            for attribute in entity.attributes where attribute.isRequiredOnInsert || random.oneIn(2) {
                values.append(
                    Self.json(attribute.name) + ":" + Self.json(ValueGenerator.value(attribute.type, random: &random)))
            }
            members.append("\"values\":{" + values.joined(separator: ",") + "}")
        }
        if random.oneIn(4) { members.append("\"version\":\(random.within(0...5))") }
        members.shuffle(using: &random)
        return "{" + members.joined(separator: ",") + "}"
    }

    static func json(_ string: String) -> String {
        var out = ""
        JSONText.write(string, to: &out)
        return out
    }

    static func json(_ value: Value) -> String {
        switch value {
        case .null: "null"
        case .int(let i): String(i)
        case .double(let d): d.isFinite ? String(d) : (d > 0 ? "1e999" : "-1e999")
        case .string(let s): Self.json(s)
        case .bool(let b): b ? "true" : "false"
        case .bytes(let bytes): Self.json("hex:" + bytes.map { String(format: "%02x", $0) }.joined())
        case .timestamp(let t): String(t.microseconds)
        }
    }

    // MARK: - Judging

    /// Parses `text` as `meridian apply` does and judges the outcome.
    static func parse(_ text: String, schema: Schema) -> Result<String, TextFailure> {
        let lineCount = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
            .count
        do {
            let lines = try ApplyScript.operationLines(text, schema: schema)
            return .success(lines.isEmpty ? "parsed empty" : "parsed")
        } catch {
            guard error.status == .badInput else {
                return .failure(TextFailure("the parser failed with status \(error.status), not bad input: \(error)"))
            }
            guard error.message.hasPrefix("line "),
                let number = Int(error.message.dropFirst(5).prefix { $0.isNumber }),
                (1...lineCount).contains(number)
            else {
                return .failure(
                    TextFailure("the parser's error does not name a line within 1...\(lineCount): \(error.message)"))
            }
            let rest = error.message.drop { $0 != ":" }.dropFirst().trimmingPrefix(" ")
            if rest.isEmpty { return .failure(TextFailure("the parser's error says nothing after its line number")) }
            return .success("rejected")
        }
    }

    /// Runs `meridian apply -` on `text` and judges its exit against the parser's verdict.
    static func runBinary(
        _ text: String, binary: (path: String, server: String), parsed: Result<String, TextFailure>, timeout: Duration
    ) async -> Result<String, TextFailure> {
        let result: ProcessResult
        do {
            result = try await ProcessResult.run(
                binary.path, ["apply", "--server", binary.server, "-"], stdin: Data(text.utf8), timeout: timeout)
        } catch {
            return .failure(TextFailure("could not run \(binary.path): \(error)"))
        }
        if result.timedOut { return .failure(TextFailure("meridian apply did not exit within \(timeout) (killed)")) }
        if result.signalled {
            return .failure(
                TextFailure("meridian apply was killed by signal \(result.status); stderr: \(result.stderr)"))
        }
        let expectBadInput: Bool
        switch parsed {
        case .success(let kind): expectBadInput = kind != "parsed"
        case .failure: expectBadInput = true
        }
        switch result.status {
        case 0 where !expectBadInput:
            guard Int64(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) != nil else {
                return .failure(TextFailure("meridian apply exited 0 without printing a seq: \(result.stdout)"))
            }
            return .success("binary committed")
        case 2 where expectBadInput, 4 where !expectBadInput:
            guard !result.stderr.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                return .failure(TextFailure("meridian apply exited \(result.status) with nothing on stderr"))
            }
            return .success(result.status == 2 ? "binary bad input" : "binary rejected")
        default:
            let verdict =
                expectBadInput
                ? "the parser rejects it (exit 2 expected)" : "the parser accepts it (exit 0 or 4 expected)"
            return .failure(
                TextFailure("meridian apply exited \(result.status) but \(verdict); stderr: \(result.stderr)"))
        }
    }
}
