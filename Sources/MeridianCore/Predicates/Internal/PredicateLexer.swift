// MARK: - PredicateLexer

/// One token of predicate text, with its character range.
struct PredicateToken: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case identifier(String)
        case keyword(PredicateKeyword)
        case number(Value)
        case string(String)
        case variable(String)
        /// `@name`: a claim of the caller's identity, allowed only in the schema's rules.
        case claim(String)
        case symbol(String)
        case modifier(StringOptions)
        case end
    }

    var kind: Kind
    var position: Int
    var length: Int

    var range: SourceRange { SourceRange(position: self.position, length: self.length) }

    /// How the token reads in an error message.
    var display: String {
        switch self.kind {
        case .identifier(let name): "'\(name)'"
        case .keyword(let k): "'\(k.rawValue.uppercased())'"
        case .number(let v): "the number \(v)"
        case .string(let s): "the string \(Value.quote(s))"
        case .variable(let name): "'$\(name)'"
        case .claim(let name): "'@\(name)'"
        case .symbol(let s): "'\(s)'"
        case .modifier(let o): "'\(o)'"
        case .end: "the end of the text"
        }
    }
}

/// The predicate language's keywords, matched case-insensitively.
enum PredicateKeyword: String, Sendable, Hashable, CaseIterable {
    case and, or, not, between, `in`, beginswith, endswith, contains, like, truepredicate, falsepredicate
    case `true`, `false`, `nil`, null
}

/// Splits predicate text into tokens; positions are grapheme offsets.
struct PredicateLexer {
    private let chars: [Character]
    private var i = 0

    init(_ text: String) {
        self.chars = Array(text)
    }

