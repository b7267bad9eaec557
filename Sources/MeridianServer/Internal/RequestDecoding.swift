// MARK: - Wire requests to checked Core and store values, and errors to ErrorDetail

internal import MeridianCore
internal import MeridianProto
internal import MeridianStore

/// Turns wire fetch requests and transactions into checked Core and store values, answering every fault with the
/// `ErrorDetail` the protocol prescribes (docs/protocol.md, "Errors").
enum RequestDecoding {
    /// A wire fetch request bound to the schema.
    ///
    /// - Throws: ``DetailError`` — `UNKNOWN_ENTITY`, `UNKNOWN_ATTRIBUTE` (sort key, section key or predicate),
    ///   `BAD_PREDICATE` with position and length, or `MALFORMED_REQUEST` (zero limit, section key that is not the
    ///   first sort key, a variable without a value).
    static func bind(
        _ proto: Meridian_V1_FetchRequest, schema: Schema, limits: ServerConfiguration
    ) throws(DetailError) -> BoundFetchRequest {
        let predicateBytes = proto.predicate.utf8.count
        guard predicateBytes <= limits.maxPredicateBytes else {
            throw DetailError(
                .limitExceeded,
                "the predicate is \(predicateBytes) bytes long; at most \(limits.maxPredicateBytes) are allowed "
                    + "(--max-predicate-bytes)")
        }
        // The schema's entities are not listed: a client learns the schema from GetSchema, if it may.
        guard let entity = schema.entity(named: proto.entity) else {
            throw DetailError(.unknownEntity, "unknown entity '\(proto.entity)'", entity: proto.entity)
        }
        let limit: UInt32?
        let variables: [String: WireVariable]
        do {
            limit = try proto.limitIfPresent()
            variables = try proto.decodedVariables()
        } catch {
            throw DetailError(Meridian_V1_ErrorDetail(error))
        }
        for key in proto.sort where !entity.hasQueryableAttribute(key.attribute) {
            throw DetailError(
                .unknownAttribute, "\(entity.name) has no attribute '\(key.attribute)' to sort by",
                attributes: [key.attribute], entity: entity.name)
        }
        if let sectionKey = proto.sectionKeyIfPresent {
            guard entity.hasQueryableAttribute(sectionKey) else {
                throw DetailError(
                    .unknownAttribute, "\(entity.name) has no attribute '\(sectionKey)' to section by",
                    attributes: [sectionKey], entity: entity.name)
            }
            guard proto.sort.first?.attribute == sectionKey else {
                throw DetailError(
                    .malformedRequest, "the section key '\(sectionKey)' must be the first sort key", entity: entity.name
                )
            }
        }
        let text = proto.predicate
        do {
            let request = try FetchRequest(
                entity: entity.name,
                where: text,
                variables: variables.mapValues { variable in
                    switch variable {
                    case .value(let value): PredicateVariable.value(value)
                    case .list(let values): PredicateVariable.list(values)
                    }
                },
                sortedBy: "",
                sectionKey: proto.sectionKeyIfPresent,
                limit: limit.map { Int($0) }
            )
            var withOrder = request
            withOrder.order = RowOrder(proto.sortKeys.map { SortKey($0.attribute, ascending: $0.ascending) })
            let bound = try withOrder.bind(to: schema)
            let inValues = bound.predicate.inValueCount
            guard inValues <= limits.maxInValues else {
                throw DetailError(
                    .limitExceeded,
                    "the predicate's IN lists hold \(inValues) values; at most \(limits.maxInValues) are allowed "
                        + "(--max-in-values)",
                    entity: entity.name)
            }
            return bound
        } catch let error as DetailError {
            throw error
        } catch let error as QueryError {
            throw DetailError(predicate: error, text: text, entity: entity.name)
        } catch {
            throw DetailError(.malformedRequest, "\(error)", entity: entity.name)
        }
    }

    /// A wire transaction in Core terms. The schema's rules are checked by the store (MeridianCore's one
    /// validation), whose error ``detail(_:operations:)`` turns into the answer.
    ///
    /// - Throws: ``DetailError`` `MALFORMED_REQUEST` (an unknown kind or policy, a missing id, a delete with values)
    ///   or `VALIDATION` (NaN), with the operation's index.
    static func operations(
        _ request: ApplyTransaction
    ) throws(DetailError) -> (operations: [WriteOperation], policy: ConflictPolicy) {
        do {
            return (try request.operations.get(), try request.policy.get())
        } catch {
            throw DetailError(Meridian_V1_ErrorDetail(error))
        }
    }

