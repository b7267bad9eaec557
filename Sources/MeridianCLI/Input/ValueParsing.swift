// MARK: - Values from text and JSON, by attribute type

internal import Foundation
internal import MeridianCore

/// Turns what a user typed (`key=value` arguments, CSV cells) or wrote in JSON into a ``Value`` of the attribute's
/// type. Parsing is strict: `2.5` is not an int, `yes` is not a bool; the error says what was expected.
///
/// | type | text | JSON |
/// |---|---|---|
/// | string | as typed | a string |
/// | int | `42`, `-7` | an integer (`42`, not `42.0`) |
/// | double | `2.5`, `-1e-3`, `3`, `inf` | a number (`1e999` for infinity) |
/// | bool | `true`, `false` | `true`, `false` |
/// | timestamp | ISO-8601 (`2024-05-01`, `2024-05-01T12:30:00Z`) or `now` | the same as a string, or integer microseconds |
/// | bytes | `hex:00ff` or `base64:AP8=` | the same as a string |
enum ValueParsing {
    /// The value for `text` as an attribute of `type`.
    ///
    /// - Throws: A message saying what was expected (no attribute name: the caller adds where).
    static func parse(_ text: String, as type: AttributeType) throws(ValueError) -> Value {
        switch type {
        case .string:
            return .string(text)
        case .int:
            guard let i = Int64(text) else {
                if Double(text) != nil {
                    throw ValueError("\(Value.quote(text)) is not an int (a whole number such as 42)")
                }
                throw ValueError("\(Value.quote(text)) is not an int (expected a whole number such as 42)")
            }
            return .int(i)
        case .double:
            guard let d = Double(text), !d.isNaN, !text.contains(where: { $0.isWhitespace }) else {
                throw ValueError("\(Value.quote(text)) is not a double (expected a number such as 2.5)")
            }
            return .double(d)
        case .bool:
            switch text {
            case "true": return .bool(true)
            case "false": return .bool(false)
            default: throw ValueError("\(Value.quote(text)) is not a bool (expected true or false)")
            }
        case .timestamp:
            if text == "now" { return .timestamp(Self.now()) }
            guard let t = Timestamp(iso8601: text) else {
                throw ValueError(
                    "\(Value.quote(text)) is not a timestamp (expected ISO-8601 such as 2024-05-01T12:30:00Z, or now)")
            }
            return .timestamp(t)
        case .bytes:
            return .bytes(try Self.parseBytes(text))
        }
    }

    /// The value for a JSON value as an attribute of `type`; JSON `null` is `.null`.
    static func parse(_ json: JSON, as type: AttributeType) throws(ValueError) -> Value {
        switch (json, type) {
        case (.null, _):
            return .null
        case (.string(let s), .string):
            return .string(s)
        case (.number(let n), .int):
            guard let i = Int64(n) else {
                throw ValueError("\(n) is not an int (expected a whole number in the 64-bit range)")
            }
            return .int(i)
        case (.number(let n), .double):
            guard let d = Double(n) else { throw ValueError("\(n) is not a double") }
            return .double(d)
        case (.bool(let b), .bool):
            return .bool(b)
        case (.string(let s), .timestamp):
            return try Self.parse(s, as: .timestamp)
        case (.number(let n), .timestamp):
            guard let micros = Int64(n) else {
                throw ValueError("\(n) is not a timestamp (expected an ISO-8601 string or integer microseconds)")
            }
            return .timestamp(Timestamp(microseconds: micros))
        case (.string(let s), .bytes):
            return .bytes(try Self.parseBytes(s))
        default:
            throw ValueError("expected \(Self.expectation(for: type)), found \(json.kindDescription)")
        }
    }

    /// What a JSON value for `type` looks like, for messages.
    static func expectation(for type: AttributeType) -> String {
        switch type {
        case .string: "a string"
        case .int: "an integer"
        case .double: "a number"
        case .bool: "true or false"
        case .timestamp: "an ISO-8601 string or integer microseconds"
        case .bytes: "a \"hex:…\" or \"base64:…\" string"
        }
    }

    static func parseBytes(_ text: String) throws(ValueError) -> [UInt8] {
        if text.hasPrefix("hex:") {
            let digits = Array(text.dropFirst(4))
            guard digits.count % 2 == 0 else { throw ValueError("hex bytes need an even number of digits") }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(digits.count / 2)
            var i = 0
            while i < digits.count {
                guard let hi = digits[i].hexDigitValue, let lo = digits[i + 1].hexDigitValue else {
                    throw ValueError("\(Value.quote(text)) is not valid hex")
                }
                bytes.append(UInt8(hi * 16 + lo))
                i += 2
            }
            return bytes
        }
        if text.hasPrefix("base64:") {
            var body = String(text.dropFirst(7))
            while body.count % 4 != 0 { body += "=" }
            guard let data = Data(base64Encoded: body) else {
                throw ValueError("\(Value.quote(text)) is not valid base64")
            }
            return [UInt8](data)
        }
        throw ValueError("bytes are written hex:00ff or base64:AP8=")
    }

    static func now() -> Timestamp {
        Timestamp(secondsSince1970: Date().timeIntervalSince1970)
    }
}

/// A value that does not fit its attribute's type; the message says what was expected.
struct ValueError: Error, Sendable, Equatable, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { self.message }
}

// MARK: - Names

/// "Did you mean" suggestions for misspelt entity and attribute names.
enum NameSuggestion {
    /// The candidate closest to `name` by edit distance (case-insensitive), when it is close enough to be a typo.
    static func closest(to name: String, in candidates: [String]) -> String? {
        let target = Array(name.lowercased())
        var best: (String, Int)?
        for candidate in candidates {
            let d = Self.distance(target, Array(candidate.lowercased()))
            if d <= (target.count <= 3 ? 1 : max(2, target.count / 3)), best == nil || d < best!.1 {
                best = (candidate, d)
            }
        }
        return best?.0
    }

    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }

    /// `unknown attribute 'titel' for Point (did you mean 'title'?); its attributes are id, title, …`
    static func unknownAttribute(_ name: String, in entity: EntitySchema) -> String {
        let names = [EntitySchema.idAttribute] + entity.attributes.map(\.name)
        var text = "unknown attribute '\(name)' for \(entity.name)"
        if let guess = Self.closest(to: name, in: names) { text += " (did you mean '\(guess)'?)" }
        return text + "; its attributes are " + names.joined(separator: ", ")
    }

    /// `unknown entity 'Pont' (did you mean 'Point'?); the entities are Point, Author`
    static func unknownEntity(_ name: String, in schema: Schema) -> String {
        let names = schema.entities.map(\.name)
        var text = "unknown entity '\(name)'"
        if let guess = Self.closest(to: name, in: names) { text += " (did you mean '\(guess)'?)" }
        return text + "; the entities are " + (names.isEmpty ? "(none)" : names.joined(separator: ", "))
    }
}

extension Schema {
    /// The entity with this name, or a bad-input error that suggests the closest name.
    func cliEntity(_ name: String) throws(CLIError) -> EntitySchema {
        guard let entity = self.entity(named: name) else {
            throw CLIError.badInput(NameSuggestion.unknownEntity(name, in: self))
        }
        return entity
    }
}
