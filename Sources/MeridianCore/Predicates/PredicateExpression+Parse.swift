// MARK: - Parsing

extension PredicateExpression {
    /// Parses predicate text into an unchecked expression.
    ///
    /// The grammar, loosest binding first: `OR` (`||`), `AND` (`&&`), `NOT` (`!`), then parentheses,
    /// `TRUEPREDICATE`, `FALSEPREDICATE` and comparisons `attribute op[modifier] operand`. Keywords are
    /// case-insensitive. Any input, even random bytes, either parses or throws; nothing crashes.
    ///
    /// ```swift
    /// let e = try PredicateExpression.parse(#"NOT (rating > 3) OR title LIKE[c] "w*""#)
    /// ```
    ///
    /// - Parameter text: The predicate text.
    /// - Returns: The syntax tree, with source positions.
    /// - Throws: ``QueryError`` with code `syntax`, `invalidValue` (a literal that can never be valid) or
    ///   `tooDeep`, and the character position of the problem.
    public static func parse(_ text: String) throws(QueryError) -> PredicateExpression {
        var parser = PredicateParser(tokens: try PredicateLexer.tokenize(text))
        return try parser.parseAll()
    }
}

/// A recursive-descent parser over lexed tokens, with a depth limit.
struct PredicateParser {
    private let tokens: [PredicateToken]
    private var index = 0
    private var depth = 0

    init(tokens: [PredicateToken]) {
        self.tokens = tokens
    }

    private var current: PredicateToken { self.tokens[min(self.index, self.tokens.count - 1)] }

    private mutating func advance() -> PredicateToken {
        let token = self.current
        if self.index < self.tokens.count - 1 { self.index += 1 }
        return token
    }

    private func isKeyword(_ keyword: PredicateKeyword) -> Bool {
        self.current.kind == .keyword(keyword)
    }

    private func isSymbol(_ symbols: String...) -> Bool {
        if case .symbol(let s) = self.current.kind { return symbols.contains(s) }
        return false
    }

    private func error(_ message: String, at token: PredicateToken? = nil) -> QueryError {
        let token = token ?? self.current
        return QueryError(.syntax, message, position: token.position, length: max(1, token.length))
    }

    mutating func parseAll() throws(QueryError) -> PredicateExpression {
        if self.current.kind == .end {
            throw self.error("empty predicate (use TRUEPREDICATE to match everything)")
        }
        let expression = try self.parseOr()
        guard self.current.kind == .end else {
            throw self.error("unexpected \(self.current.display) after a complete predicate")
        }
        return expression
    }

    private mutating func parseOr() throws(QueryError) -> PredicateExpression {
        var lhs = try self.parseAnd()
        while self.isKeyword(.or) || self.isSymbol("||") {
            _ = self.advance()
            lhs = .or(lhs, try self.parseAnd())
        }
        return lhs
    }

    private mutating func parseAnd() throws(QueryError) -> PredicateExpression {
        var lhs = try self.parseUnary()
        while self.isKeyword(.and) || self.isSymbol("&&") {
            _ = self.advance()
            lhs = .and(lhs, try self.parseUnary())
        }
        return lhs
    }

    private mutating func enter(_ token: PredicateToken) throws(QueryError) {
        self.depth += 1
        if self.depth > PredicateExpression.maximumDepth {
            throw QueryError(
                .tooDeep,
                "parentheses and NOT nested deeper than \(PredicateExpression.maximumDepth)",
                position: token.position,
                length: max(1, token.length)
            )
        }
    }

    private mutating func parseUnary() throws(QueryError) -> PredicateExpression {
        if self.isKeyword(.not) || self.isSymbol("!") {
            let token = self.advance()
            try self.enter(token)
            let operand = try self.parseUnary()
            self.depth -= 1
            return .negation(operand, token.range)
        }
        return try self.parsePrimary()
    }

