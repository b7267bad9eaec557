// MARK: - SchemaError

/// An error in a schema: its file, the line and column where the format allows, and what is wrong.
///
/// Printed as `file:line:column: code: message`, e.g.
/// `schema.yaml:5:42: invalidDefault: Point.latitude: default 'north' is not a double`. Without a file:
/// `line 5, column 42: invalidDefault: …`.
public struct SchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A category of schema error; compare with the static members (`SchemaError.Code.unknownEntity`).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Wrapped: String, Sendable, Hashable {
            case syntax, invalidName, duplicateName, unknownEntity, unknownAttribute, unknownKey, missingKey
            case typeMismatch, invalidDefault, invalidIndex, unreadable, unknownType
        }

        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// The file is not well-formed YAML or JSON.
        public static let syntax = Code(.syntax)
        /// A name is not an identifier or is reserved.
        public static let invalidName = Code(.invalidName)
        /// An entity, attribute or index is declared twice.
        public static let duplicateName = Code(.duplicateName)
        /// An entity that does not exist was named.
        public static let unknownEntity = Code(.unknownEntity)
        /// An attribute that does not exist was named.
        public static let unknownAttribute = Code(.unknownAttribute)
        /// A key the format does not know (often a typo).
        public static let unknownKey = Code(.unknownKey)
        /// A key the format requires is missing.
        public static let missingKey = Code(.missingKey)
        /// A value has the wrong type.
        public static let typeMismatch = Code(.typeMismatch)
        /// A default value does not fit its attribute.
        public static let invalidDefault = Code(.invalidDefault)
        /// An index is malformed.
        public static let invalidIndex = Code(.invalidIndex)
        /// The file could not be read.
        public static let unreadable = Code(.unreadable)
        /// An attribute type that does not exist was named.
        public static let unknownType = Code(.unknownType)

        public var description: String { self.wrapped.rawValue }
    }

    /// What kind of error this is.
    public var code: Code
    /// What is wrong, in words.
    public var message: String
    /// The file the schema came from, when it came from one.
    public var file: String?
    /// The 1-based line, when known.
    public var line: Int?
    /// The 1-based column, when known.
    public var column: Int?

    /// Creates a schema error.
    public init(_ code: Code, _ message: String, file: String? = nil, line: Int? = nil, column: Int? = nil) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String {
        var location = ""
        if let file = self.file {
            location = file
            if let line = self.line {
                location += ":\(line)"
                if let column = self.column { location += ":\(column)" }
            }
            location += ": "
        } else if let line = self.line {
            location = "line \(line)"
            if let column = self.column { location += ", column \(column)" }
            location += ": "
        }
        return "\(location)\(self.code): \(self.message)"
    }
}
