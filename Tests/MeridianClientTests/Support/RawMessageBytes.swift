// MARK: - Messages as their bytes, for canned gRPC servers

import GRPCCore

/// A gRPC message taken and given as its bytes: the canned servers of these tests write exactly the bytes they mean
/// (a message swift-protobuf would not make, a hand-built response) and read their requests without decoding them.
struct RawMessageBytes: MessageSerializer, MessageDeserializer {
    func serialize<Out: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Out { Out(message) }
    func deserialize<In: GRPCContiguousBytes>(_ bytes: In) throws -> [UInt8] {
        bytes.withUnsafeBytes { Array($0) }
    }
}
