// MARK: - The predicate campaign

internal import MeridianCore
internal import MeridianStore

/// Random and mutated predicate text to the parser and the binder. A parse or bind either succeeds (and the bound
/// predicate then evaluates and compiles to SQL) or throws a ``QueryError`` with a message and a position and length
/// inside the text; nothing may take longer than 10 seconds (generous, for loaded CI machines: it catches runaway
/// work, not slowness).
struct PredicateCampaign {
    let seed: UInt64
    let schema: Schema

    /// The words and symbols of the predicate language, spliced into mutated text.
    static let tokens = [
        "title", "category", "latitude", "visible", "photo", "updatedAt", "id", "coordinate", "firstName", "==", "=",
        "!=", "<>", "<", "<=", ">", ">=", "=<", "AND", "or", "&&", "||", "NOT", "!", "(", ")", "{", "}", ",",
        "BETWEEN", "IN", "BEGINSWITH", "endswith", "CONTAINS", "LIKE", "MATCHES", "[c]", "[d]", "[cd]", "[x]", "\"a\"",
        "'é'", "\"", "'", "\\", "\\u{", "\\u{110000}", "3", "-2.5", "1e999", "-0", "0x10", ".5", "nil", "NULL", "true",
        "$v", "$", "$undefined", "TRUEPREDICATE", "falsepredicate", " ", "\u{301}", "👍🏽", "\n", "\0",
        "\"2024-05-01T00:00:00Z\"", "\"2024-13-45T99:00:00Z\"", "9223372036854775807", "9223372036854775808",
        "-9223372036854775809", "ANY", "SOME", "((((", "))))",
    ]

    /// Valid predicates the mutations start from.
    static let seeds = [
        "title == \"Café\"", "category BETWEEN {1, 5} AND NOT visible", "latitude > 10.5 OR latitude == nil",
        "title BEGINSWITH[cd] \"caf\"", "id IN {\"a\", \"b\"}", "updatedAt >= \"2024-05-01T00:00:00Z\"",
        "(category == 1 || category == 2) && title LIKE \"c*f?\"", "category == $v", "TRUEPREDICATE",
        "NOT (title CONTAINS[c] \"x\" AND photo != nil)",
    ]

    func run(budget: FuzzBudget) async -> CampaignReport {
        var report = CampaignReport(campaign: .predicate, seed: self.seed)
        var index = 0
        while budget.allows(index) {
            // Run beside a soak, a campaign shares two threads with the checker's fault schedule and verifier:
            // it lets them run between inputs instead of holding a thread for its whole share of the time.
            if index % 16 == 0 { await Task.yield() }
            var random = FuzzRandom(seed: self.seed, campaign: .predicate, index: index)
            let text = self.input(random: &random)
            let entity = random.pick(self.schema.entities)
            switch Self.check(text, entity: entity) {
            case .success(let kind): report.record(kind)
            case .failure(let failure):
                report.fail(index: index, failure.message, input: Self.corpusText(text, entity: entity.name))
            }
            index += 1
        }
        return report
    }

    func input(random: inout FuzzRandom) -> String {
        switch random.below(10) {
        case 0:
            return String(decoding: random.bytes(random.length(upTo: 64)), as: UTF8.self)
        case 1:
            return (0..<random.within(1...12)).map { _ in random.pick(Self.tokens) }.joined(
                separator: random.oneIn(3) ? "" : " ")
        case 2...5:
            let seed =
                random.oneIn(2)
                ? random.pick(Self.seeds) : ValueGenerator.predicate(random.pick(self.schema.entities), random: &random)
            return TextMutator.mutate(seed, random: &random, tokens: Self.tokens)
        case 6:
            let depth = random.pick([10, 63, 64, 65, 200, 5_000])
            let open = random.pick(["(", "NOT ", "!(", "NOT ("])
            let close = open.contains("(") ? ")" : ""
            let body = random.pick(Self.seeds)
            let text = String(repeating: open, count: depth) + body + String(repeating: close, count: depth)
            return random.oneIn(2) ? text : TextMutator.mutate(text, random: &random, tokens: Self.tokens)
        default:
            return ValueGenerator.predicate(random.pick(self.schema.entities), random: &random)
        }
    }

    /// Parses and binds `text` for `entity` and judges the outcome.
    static func check(_ text: String, entity: EntitySchema) -> Result<String, TextFailure> {
        let clock = ContinuousClock()
        let start = clock.now
        let outcome: Result<String, TextFailure>
        do {
            let expression = try PredicateExpression.parse(text)
            let predicate = try expression.bind(to: entity, variables: ["v": .value(.int(1))])
            var row = Row(id: "x")
            for attribute in entity.attributes { row.values[attribute.name] = attribute.defaultValue ?? .null }
            _ = predicate.evaluate(row)
            _ = predicate.sql()
            outcome = .success("bound")
        } catch {
            outcome = Self.judge(error, text: text)
        }
        let elapsed = clock.now - start
        if elapsed > .seconds(10) { return .failure(TextFailure("took \(elapsed) (a hang in the making)")) }
        return outcome
    }

    static func judge(_ error: QueryError, text: String) -> Result<String, TextFailure> {
        let count = text.count
        if error.message.isEmpty { return .failure(TextFailure("\(error.code) error with an empty message")) }
        if error.position < 0 || error.position > count {
            return .failure(
                TextFailure("\(error.code) error at position \(error.position), outside 0...\(count): \(error.message)")
            )
        }
        if error.length < 0 || error.position + error.length > count + 1 {
            return .failure(
                TextFailure(
                    "\(error.code) error spans \(error.position)+\(error.length), past the text's \(count) characters"))
        }
        return .success(error.code.description)
    }

    /// A corpus file: the entity on the first line (`entity NAME`), the predicate text after it, verbatim.
    static func corpusText(_ text: String, entity: String) -> String {
        "entity \(entity)\n" + text
    }

    /// Reads a corpus file: `(entity, text)`.
    static func parseCorpus(_ file: String) throws(CorpusError) -> (entity: String, text: String) {
        guard file.hasPrefix("entity "), let newline = file.firstIndex(of: "\n") else {
            throw CorpusError("a predicate corpus file starts with 'entity NAME' on its own line")
        }
        let entity = String(file[file.index(file.startIndex, offsetBy: 7)..<newline])
        return (entity, String(file[file.index(after: newline)...]))
    }
}

/// A text input that broke a promise, in words.
struct TextFailure: Error {
    var message: String
    init(_ message: String) { self.message = message }
}
