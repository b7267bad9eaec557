// MARK: - The schema campaign

internal import MeridianCore

/// Random and mutated schema YAML and JSON to the loader. It either loads (and then has a fingerprint) or throws a
/// ``SchemaError`` with a message and a location — the file name it was given, a line within the text and a column —
/// so `file:line:col` always points somewhere real.
struct SchemaCampaign {
    let seed: UInt64

    static let file = "fuzz.yaml"

    /// The words and symbols of the schema format, spliced into mutated text.
    static let tokens = [
        "version", "entities", "attributes", "indexes", "derived", "id", "auto", "client", "type", "default",
        "optional", "unique", "name", "coordinate", "string", "int", "double", "bool", "bytes", "timestamp", "string?",
        "int?", "uuid", ": ", ":", "- ", "-", "{", "}", "[", "]", ",", "\n", "\n  ", "\n    ", "  ", "\t", "#", "&a",
        "*a", "!!str", "!!int", "<<: *a", "|", ">", "'", "\"", "null", "~", "true", "1e999", "-1", "0x1F",
        "9223372036854775808", "meridian_x", "sqlite_x", "AND", "_version", "---", "...", "? ", "%YAML 1.2",
    ]

    /// Valid schemas the mutations start from: the fuzz schema, the same in JSON, and a minimal one.
    static let seeds: [String] = [
        FuzzSchema.yaml,
        """
        {"version": 2, "entities": {"Point": {"id": "auto", "attributes": {"title": "string", "n": {"type": "int",
        "default": 0}, "lat": "double?", "lon": {"type": "double", "optional": true}}, "indexes": [["n", "title"],
        {"name": "u", "attributes": ["title"], "unique": true}], "derived": {"coordinate": {"coordinate":
        ["lat", "lon"]}}}, "Tag": {"id": "client", "attributes": {}}}}
        """,
        "version: 1\nentities: {}\n",
        """
        version: 3
        entities:
          A:
            attributes:
              when: { type: timestamp, default: "2024-05-01T00:00:00Z" }
              data: { type: bytes, default: "base64:AAE=" }
              flag: { type: bool, default: false }
              ratio: { type: double, default: -0.0 }
        """,
    ]

    func run(budget: FuzzBudget) async -> CampaignReport {
        var report = CampaignReport(campaign: .schema, seed: self.seed)
        var index = 0
        while budget.allows(index) {
            // Run beside a soak, a campaign shares two threads with the checker's fault schedule and verifier:
            // it lets them run between inputs instead of holding a thread for its whole share of the time.
            if index % 16 == 0 { await Task.yield() }
            var random = FuzzRandom(seed: self.seed, campaign: .schema, index: index)
            let text = Self.input(random: &random)
            switch Self.check(text) {
            case .success(let kind): report.record(kind)
            case .failure(let failure): report.fail(index: index, failure.message, input: text)
            }
            index += 1
        }
        return report
    }

    static func input(random: inout FuzzRandom) -> String {
        let seed = random.pick(Self.seeds)
        switch random.below(10) {
        case 0:
            return String(decoding: random.bytes(random.length(upTo: 200)), as: UTF8.self)
        case 1, 2:  // line-level: drop, duplicate, swap or re-indent lines
            var lines = seed.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            for _ in 0..<random.within(1...3) where !lines.isEmpty {
                let i = random.below(lines.count)
                switch random.below(4) {
                case 0: lines.remove(at: i)
                case 1: lines.insert(lines[i], at: random.below(lines.count + 1))
                case 2: lines.swapAt(i, random.below(lines.count))
                default: lines[i] = String(repeating: " ", count: random.below(9)) + lines[i].trimmingPrefix(" ")
                }
            }
            return lines.joined(separator: "\n")
        case 3:  // deep nesting
            let depth = random.pick([100, 1_000, 10_000])
            let open = random.pick(["[", "{a: ", "- "])
            return "version: 1\nentities: " + String(repeating: open, count: depth)
        default:
            return TextMutator.mutate(seed, random: &random, tokens: Self.tokens)
        }
    }

    /// Loads `text` and judges the outcome.
    static func check(_ text: String) -> Result<String, TextFailure> {
        let clock = ContinuousClock()
        let start = clock.now
        let outcome: Result<String, TextFailure>
        do {
            let schema = try Schema.parse(yaml: text, file: Self.file)
            outcome =
                schema.fingerprint.count == 16
                ? .success("loaded")
                : .failure(TextFailure("a fingerprint that is not 16 digits: \(schema.fingerprint)"))
        } catch {
            outcome = Self.judge(error, text: text)
        }
        let elapsed = clock.now - start
        if elapsed > .seconds(10) { return .failure(TextFailure("took \(elapsed) to load (a hang in the making)")) }
        return outcome
    }

    /// The lines of `text` as YAML counts them: CR LF, CR, LF, NEL, LS and PS each end a line.
    static func lineCount(_ text: String) -> Int {
        var count = 1
        var previous: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n" where previous == "\r": break
            case "\n", "\r", "\u{85}", "\u{2028}", "\u{2029}": count += 1
            default: break
            }
            previous = scalar
        }
        return count
    }

    static func judge(_ error: SchemaError, text: String) -> Result<String, TextFailure> {
        if error.message.isEmpty { return .failure(TextFailure("\(error.code) error with an empty message")) }
        guard error.file == Self.file else {
            return .failure(
                TextFailure("\(error.code) error names file \(error.file ?? "nil"), not \(Self.file): \(error)"))
        }
        guard let line = error.line, let column = error.column else {
            return .failure(TextFailure("\(error.code) error without a line and column: \(error)"))
        }
        let lineCount = Self.lineCount(text)
        guard line >= 1, line <= lineCount + 1, column >= 1 else {
            return .failure(
                TextFailure("\(error.code) error at \(line):\(column), outside the text's \(lineCount) lines: \(error)")
            )
        }
        return .success(error.code.description)
    }
}
