// MARK: - CLIError

/// A failure of a `meridian` command: the message printed on standard error and the exit status it ends with.
///
/// The exit statuses are a contract that scripts rely on (docs/cli.md): 2 for usage or bad input, 3 when the server
/// cannot be reached, 4 when the server rejects a write, 5 when it refuses the caller's credentials, 1 for anything
/// else.
public struct CLIError: Error, Sendable, CustomStringConvertible {
    /// The process exit status of a failure; compare with the static members.
    public struct Status: Sendable, Hashable, CustomStringConvertible {
        private enum Wrapped: Int32, Sendable, Hashable {
            case failure = 1
            case badInput = 2
            case unreachable = 3
            case rejected = 4
            case unauthenticated = 5
        }

        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// 1: an unexpected failure (a fault in the server, a protocol violation, an I/O error).
        public static let failure = Status(.failure)
        /// 2: bad usage or bad input (a malformed value, an unknown attribute, a bad predicate).
        public static let badInput = Status(.badInput)
        /// 3: the server could not be reached.
        public static let unreachable = Status(.unreachable)
        /// 4: the server rejected a write (conflict, validation, not found, already exists).
        public static let rejected = Status(.rejected)
        /// 5: the server refused the credentials (none, invalid or expired: give --token, --token-file or
        /// MERIDIAN_TOKEN).
        public static let unauthenticated = Status(.unauthenticated)

        /// The process exit code.
        public var code: Int32 { self.wrapped.rawValue }

        public var description: String { "\(self.wrapped) (\(self.wrapped.rawValue))" }
    }

    /// The exit status.
    public var status: Status
    /// What went wrong, complete on its own; may span several lines (a predicate and its caret).
    public var message: String
    /// The error this one wraps, if any.
    public var cause: (any Error)?

    /// Creates an error.
    public init(_ status: Status, _ message: String, cause: (any Error)? = nil) {
        self.status = status
        self.message = message
        self.cause = cause
    }

    /// Bad usage or input (exit 2).
    static func badInput(_ message: String, cause: (any Error)? = nil) -> CLIError {
        CLIError(.badInput, message, cause: cause)
    }

    public var description: String {
        var text = "\(self.status): \"\(self.message)\""
        if let cause = self.cause { text += " (cause: \(cause))" }
        return text
    }

    /// The same error with `context` prefixed to its message (`context: message`).
    func within(_ context: String) -> CLIError {
        CLIError(self.status, "\(context): \(self.message)", cause: self.cause)
    }
}
