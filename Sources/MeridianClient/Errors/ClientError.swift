// MARK: - ClientError

internal import MeridianCore

/// Every error MeridianClient reports: a code, a message complete on its own, and the underlying cause.
///
/// Server rejections keep the server's typed detail: a conflict names the attributes changed on both sides and the
/// store's current version; a bad predicate carries its position in the text.
///
/// ```swift
/// do {
///     try await context.save().confirmed()
/// } catch let error as ClientError where error.code == .conflict {
///     print(error.attributes, error.currentVersion ?? 0)
/// }
/// ```
public struct ClientError: Error, Sendable, CustomStringConvertible {
    /// The kind of error. New codes may be added; switch with a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Wrapped: String, Sendable, Hashable {
            case validation, conflict, notFound, alreadyExists, badPredicate, unknownEntity, unknownAttribute
            case tooManySubscriptions, malformedRequest, messageTooLarge, schemaMismatch, shuttingDown, `internal`
            case unsupportedProtocol, limitExceeded, unauthenticated, permissionDenied
            case unavailable, cancelled, modelMismatch, cacheFailure, notSubscribed, closed
        }

        let wrapped: Wrapped
        init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// A value does not fit its attribute (wrong type, NaN, a required attribute missing).
        public static let validation = Code(.validation)
        /// The row changed since the version the write expected (store wins).
        public static let conflict = Code(.conflict)
        /// An update or delete named a row that does not exist.
        public static let notFound = Code(.notFound)
        /// An insert named a taken id, or a unique index would be violated.
        public static let alreadyExists = Code(.alreadyExists)
        /// A predicate does not parse or type-check; ``ClientError/position`` locates it.
        public static let badPredicate = Code(.badPredicate)
        /// The entity is not in the schema.
        public static let unknownEntity = Code(.unknownEntity)
        /// An attribute is not in the entity.
        public static let unknownAttribute = Code(.unknownAttribute)
        /// The server holds as many subscriptions for this client as it allows.
        public static let tooManySubscriptions = Code(.tooManySubscriptions)
        /// A message broke the protocol.
        public static let malformedRequest = Code(.malformedRequest)
        /// A message exceeded the server's size limit.
        public static let messageTooLarge = Code(.messageTooLarge)
        /// The server's schema differs from the one the request (or the cache) assumes.
        public static let schemaMismatch = Code(.schemaMismatch)
        /// The server is shutting down.
        public static let shuttingDown = Code(.shuttingDown)
        /// The server does not serve the protocol version this library speaks (it is older or newer than the
        /// versions the server supports).
        public static let unsupportedProtocol = Code(.unsupportedProtocol)
        /// The request is over one of the server's limits (operations in a transaction, …); the message names it.
        public static let limitExceeded = Code(.limitExceeded)
        /// The call carried no valid identity (no token, an invalid or expired one): give
        /// ``MeridianContainer/Configuration/credentials``, or a fresh token.
        public static let unauthenticated = Code(.unauthenticated)
        /// The schema's rules do not allow the write (or a refresh named another subject); the message names the rule.
        public static let permissionDenied = Code(.permissionDenied)
        /// A fault in the server or in this library.
        public static let `internal` = Code(.internal)
        /// The server could not be reached.
        public static let unavailable = Code(.unavailable)
        /// The operation was cancelled.
        public static let cancelled = Code(.cancelled)
        /// A model type does not decode from (or encode to) the entity's rows.
        public static let modelMismatch = Code(.modelMismatch)
        /// The local cache file could not be read or written.
        public static let cacheFailure = Code(.cacheFailure)
        /// A narrowing controller's parent is closed, or a region was set on a controller without a subscription.
        public static let notSubscribed = Code(.notSubscribed)
        /// The controller or container is closed.
        public static let closed = Code(.closed)

        public var description: String { self.wrapped.rawValue }
    }

    /// The kind of error.
    public var code: Code
    /// A human-readable message, complete on its own.
    public var message: String
    /// The underlying error, if any.
    public var cause: (any Error)?
    /// The attributes involved: invalid ones (validation), those changed on both sides (conflict), the unknown one.
    public var attributes: [String]
    /// The entity concerned, when there is one.
    public var entity: String?
    /// The row id concerned, when there is one.
    public var id: String?
    /// For a conflict: the row's version in the store.
    public var currentVersion: Int64?
    /// For a rejected transaction: the index of the operation at fault.
    public var operationIndex: Int?
    /// For a bad predicate: the 0-based character offset of the fault in the predicate text.
    public var position: Int?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        cause: (any Error)? = nil,
        attributes: [String] = [],
        entity: String? = nil,
        id: String? = nil
    ) {
        self.code = code
        self.message = message
        self.cause = cause
        self.attributes = attributes
        self.entity = entity
        self.id = id
    }

    public var description: String {
        var text = "\(self.code): \"\(self.message)\""
        if let cause { text += " (cause: \(cause))" }
        return text
    }
}

// MARK: - From Core errors

extension ClientError {
    /// Wraps an error thrown while binding a fetch request (a ``QueryError`` or a ``SchemaError``).
    init(binding error: any Error, request: FetchRequest) {
        if let predicate = error as? QueryError {
            let code: Code = predicate.code == .unknownAttribute ? .unknownAttribute : .badPredicate
            self.init(code, "\(request.entity): \(predicate.message)", cause: predicate, entity: request.entity)
            self.position = predicate.position
        } else if error is SchemaError {
            self.init(.unknownEntity, "unknown entity \(request.entity)", cause: error, entity: request.entity)
        } else {
            self.init(.internal, "cannot bind \(request): \(error)", cause: error, entity: request.entity)
        }
    }
}
