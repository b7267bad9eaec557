// MARK: - ErrorDetail at the gRPC edge

package import GRPCCore
package import MeridianCore
internal import SwiftProtobuf

extension Meridian_V1_ErrorDetail {
    /// The binary trailing-metadata key under which a call that ends with a non-OK status carries its serialized
    /// `ErrorDetail` (`-bin` keys are base64-encoded on the wire by every gRPC library, and decoded for the reader).
    package static let metadataKey = "meridian-error-bin"

    /// An error detail.
    package init(
        _ code: Code,
        _ message: String,
        operationIndex: Int? = nil,
        attributes: [String] = [],
        position: Int? = nil,
        length: Int? = nil,
        entity: String = "",
        id: String = "",
        currentVersion: Int64? = nil
    ) {
        self.init()
        self.code = code
        self.message = message
        if let operationIndex { self.operationIndex = Int32(clamping: operationIndex) }
        self.attributes = attributes
        if let position { self.position = Int32(clamping: position) }
        if let length { self.length = Int32(clamping: length) }
        self.entity = entity
        self.id = id
        if let currentVersion { self.currentVersion = currentVersion }
    }

    /// The detail for a wire message that could not be converted: `MALFORMED_REQUEST`, or `VALIDATION` for an
    /// invalid value (NaN), with the operation index when there is one.
    package init(_ error: ProtoConversionError) {
        let code: Code = error.code == .invalidValue ? .validation : .malformedRequest
        self.init(code, error.message, operationIndex: error.operationIndex)
    }

    /// The detail for a write the schema refuses: `VALIDATION`, `UNKNOWN_ENTITY` or `UNKNOWN_ATTRIBUTE`, with the
    /// operation, attributes, entity and id.
    package init(_ error: WriteError) {
        let code: Code =
            switch error.code {
            case .unknownEntity: .unknownEntity
            case .unknownAttribute: .unknownAttribute
            default: .validation
            }
        self.init(
            code, error.message, operationIndex: error.operationIndex, attributes: error.attributes,
            entity: error.entity, id: error.id ?? "")
    }

    /// The gRPC status code a call ends with when it fails with this detail (the table in meridian.proto).
    package var rpcCode: RPCError.Code {
        switch self.code {
        case .validation, .badPredicate, .unknownEntity, .unknownAttribute, .malformedRequest,
            .unknownSubscription, .duplicateSubscription:
            .invalidArgument
        case .conflict: .aborted
        case .notFound: .notFound
        case .alreadyExists: .alreadyExists
        case .tooManySubscriptions, .messageTooLarge, .limitExceeded: .resourceExhausted
        case .schemaMismatch, .unsupportedProtocol: .failedPrecondition
        case .shuttingDown, .unavailable: .unavailable
        case .permissionDenied: .permissionDenied
        case .unauthenticated: .unauthenticated
        case .internal, .unspecified, .UNRECOGNIZED: .internalError
        }
    }
}

extension RPCError {
    /// An error that ends a call with the detail's status code and message, and the serialized detail in the
    /// trailing metadata under ``Meridian_V1_ErrorDetail/metadataKey``.
    ///
    /// The status message and the detail travel in HTTP/2 headers, which peers cap (16 KiB by default): a message or
    /// field quoting a huge request (an entity name of 60 KB, a store error quoting its SQL) made the client drop the
    /// stream as "unexpectedly closed" instead of seeing the error (found by the wire fuzzer:
    /// Tests/MeridianFuzzTests/Corpus/wire/query-huge-error.wire). So the message and the detail's names are cut to
    /// ``Meridian_V1_ErrorDetail/maximumTrailerText`` bytes, marked with "…".
    package init(_ detail: Meridian_V1_ErrorDetail, cause: (any Error)? = nil) {
        var detail = detail
        detail.message = Meridian_V1_ErrorDetail.bounded(detail.message)
        detail.entity = Meridian_V1_ErrorDetail.bounded(detail.entity)
        detail.id = Meridian_V1_ErrorDetail.bounded(detail.id)
        detail.attributes = detail.attributes.prefix(16).map { Meridian_V1_ErrorDetail.bounded($0) }
        var metadata: Metadata = [:]
        if let bytes: [UInt8] = try? detail.serializedBytes() {
            metadata.addBinary(bytes, forKey: Meridian_V1_ErrorDetail.metadataKey)
        }
        self.init(code: detail.rpcCode, message: detail.message, metadata: metadata, cause: cause)
    }

    /// The Meridian error detail this error carries in its metadata, or `nil` when it has none (a transport error,
    /// a peer that is not a Meridian server).
    package var errorDetail: Meridian_V1_ErrorDetail? {
        for bytes in self.metadata[binaryValues: Meridian_V1_ErrorDetail.metadataKey] {
            if let detail = try? Meridian_V1_ErrorDetail(serializedBytes: bytes) { return detail }
        }
        return nil
    }
}

extension Meridian_V1_ErrorDetail {
    /// The most UTF-8 bytes of one text field of a detail sent as a call's status (message, entity, id, attribute).
    package static let maximumTrailerText = 1_024

    /// `text`, cut at a character boundary to at most ``maximumTrailerText`` bytes (the cut marked with "…").
    package static func bounded(_ text: String) -> String {
        guard text.utf8.count > Self.maximumTrailerText else { return text }
        var out = ""
        var size = 0
        for character in text {
            let length = character.utf8.count
            if size + length > Self.maximumTrailerText - 3 { break }
            out.append(character)
            size += length
        }
        return out + "…"
    }
}