    private mutating func parsePrimary() throws(QueryError) -> PredicateExpression {
        let token = self.current
        switch token.kind {
        case .symbol("("):
            _ = self.advance()
            try self.enter(token)
            let inner = try self.parseOr()
            guard self.isSymbol(")") else {
                throw self.error(
                    "expected ')' to close the '(' at position \(token.position), found \(self.current.display)")
            }
            _ = self.advance()
            self.depth -= 1
            return inner
        case .keyword(.truepredicate):
            _ = self.advance()
            return .constant(true, token.range)
        case .keyword(.falsepredicate):
            _ = self.advance()
            return .constant(false, token.range)
        case .identifier(let name):
            _ = self.advance()
            return .comparison(try self.parseComparison(attribute: name, at: token))
        case .claim(let name):
            _ = self.advance()
            return .claimTest(try self.parseComparison(attribute: name, at: token))
        case .number, .string, .variable, .keyword(.true), .keyword(.false), .keyword(.nil), .keyword(.null):
            throw self.error(
                "the left side of a comparison must be an attribute name, not \(token.display); write the attribute first"
            )
        case .symbol("{"):
            throw self.error("the left side of a comparison must be an attribute name, not a list")
        case .end:
            throw self.error("expected a comparison, found the end of the text")
        default:
            throw self.error("expected an attribute name, '(' or NOT, found \(token.display)")
        }
    }

    private mutating func parseComparison(
        attribute: String,
        at attributeToken: PredicateToken
    ) throws(QueryError) -> PredicateComparison {
        let opToken = self.advance()
        let op: ComparisonOperator
        switch opToken.kind {
        case .symbol("=="), .symbol("="): op = .equal
        case .symbol("!="), .symbol("<>"): op = .notEqual
        case .symbol("<"): op = .less
        case .symbol("<="): op = .lessOrEqual
        case .symbol(">"): op = .greater
        case .symbol(">="): op = .greaterOrEqual
        case .keyword(.between): op = .between
        case .keyword(.in): op = .in
        case .keyword(.beginswith): op = .beginsWith
        case .keyword(.endswith): op = .endsWith
        case .keyword(.contains): op = .contains
        case .keyword(.like): op = .like
        default:
            throw self.error("expected an operator after '\(attribute)', found \(opToken.display)", at: opToken)
        }
        var options: StringOptions = []
        var opLength = opToken.length
        if case .modifier(let o) = self.current.kind {
            options = o
            opLength = self.current.position + self.current.length - opToken.position
            _ = self.advance()
        }
        let operand = try self.parseOperand(after: opToken, allowList: true)
        return PredicateComparison(
            attribute: attribute,
            attributeRange: attributeToken.range,
            op: op,
            opRange: SourceRange(position: opToken.position, length: opLength),
            options: options,
            operand: operand
        )
    }

    private mutating func parseOperand(
        after opToken: PredicateToken,
        allowList: Bool
    ) throws(QueryError) -> PredicateOperand {
        let token = self.advance()
        switch token.kind {
        case .number(let v): return .value(v, token.range)
        case .string(let s): return .value(.string(s), token.range)
        case .keyword(.true): return .value(.bool(true), token.range)
        case .keyword(.false): return .value(.bool(false), token.range)
        case .keyword(.nil), .keyword(.null): return .value(.null, token.range)
        case .variable(let name): return .variable(name, token.range)
        case .claim(let name): return .claim(name, token.range)
        case .symbol("{") where allowList:
            var items: [PredicateOperand] = []
            if self.isSymbol("}") {
                let close = self.advance()
                return .list(items, SourceRange(position: token.position, length: close.position + 1 - token.position))
            }
            while true {
                items.append(try self.parseOperand(after: token, allowList: false))
                if self.isSymbol(",") {
                    _ = self.advance()
                    continue
                }
                guard self.isSymbol("}") else {
                    throw self.error("expected ',' or '}' in the list, found \(self.current.display)")
                }
                let close = self.advance()
                return .list(items, SourceRange(position: token.position, length: close.position + 1 - token.position))
            }
        case .symbol("{"):
            throw self.error("lists cannot be nested", at: token)
        case .identifier(let name):
            throw self.error(
                "expected a value, found the attribute '\(name)' (comparing two attributes is not supported)",
                at: token
            )
        default:
            let what = allowList ? "after \(opToken.display)" : "in the list"
            throw self.error("expected a value \(what), found \(token.display)", at: token)
        }
    }
}
