// MARK: - StoreError

/// An error from the store: a code, a message, and the cause, with the operation and attribute where they apply.
///
/// Printed as `code: "message"` followed by ` (cause: …)` when there is a cause.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// A category of store error; compare with the static members (`StoreError.Code.conflict`).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Wrapped: String, Sendable, Hashable {
            case validation, conflict, notFound, alreadyExists, migrationRefused, schemaMismatch, historyPruned
            case io, internalError, tooLarge, timedOut, permissionDenied
        }

        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// A value does not fit the schema (type, required, NaN, unknown attribute).
        public static let validation = Code(.validation)
        /// An expected row version did not match under the store-wins policy.
        public static let conflict = Code(.conflict)
        /// An update or delete named a row that does not exist.
        public static let notFound = Code(.notFound)
        /// An insert named an id that already exists.
        public static let alreadyExists = Code(.alreadyExists)
        /// The write's ``WriteAuthorizer`` (the schema's rules) did not allow it.
        public static let permissionDenied = Code(.permissionDenied)
        /// The file's schema differs from the served one in a way that cannot be migrated automatically.
        public static let migrationRefused = Code(.migrationRefused)
        /// The request names something the schema does not have.
        public static let schemaMismatch = Code(.schemaMismatch)
        /// The change log no longer holds the requested changes.
        public static let historyPruned = Code(.historyPruned)
        /// A read ran longer than the store's `readTimeout`, and was interrupted.
        public static let timedOut = Code(.timedOut)
        /// A write would leave a row larger than the store's `maxRowBytes`.
        public static let tooLarge = Code(.tooLarge)
        /// SQLite or the file system failed (disk full, read-only, corrupt).
        public static let io = Code(.io)
        /// A bug: an invariant of the store did not hold.
        public static let internalError = Code(.internalError)

        public var description: String { self.wrapped.rawValue }
    }

    /// What kind of error this is.
    public var code: Code
    /// What is wrong, in words.
    public var message: String
    /// The index of the operation in its transaction, when the error is about one.
    public var operationIndex: Int?
    /// The attributes at fault: the invalid one, or the conflicting ones.
    public var attributes: [String]
    /// The underlying error, if any.
    public var cause: (any Error)?

    /// Creates a store error.
    public init(
        _ code: Code,
        _ message: String,
        operationIndex: Int? = nil,
        attributes: [String] = [],
        cause: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.operationIndex = operationIndex
        self.attributes = attributes
        self.cause = cause
    }

    public var description: String {
        var text = "\(self.code): \"\(self.message)\""
        if let cause = self.cause { text += " (cause: \(cause))" }
        return text
    }
}
