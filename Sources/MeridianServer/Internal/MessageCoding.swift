// MARK: - Message coding at the gRPC edge

internal import GRPCCore
internal import GRPCProtobuf
internal import MeridianProto
internal import SwiftProtobuf

/// A message on a `Sync` response stream: built for this client, or bytes encoded once and shared.
enum SyncOutbound: Sendable {
    indirect case message(Meridian_V1_SyncResponse)
    case encoded([UInt8])
}

/// Writes ``SyncOutbound`` values: shared bytes as they are, messages serialized.
struct SyncOutboundSerializer: MessageSerializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: SyncOutbound) throws -> Bytes {
        switch message {
        case .encoded(let bytes):
            return Bytes(bytes)
        case .message(let message):
            return Bytes(try message.serializedBytes() as [UInt8])
        }
    }
}

/// Reads a protobuf request, refusing messages over the configured size (`MESSAGE_TOO_LARGE`, RESOURCE_EXHAUSTED)
/// and bytes that do not decode (`MALFORMED_REQUEST`, INVALID_ARGUMENT), each with its `ErrorDetail` in the
/// trailers. The bytes are decoded by swift-protobuf, or by `decode` (Apply requests: straight into an
/// ``ApplyTransaction``).
struct LimitedDeserializer<Message: Sendable>: MessageDeserializer {
    let limit: Int
    /// The message's protobuf name, for errors.
    let name: String
    let decode: @Sendable (UnsafeRawBufferPointer) throws -> Message

    init(limit: Int, name: String, decode: @escaping @Sendable (UnsafeRawBufferPointer) throws -> Message) {
        self.limit = limit
        self.name = name
        self.decode = decode
    }

    func deserialize<Bytes: GRPCContiguousBytes>(_ bytes: Bytes) throws -> Message {
        if self.limit > 0, bytes.count > self.limit {
            throw RPCError(
                Meridian_V1_ErrorDetail(
                    .messageTooLarge,
                    "a \(self.name) of \(bytes.count) bytes is over the server's limit of \(self.limit) bytes"
                ))
        }
        do {
            return try bytes.withUnsafeBytes { try self.decode($0) }
        } catch {
            throw RPCError(
                Meridian_V1_ErrorDetail(
                    .malformedRequest, "a \(self.name) that does not decode: \(error)"),
                cause: error)
        }
    }
}

extension LimitedDeserializer where Message: SwiftProtobuf.Message {
    /// A deserializer of a protobuf message, by swift-protobuf.
    init(limit: Int) {
        self.init(limit: limit, name: Message.protoMessageName) { try Message(serializedBytes: Array($0)) }
    }
}

/// A `Sync` request as the stream's reader holds it: one reference. The reader's loop lives as long as the stream,
/// and its frame (kept for the stream's life in its task's slabs) held several copies of the 144-byte message inline.
final class SyncInbound: Sendable {
    let message: Meridian_V1_SyncRequest

    init(_ message: Meridian_V1_SyncRequest) {
        self.message = message
    }
}

extension LimitedDeserializer where Message == SyncInbound {
    /// A deserializer of `Sync` requests, by swift-protobuf, each boxed.
    init(limit: Int) {
        self.init(limit: limit, name: Meridian_V1_SyncRequest.protoMessageName) {
            SyncInbound(try Meridian_V1_SyncRequest(serializedBytes: Array($0)))
        }
    }
}