    /// Refuses an id (a subscription's, a row's) longer than `--max-id-bytes`.
    static func checkID(_ id: String, _ what: @autoclosure () -> String, limits: ServerConfiguration)
        throws(DetailError)
    {
        try self.checkID(bytes: id.utf8.count, what(), limits: limits)
    }

    /// Refuses an id of `bytes` bytes when that is more than `--max-id-bytes` (`what` is made only then: a
    /// transaction checks every operation's id).
    static func checkID(bytes: Int, _ what: @autoclosure () -> String, limits: ServerConfiguration) throws(DetailError)
    {
        guard bytes <= limits.maxIDBytes else {
            throw DetailError(
                .limitExceeded,
                "\(what()) is \(bytes) bytes long; at most \(limits.maxIDBytes) are allowed (--max-id-bytes)")
        }
    }

    /// The detail for a failed read (a snapshot, a query): `UNAVAILABLE` with SQLite's reason for an I/O error (the
    /// disk); otherwise `INTERNAL`, saying what failed but not why (the caller logs the error: its text may hold
    /// SQL, which a client never sees).
    static func readFailure(_ error: any Error, _ what: String) -> Meridian_V1_ErrorDetail {
        if let error = error as? StoreError, error.code == .io {
            return Meridian_V1_ErrorDetail(.unavailable, "\(what): \(error.message)")
        }
        if let error = error as? StoreError, error.code == .timedOut {
            return Meridian_V1_ErrorDetail(.limitExceeded, "\(what): \(error.message) (--query-timeout)")
        }
        return Meridian_V1_ErrorDetail(.internal, "\(what): an internal error (the server logged it)")
    }

    /// The detail for a store error raised by a transaction; the entity and id come from the operation at fault.
    static func detail(_ error: StoreError, operations: [WriteOperation]) -> Meridian_V1_ErrorDetail {
        let operation = error.operationIndex.flatMap { operations.indices.contains($0) ? operations[$0] : nil }
        if let refused = error.cause as? WriteError {
            return Meridian_V1_ErrorDetail(refused)
        }
        let code: Meridian_V1_ErrorDetail.Code =
            switch error.code {
            case .validation: .validation
            case .conflict: .conflict
            case .notFound: .notFound
            case .alreadyExists: .alreadyExists
            case .permissionDenied: .permissionDenied
            case .tooLarge: .limitExceeded
            case .schemaMismatch, .migrationRefused: .schemaMismatch
            // A full disk, a read-only file, an I/O error: the server cannot write now; SQLite's reason is in the
            // message. Nothing of the transaction was written, so a retry later is safe.
            case .io: .unavailable
            default: .internal
            }
        // The store's bound is the server's flag: say which.
        let message = error.code == .tooLarge ? error.message + " (--max-row-bytes)" : error.message
        return Meridian_V1_ErrorDetail(
            code, message, operationIndex: error.operationIndex, attributes: error.attributes,
            entity: operation?.entity ?? "", id: operation?.id ?? "")
    }
}

// MARK: - DetailError

/// An error that carries the `ErrorDetail` to answer it with (inside a response, or as a call's status).
struct DetailError: Error, Sendable, CustomStringConvertible {
    var detail: Meridian_V1_ErrorDetail

    init(_ detail: Meridian_V1_ErrorDetail) {
        self.detail = detail
    }

    init(
        _ code: Meridian_V1_ErrorDetail.Code, _ message: String, operationIndex: Int? = nil, attributes: [String] = [],
        entity: String = "", id: String = ""
    ) {
        self.detail = Meridian_V1_ErrorDetail(
            code, message, operationIndex: operationIndex, attributes: attributes, entity: entity, id: id)
    }

    /// A predicate or sort error: `UNKNOWN_ATTRIBUTE` naming the attribute, or `BAD_PREDICATE`; both located.
    init(predicate error: QueryError, text: String, entity: String) {
        let length = max(1, error.length)
        var attributes: [String] = []
        var code = Meridian_V1_ErrorDetail.Code.badPredicate
        if error.code == .unknownAttribute {
            code = .unknownAttribute
            let characters = Array(text)
            if error.position >= 0, error.position + length <= characters.count {
                attributes = [String(characters[error.position..<(error.position + length)])]
            }
        } else if error.code == .invalidSectionKey {
            code = .malformedRequest
        }
        self.detail = Meridian_V1_ErrorDetail(
            code, "predicate error at position \(error.position): \(error.message)", attributes: attributes,
            position: error.position, length: length, entity: entity)
    }

    var description: String { "\(self.detail.code): \(self.detail.message)" }
}
