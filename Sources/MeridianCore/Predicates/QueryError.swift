// MARK: - QueryError

/// An error in a query: predicate or sort-key text, a section key or a limit — what is wrong and where.
///
/// (Not named `PredicateError`, so that it never clashes with Foundation's type of that name.)
///
/// `position` and `length` count characters (grapheme clusters) from the start of the text, 0-based. Printed as
/// `position 12: typeMismatch: …`; ``caretDiagram(for:)`` points at the spot for a terminal:
///
/// ```
/// title BEGINSWITH 3
///                  ^
/// ```
public struct QueryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A category of predicate error; compare with the static members (`QueryError.Code.syntax`).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Wrapped: String, Sendable, Hashable {
            case syntax, unknownAttribute, typeMismatch, unboundVariable, invalidValue, tooDeep, invalidSectionKey
        }

        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// The text is malformed: an unexpected character or token, a missing operand, an unterminated string.
        public static let syntax = Code(.syntax)
        /// An attribute the entity does not have.
        public static let unknownAttribute = Code(.unknownAttribute)
        /// An operator or value that does not fit the attribute's type.
        public static let typeMismatch = Code(.typeMismatch)
        /// A `$variable` with no value in the variables given to `bind`.
        public static let unboundVariable = Code(.unboundVariable)
        /// A value that is never valid there: NaN, nil in an ordered comparison, an out-of-range integer, a bad
        /// timestamp, a `BETWEEN` without exactly two bounds.
        public static let invalidValue = Code(.invalidValue)
        /// Parentheses or `NOT`s nested deeper than ``PredicateExpression/maximumDepth``.
        public static let tooDeep = Code(.tooDeep)
        /// A section key that is not the first sort key.
        public static let invalidSectionKey = Code(.invalidSectionKey)

        public var description: String { self.wrapped.rawValue }
    }

    /// What kind of error this is.
    public var code: Code
    /// What is wrong, in words.
    public var message: String
    /// The 0-based character offset of the offending text.
    public var position: Int
    /// How many characters the offending text spans (at least 1 when printed).
    public var length: Int

    /// Creates a predicate error.
    public init(_ code: Code, _ message: String, position: Int, length: Int = 1) {
        self.code = code
        self.message = message
        self.position = position
        self.length = length
    }

    public var description: String {
        "position \(self.position): \(self.code): \(self.message)"
    }

    /// The text on one line and a second line with `^` under the offending characters.
    ///
    /// Tabs and line breaks in the text are shown as spaces so the caret stays aligned.
    ///
    /// - Parameter text: The text the error was found in.
    /// - Returns: Two lines joined by `"\n"`.
    public func caretDiagram(for text: String) -> String {
        let line = String(text.map { $0.isNewline || $0 == "\t" ? " " : $0 })
        let start = max(0, min(self.position, line.count))
        let width = max(1, min(self.length, max(1, line.count - start)))
        return line + "\n" + String(repeating: " ", count: start) + String(repeating: "^", count: width)
    }
}
