// MARK: - Values and predicates that fit a schema

internal import Foundation
internal import MeridianCore

/// Generates values of an attribute's type (with boundary cases) and predicate text over an entity, the valid
/// material the campaigns then mutate.
enum ValueGenerator {
    /// A value of `type`, often a boundary case.
    static func value(_ type: AttributeType, random: inout FuzzRandom) -> Value {
        switch type {
        case .string: .string(Self.string(random: &random))
        case .int: .int(random.interestingInteger())
        case .double:
            .double(
                random.pick([
                    0, -0.0, 1.5, -2.25, .infinity, -.infinity, .greatestFiniteMagnitude, .leastNonzeroMagnitude,
                    Double(random.interestingInteger()), Double(bitPattern: random.next() & 0x7FEF_FFFF_FFFF_FFFF),
                ]))
        case .bool: .bool(random.oneIn(2))
        case .bytes: .bytes(random.bytes(random.length(upTo: 64)))
        case .timestamp:
            .timestamp(
                Timestamp(microseconds: random.pick([0, -1, 1_700_000_000_000_000, random.interestingInteger()])))
        }
    }

    /// A string, often an awkward one.
    static func string(random: inout FuzzRandom) -> String {
        switch random.below(6) {
        case 0: ""
        case 1: String(repeating: random.pick(["a", "é", "👍🏽", "\u{301}", "\0"]), count: random.length(upTo: 300))
        case 2: String(decoding: random.bytes(random.length(upTo: 24)), as: UTF8.self)
        default: random.pick(["Café", "a", "b", "Zürich", "x%", "_", "*", "\"quoted\"", "line\nbreak", "tab\t"])
        }
    }

    /// A literal for `value` in predicate text.
    static func literal(_ value: Value) -> String {
        switch value {
        case .null: "nil"
        case .int(let i): String(i)
        case .double(let d): d.isFinite ? String(d) : "1e999"
        case .string(let s): Value.quote(s)
        case .bool(let b): b ? "true" : "false"
        case .bytes: "\"bytes\""
        case .timestamp(let t): "\"" + Self.iso8601(t) + "\""
        }
    }

    private static func iso8601(_ timestamp: Timestamp) -> String {
        let seconds = Double(timestamp.microseconds) / 1_000_000
        guard seconds.isFinite, abs(seconds) < 1e11 else { return "2024-05-01T00:00:00Z" }
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date(timeIntervalSince1970: seconds))
    }

    /// Predicate text over `entity`: comparisons joined by connectives, mostly well-typed.
    static func predicate(_ entity: EntitySchema, random: inout FuzzRandom) -> String {
        let names = [EntitySchema.idAttribute] + entity.attributes.map(\.name)
        var parts: [String] = []
        for k in 0..<random.within(1...3) {
            if k > 0 { parts.append(random.pick(["AND", "OR", "&&", "||"])) }
            if random.oneIn(5) { parts.append("NOT") }
            let name = random.pick(names)
            let type = entity.typeOfAttribute(named: name) ?? .string
            let value = Self.value(type, random: &random)
            switch random.below(8) {
            case 0: parts.append("\(name) BETWEEN {\(Self.literal(value)), \(Self.literal(value))}")
            case 1:
                parts.append("\(name) IN {\(Self.literal(value)), \(Self.literal(Self.value(type, random: &random)))}")
            case 2 where type == .string:
                parts.append(
                    "\(name) \(random.pick(["BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE"]))\(random.pick(["", "[c]", "[d]", "[cd]"])) \(Self.literal(value))"
                )
            case 3: parts.append("\(name) \(random.pick(["==", "!="])) nil")
            case 4: parts.append("\(name) == $v")
            default: parts.append("\(name) \(random.pick(["==", "!=", "<", "<=", ">", ">="])) \(Self.literal(value))")
            }
        }
        if random.oneIn(4) { return "(" + parts.joined(separator: " ") + ")" }
        return parts.joined(separator: " ")
    }
}
