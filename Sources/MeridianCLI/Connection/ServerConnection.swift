// MARK: - One-shot calls, with the CLI's exit statuses

internal import GRPCCore
internal import MeridianClient
internal import MeridianCore
internal import MeridianProto

/// The one-shot commands' connection: the client library's ``MeridianConnection`` for the length of a command, and
/// the translation of its errors into ``CLIError``s with the contract's exit statuses and messages.
enum ServerConnection {
    /// Runs `body` with a connection to `address`, then closes it.
    ///
    /// - Throws: ``CLIError``: what `body` throws, and the library's errors mapped by ``map(_:address:)``.
    static func with<Result: Sendable>(
        _ endpoint: ServerEndpoint,
        _ body: (MeridianConnection) async throws -> Result
    ) async throws(CLIError) -> Result {
        do {
            return try await MeridianConnection.with(endpoint.address, credentials: endpoint.credentials) {
                connection in try await body(connection)
            }
        } catch {
            throw Self.map(error, address: endpoint.address)
        }
    }

    /// The CLI error for any error a call threw.
    ///
    /// Rejections of a write (validation, conflict, not found, already exists, schema mismatch) exit 4; requests
    /// the server could not understand (bad predicate, unknown entity or attribute, malformed) exit 2; a server that
    /// cannot be reached or is shutting down exits 3. The ``ClientError`` stays the cause, so a command can read its
    /// operation index or position.
    static func map(_ error: any Error, address: ServerAddress) -> CLIError {
        if let error = error as? CLIError { return error }
        let error = (error as? ClientError) ?? ClientError(calling: error)
        if let rpc = error.cause as? RPCError, rpc.errorDetail == nil {
            return Self.map(status: rpc, address: address, cause: error)
        }
        if let runtime = error.cause as? RuntimeError {
            return CLIError(.unreachable, "cannot reach the server at \(address): \(runtime.message)", cause: error)
        }
        let status: CLIError.Status =
            switch error.code {
            case .validation, .conflict, .notFound, .alreadyExists, .schemaMismatch, .permissionDenied: .rejected
            case .unauthenticated: .unauthenticated
            case .badPredicate, .unknownEntity, .unknownAttribute, .malformedRequest, .messageTooLarge, .limitExceeded:
                .badInput
            case .shuttingDown, .unavailable: .unreachable
            default: .failure
            }
        var message = error.message
        if error.code == .unavailable, let cause = error.cause, !(cause is RPCError) {
            // The transport failed before the server could answer; its cause says how.
            message = "cannot reach the server at \(address): \(cause)"
        }
        if error.code == .conflict, let version = error.currentVersion {
            message += " (the row is now at version \(version))"
        }
        return CLIError(status, message, cause: error)
    }

    /// The CLI error for a call that ended with a non-OK status and no Meridian detail.
    private static func map(status error: RPCError, address: ServerAddress, cause: ClientError) -> CLIError {
        switch error.code {
        case .unavailable:
            return CLIError(.unreachable, "cannot reach the server at \(address): \(error.message)", cause: cause)
        case .deadlineExceeded:
            return CLIError(.unreachable, "the server at \(address) did not answer in time", cause: cause)
        case .invalidArgument, .outOfRange:
            return CLIError(.badInput, error.message, cause: cause)
        case .aborted, .alreadyExists, .notFound, .failedPrecondition, .permissionDenied:
            return CLIError(.rejected, error.message, cause: cause)
        case .unauthenticated:
            return CLIError(.unauthenticated, error.message, cause: cause)
        default:
            return CLIError(.failure, "the server answered \(error.code): \(error.message)", cause: cause)
        }
    }
}

extension CLIError {
    /// The server's typed error behind this one, if any (the operation index of a rejected transaction, the
    /// position of a bad predicate).
    var clientError: ClientError? { self.cause as? ClientError }
}