    /// All tokens, ending with `.end`.
    static func tokenize(_ text: String) throws(QueryError) -> [PredicateToken] {
        var lexer = PredicateLexer(text)
        var tokens: [PredicateToken] = []
        while true {
            let token = try lexer.next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private func peek(_ offset: Int = 0) -> Character? {
        let k = self.i + offset
        return k < self.chars.count ? self.chars[k] : nil
    }

    private static func isIdentifierStart(_ c: Character) -> Bool {
        c.isASCII && (c.isLetter || c == "_")
    }

    private static func isIdentifierPart(_ c: Character) -> Bool {
        c.isASCII && (c.isLetter || c.isNumber || c == "_")
    }

    private static func isDigit(_ c: Character?) -> Bool {
        guard let c, c.isASCII, let ascii = c.asciiValue else { return false }
        return ascii >= 48 && ascii <= 57
    }

    private mutating func next() throws(QueryError) -> PredicateToken {
        while let c = self.peek(), c.isWhitespace { self.i += 1 }
        let start = self.i
        guard let c = self.peek() else { return PredicateToken(kind: .end, position: start, length: 0) }
        func token(_ kind: PredicateToken.Kind) -> PredicateToken {
            PredicateToken(kind: kind, position: start, length: self.i - start)
        }
        if Self.isIdentifierStart(c) {
            var name = ""
            while let d = self.peek(), Self.isIdentifierPart(d) {
                name.append(d)
                self.i += 1
            }
            if let keyword = PredicateKeyword(rawValue: name.lowercased()) { return token(.keyword(keyword)) }
            return token(.identifier(name))
        }
        if Self.isDigit(c) || (c == "-" && Self.isDigit(self.peek(1))) {
            return token(.number(try self.number()))
        }
        if c == "\"" || c == "'" {
            return token(.string(try self.string(quote: c)))
        }
        if c == "$" || c == "@" {
            self.i += 1
            guard let d = self.peek(), Self.isIdentifierStart(d) else {
                let what = c == "$" ? "a variable" : "a claim"
                throw QueryError(.syntax, "expected \(what) name after '\(c)'", position: start)
            }
            var name = ""
            while let d = self.peek(), Self.isIdentifierPart(d) {
                name.append(d)
                self.i += 1
            }
            return token(c == "$" ? .variable(name) : .claim(name))
        }
        if c == "[" {
            return token(.modifier(try self.modifier()))
        }
        let two = self.peek(1).map { String(c) + String($0) } ?? ""
        if ["==", "!=", "<>", "<=", ">=", "&&", "||"].contains(two) {
            self.i += 2
            return token(.symbol(two))
        }
        if ["=", "<", ">", "!", "(", ")", "{", "}", ","].contains(String(c)) {
            self.i += 1
            return token(.symbol(String(c)))
        }
        throw QueryError(.syntax, "unexpected character \(Value.quote(String(c)))", position: start)
    }

    private mutating func number() throws(QueryError) -> Value {
        let start = self.i
        var text = ""
        if self.peek() == "-" {
            text.append("-")
            self.i += 1
        }
        var isDouble = false
        func digits() {
            while Self.isDigit(self.peek()), let d = self.peek() {
                text.append(d)
                self.i += 1
            }
        }
        digits()
        if self.peek() == ".", Self.isDigit(self.peek(1)) {
            isDouble = true
            text.append(".")
            self.i += 1
            digits()
        }
        if let e = self.peek(), e == "e" || e == "E" {
            let signed = self.peek(1) == "+" || self.peek(1) == "-"
            if Self.isDigit(self.peek(signed ? 2 : 1)) {
                isDouble = true
                text.append("e")
                if signed, let s = self.peek(1) { text.append(s) }
                self.i += signed ? 2 : 1
                digits()
            }
        }
        if let d = self.peek(), Self.isIdentifierPart(d) || d == "." {
            throw QueryError(.syntax, "malformed number", position: start, length: self.i - start + 1)
        }
        if !isDouble {
            guard let value = Int64(text) else {
                throw QueryError(
                    .invalidValue,
                    "integer \(text) is out of the 64-bit range",
                    position: start,
                    length: self.i - start
                )
            }
            return .int(value)
        }
        guard let value = Double(text), value.isFinite else {
            throw QueryError(
                .invalidValue, "number \(text) is out of range", position: start, length: self.i - start)
        }
        return .double(value)
    }

    private mutating func string(quote: Character) throws(QueryError) -> String {
        let start = self.i
        self.i += 1
        var out = ""
        while true {
            guard let c = self.peek() else {
                throw QueryError(.syntax, "unterminated string", position: start, length: self.i - start)
            }
            self.i += 1
            if c == quote { return out }
            guard c == "\\" else {
                out.append(c)
                continue
            }
            let escapeStart = self.i - 1
            guard let e = self.peek() else {
                throw QueryError(.syntax, "unterminated string", position: start, length: self.i - start)
            }
            self.i += 1
            switch e {
            case "\"": out.append("\"")
            case "'": out.append("'")
            case "\\": out.append("\\")
            case "n": out.append("\n")
            case "t": out.append("\t")
            case "r": out.append("\r")
            case "u":
                out.unicodeScalars.append(try self.unicodeEscape(start: escapeStart))
            default:
                throw QueryError(
                    .syntax,
                    "unknown escape \(Value.quote("\\" + String(e))) (use \\\" \\' \\\\ \\n \\t \\r \\u{hex})",
                    position: escapeStart,
                    length: 2
                )
            }
        }
    }

    /// Reads `{hex}` after `\u`.
    private mutating func unicodeEscape(start: Int) throws(QueryError) -> Unicode.Scalar {
        guard self.peek() == "{" else {
            throw QueryError(.syntax, "expected '{' after \\u", position: start, length: 2)
        }
        self.i += 1
        var hex = ""
        while let c = self.peek(), c != "}", hex.count <= 8 {
            hex.append(c)
            self.i += 1
        }
        guard self.peek() == "}" else {
            throw QueryError(.syntax, "unterminated \\u{…} escape", position: start, length: self.i - start)
        }
        self.i += 1
        guard !hex.isEmpty, hex.count <= 8, let code = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(code) else {
            throw QueryError(
                .invalidValue,
                "\\u{\(hex)} is not a Unicode scalar value",
                position: start,
                length: self.i - start
            )
        }
        return scalar
    }

    /// Reads `[c]`, `[d]`, `[cd]` (letters in any order and case).
    private mutating func modifier() throws(QueryError) -> StringOptions {
        let start = self.i
        self.i += 1
        var options: StringOptions = []
        while let c = self.peek(), c != "]" {
            switch c {
            case "c", "C": options.insert(.caseInsensitive)
            case "d", "D": options.insert(.diacriticInsensitive)
            default:
                throw QueryError(
                    .syntax,
                    "unknown modifier \(Value.quote(String(c))) (use [c], [d] or [cd])",
                    position: self.i
                )
            }
            self.i += 1
        }
        guard self.peek() == "]" else {
            throw QueryError(
                .syntax, "unterminated modifier (use [c], [d] or [cd])", position: start, length: self.i - start)
        }
        self.i += 1
        guard !options.isEmpty else {
            throw QueryError(.syntax, "empty modifier (use [c], [d] or [cd])", position: start, length: 2)
        }
        return options
    }
}
