// MARK: - StringMatchOperator

/// The string-matching operators of the predicate language, evaluated by ``StringMatcher``.
///
/// The raw value is the name passed to the SQLite function `meridian_match`.
public enum StringMatchOperator: String, Sendable, Hashable, CaseIterable {
    /// `BEGINSWITH`: the value starts with the pattern.
    case beginsWith = "beginswith"
    /// `ENDSWITH`: the value ends with the pattern.
    case endsWith = "endswith"
    /// `CONTAINS`: the pattern occurs in the value (the empty pattern occurs in every value).
    case contains = "contains"
    /// `LIKE`: the value matches the wildcard pattern (`*` any run, `?` one character, `\` escapes).
    case like = "like"
}

// MARK: - StringMatcher

/// The one implementation of `BEGINSWITH`, `ENDSWITH`, `CONTAINS` and `LIKE`, called by the in-memory evaluator
/// and registered with SQLite as `meridian_match(op, flags, value, pattern)`.
///
/// The value is folded with ``Folding/fold(_:_:)``; the pattern must already be folded with the same options (a
/// bound ``RowPredicate`` folds its literals once). Matching is on UTF-8 bytes for the first three operators and on
/// Unicode scalars for `LIKE`, so `?` matches exactly one scalar: a decomposed `"e\u{301}"` is two.
public enum StringMatcher {
    /// Whether `value` matches `foldedPattern` under `op`.
    ///
    /// ```swift
    /// StringMatcher.matches(.like, options: .caseInsensitive, value: "Crème", foldedPattern: "cr?me")  // true
    /// ```
    ///
    /// - Parameters:
    ///   - op: The operator.
    ///   - options: The folding applied to `value`.
    ///   - value: The attribute's value, unfolded.
    ///   - foldedPattern: The pattern, already folded under `options`.
    /// - Returns: Whether the value matches.
    public static func matches(
        _ op: StringMatchOperator,
        options: StringOptions,
        value: String,
        foldedPattern: String
    ) -> Bool {
        let folded = Folding.fold(value, options)
        switch op {
        case .beginsWith:
            return folded.utf8.starts(with: foldedPattern.utf8)
        case .endsWith:
            return folded.utf8.reversed().starts(with: foldedPattern.utf8.reversed())
        case .contains:
            return containsBytes(Array(folded.utf8), Array(foldedPattern.utf8))
        case .like:
            return LikePattern(foldedPattern).matches(folded)
        }
    }

    static func containsBytes(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        if needle.isEmpty { return true }
        guard haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            var k = 1
            while k < needle.count, haystack[start + k] == needle[k] { k += 1 }
            if k == needle.count { return true }
        }
        return false
    }
}

// MARK: - LikePattern

/// A `LIKE` pattern compiled to tokens: `*` matches any run of scalars, `?` exactly one, `\x` the literal `x`.
///
/// A trailing lone `\` matches a literal backslash (the binder rejects such patterns in predicate text).
struct LikePattern: Sendable, Hashable {
    enum Token: Sendable, Hashable {
        case scalar(Unicode.Scalar)
        case one
        case anyRun
    }

    let tokens: [Token]

    init(_ pattern: String) {
        var tokens: [Token] = []
        var escaped = false
        for scalar in pattern.unicodeScalars {
            if escaped {
                tokens.append(.scalar(scalar))
                escaped = false
                continue
            }
            switch scalar {
            case "\\": escaped = true
            case "*": if tokens.last != .anyRun { tokens.append(.anyRun) }
            case "?": tokens.append(.one)
            default: tokens.append(.scalar(scalar))
            }
        }
        if escaped { tokens.append(.scalar("\\")) }
        self.tokens = tokens
    }

    /// Whether a pattern ends with an unpaired escape character.
    static func hasDanglingEscape(_ pattern: String) -> Bool {
        var escaped = false
        for scalar in pattern.unicodeScalars {
            escaped = !escaped && scalar == "\\"
        }
        return escaped
    }

    /// Greedy wildcard matching with single-point backtracking: O(n·m) in the worst case, no recursion.
    func matches(_ value: String) -> Bool {
        let text = Array(value.unicodeScalars)
        var t = 0
        var p = 0
        var starP = -1
        var starT = 0
        while t < text.count {
            if p < self.tokens.count {
                switch self.tokens[p] {
                case .anyRun:
                    starP = p
                    starT = t
                    p += 1
                    continue
                case .one:
                    t += 1
                    p += 1
                    continue
                case .scalar(let s) where s == text[t]:
                    t += 1
                    p += 1
                    continue
                case .scalar:
                    break
                }
            }
            guard starP >= 0 else { return false }
            p = starP + 1
            starT += 1
            t = starT
        }
        while p < self.tokens.count, self.tokens[p] == .anyRun { p += 1 }
        return p == self.tokens.count
    }
}
