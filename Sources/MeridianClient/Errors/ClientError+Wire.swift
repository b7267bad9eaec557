// MARK: - ClientError ↔ the wire

internal import GRPCCore
internal import MeridianCore
internal import MeridianProto

extension ClientError {
    /// The client form of a server's typed error detail (unknown codes read as `internal`, as the protocol says).
    init(_ detail: Meridian_V1_ErrorDetail, cause: (any Error)? = nil) {
        let code: Code =
            switch detail.code {
            case .validation: .validation
            case .conflict: .conflict
            case .notFound: .notFound
            case .alreadyExists: .alreadyExists
            case .badPredicate: .badPredicate
            case .unknownEntity: .unknownEntity
            case .unknownAttribute: .unknownAttribute
            case .tooManySubscriptions: .tooManySubscriptions
            case .malformedRequest, .unknownSubscription, .duplicateSubscription: .malformedRequest
            case .messageTooLarge: .messageTooLarge
            case .schemaMismatch: .schemaMismatch
            case .shuttingDown: .shuttingDown
            case .unsupportedProtocol: .unsupportedProtocol
            case .unavailable: .unavailable
            case .limitExceeded: .limitExceeded
            case .unauthenticated: .unauthenticated
            case .permissionDenied: .permissionDenied
            case .internal, .unspecified, .UNRECOGNIZED: .internal
            }
        self.init(
            code,
            detail.message,
            cause: cause,
            attributes: detail.attributes,
            entity: detail.entity.isEmpty ? nil : detail.entity,
            id: detail.id.isEmpty ? nil : detail.id
        )
        if detail.hasCurrentVersion { self.currentVersion = detail.currentVersion }
        if detail.hasOperationIndex { self.operationIndex = Int(detail.operationIndex) }
        if detail.hasPosition { self.position = Int(detail.position) }
    }

    /// The client form of a write the schema refuses (the same code and message the server answers with).
    init(_ error: WriteError) {
        self.init(Meridian_V1_ErrorDetail(error), cause: error)
        self.id = error.id  // an empty id stays empty (the detail's "" reads as none)
    }

    /// The client form of a failed call: the Meridian detail in its trailers when there is one, else a transport
    /// error mapped by status (`unavailable` for anything that means "could not talk to the server").
    init(rpc error: RPCError) {
        if let detail = error.errorDetail {
            self.init(detail, cause: error)
            return
        }
        switch error.code {
        case .cancelled:
            self.init(.cancelled, error.message, cause: error)
        case .unauthenticated:
            self.init(.unauthenticated, error.message, cause: error)
        case .permissionDenied:
            self.init(.permissionDenied, error.message, cause: error)
        case .unavailable, .deadlineExceeded, .unknown, .aborted:
            self.init(.unavailable, "the server is unreachable: \(error.message)", cause: error)
        default:
            self.init(.internal, error.message, cause: error)
        }
    }

    /// Any error from a call, as a client error.
    package init(calling error: any Error) {
        if let error = error as? ClientError {
            self = error
        } else if let error = error as? RPCError {
            self.init(rpc: error)
        } else if error is CancellationError {
            self.init(.cancelled, "cancelled", cause: error)
        } else {
            self.init(.unavailable, "the server is unreachable: \(error)", cause: error)
        }
    }

    /// Whether retrying the same request later may succeed (the server was unreachable or stopping).
    var isTransient: Bool {
        self.code == .unavailable || self.code == .shuttingDown
    }
}
