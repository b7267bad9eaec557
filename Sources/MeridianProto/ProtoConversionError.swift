// MARK: - ProtoConversionError

/// A wire message that cannot be turned into a MeridianCore value: NaN, a missing or unknown case, an invalid schema.
///
/// Encoding Core values never fails; decoding what arrives from the network is strict, so that nothing invalid gets
/// past the edge. The server answers such an error as `ErrorDetail.Code.malformedRequest` (or `validation` for a
/// NaN in a write); the client treats it as a protocol violation by the server.
package struct ProtoConversionError: Error, Sendable, CustomStringConvertible {
    /// The kind of conversion error.
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Wrapped: String, Sendable, Hashable {
            case invalidValue, missingField, unknownEnumValue, invalidSchema, invalidRequest
        }

        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// A value that no entry point accepts (a NaN double).
        package static let invalidValue = Code(.invalidValue)
        /// A required field or oneof case is not set.
        package static let missingField = Code(.missingField)
        /// An enum holds `UNSPECIFIED` where a value is required, or a value this build does not know.
        package static let unknownEnumValue = Code(.unknownEnumValue)
        /// The schema on the wire does not form a valid schema (`cause` holds the `SchemaError`).
        package static let invalidSchema = Code(.invalidSchema)
        /// A request's fields contradict each other (a delete with values, an update without an id, a zero limit).
        package static let invalidRequest = Code(.invalidRequest)

        package var description: String { self.wrapped.rawValue }
    }

    /// The kind of error.
    package var code: Code
    /// What is wrong, naming where (`row "p1" attribute "latitude": NaN is not a valid double`).
    package var message: String
    /// The error this one wraps, if any.
    package var cause: (any Error)?
    /// In a transaction, the 0-based index of the operation at fault.
    package var operationIndex: Int?

    /// Creates an error.
    package init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    package var description: String {
        var text = "\(self.code): \"\(self.message)\""
        if let cause = self.cause { text += " (cause: \(cause))" }
        return text
    }

    /// The same error with `context` prefixed to its message (`context: message`).
    func within(_ context: String) -> ProtoConversionError {
        var error = ProtoConversionError(self.code, "\(context): \(self.message)", cause: self.cause)
        error.operationIndex = self.operationIndex
        return error
    }
}
