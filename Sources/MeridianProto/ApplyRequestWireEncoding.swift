// MARK: - Apply requests, encoded by hand

internal import Foundation
package import GRPCCore
internal import GRPCProtobuf
package import MeridianCore
internal import SwiftProtobuf

/// Writes `ApplyRequest`s' protobuf bytes by hand, as ``DeltaWireEncoding`` does for the rows the server sends.
///
/// `meridian import` spent more than a quarter of its CPU serializing its requests through swift-protobuf's generic
/// visitor (each operation's `map<string, Value>` looked up through generic metadata, entry by entry; perf of a
/// 300,000-row import). This writes the same fields directly, with every length computed before its message is
/// written, so nothing is copied. The bytes decode to exactly the message encoded (`ApplyRequestWireEncodingTests`
/// pins it on random requests); a message carrying unknown fields — never one this library builds — is left to
/// swift-protobuf, which keeps them.
package enum ApplyRequestWireEncoding {
    /// The request's bytes.
    package static func encode(_ request: Meridian_V1_ApplyRequest) throws -> [UInt8] {
        guard self.isPlain(request) else { return try request.serializedBytes() }
        var out: [UInt8] = []
        out.reserveCapacity(self.requestSize(request))
        for operation in request.operations {
            out.append(0x0A)
            DeltaWireEncoding.appendVarint(UInt64(self.operationSize(operation)), to: &out)
            self.appendOperation(operation, to: &out)
        }
        if request.conflictPolicy.rawValue != 0 {
            out.append(0x10)
            DeltaWireEncoding.appendVarint(UInt64(bitPattern: Int64(request.conflictPolicy.rawValue)), to: &out)
        }
        DeltaWireEncoding.appendString(field: 3, request.clientTag, to: &out)
        DeltaWireEncoding.appendString(field: 4, request.idempotencyKey, to: &out)
        if request.seqOnly { out.append(contentsOf: [0x28, 0x01]) }
        return out
    }

    /// Whether the request holds only the fields this encoder writes (no unknown fields anywhere).
    static func isPlain(_ request: Meridian_V1_ApplyRequest) -> Bool {
        guard request.unknownFields.data.isEmpty else { return false }
        for operation in request.operations {
            guard operation.unknownFields.data.isEmpty else { return false }
            for value in operation.values.values where !value.unknownFields.data.isEmpty { return false }
        }
        return true
    }

    static func requestSize(_ request: Meridian_V1_ApplyRequest) -> Int {
        var size = 0
        for operation in request.operations { size += DeltaWireEncoding.fieldSize(self.operationSize(operation)) }
        if request.conflictPolicy.rawValue != 0 {
            size += 1 + DeltaWireEncoding.varintSize(UInt64(bitPattern: Int64(request.conflictPolicy.rawValue)))
        }
        if !request.clientTag.isEmpty { size += DeltaWireEncoding.fieldSize(request.clientTag.utf8.count) }
        if !request.idempotencyKey.isEmpty { size += DeltaWireEncoding.fieldSize(request.idempotencyKey.utf8.count) }
        if request.seqOnly { size += 2 }
        return size
    }

    // MARK: - Operation

    /// The fields of an `Operation` (proto3: `kind` omitted when 0, `entity` when empty; the optional `id` and
    /// `expected_version` written whenever set; every map entry's key and value written).
    static func appendOperation(_ operation: Meridian_V1_Operation, to out: inout [UInt8]) {
        if operation.kind.rawValue != 0 {
            out.append(0x08)
            DeltaWireEncoding.appendVarint(UInt64(bitPattern: Int64(operation.kind.rawValue)), to: &out)
        }
        DeltaWireEncoding.appendString(field: 2, operation.entity, to: &out)
        if operation.hasID { DeltaWireEncoding.appendString(field: 3, operation.id, to: &out, always: true) }
        for (name, value) in operation.values {
            let valueBytes = self.valueSize(value)
            out.append(0x22)
            DeltaWireEncoding.appendVarint(
                UInt64(DeltaWireEncoding.fieldSize(name.utf8.count) + DeltaWireEncoding.fieldSize(valueBytes)),
                to: &out)
            DeltaWireEncoding.appendString(field: 1, name, to: &out, always: true)
            out.append(0x12)
            DeltaWireEncoding.appendVarint(UInt64(valueBytes), to: &out)
            self.appendValue(value, to: &out)
        }
        if operation.hasExpectedVersion {
            out.append(0x28)
            DeltaWireEncoding.appendVarint(UInt64(bitPattern: operation.expectedVersion), to: &out)
        }
    }

    static func operationSize(_ operation: Meridian_V1_Operation) -> Int {
        var size = 0
        if operation.kind.rawValue != 0 {
            size += 1 + DeltaWireEncoding.varintSize(UInt64(bitPattern: Int64(operation.kind.rawValue)))
        }
        if !operation.entity.isEmpty { size += DeltaWireEncoding.fieldSize(operation.entity.utf8.count) }
        if operation.hasID { size += DeltaWireEncoding.fieldSize(operation.id.utf8.count) }
        for (name, value) in operation.values {
            size += DeltaWireEncoding.fieldSize(
                DeltaWireEncoding.fieldSize(name.utf8.count) + DeltaWireEncoding.fieldSize(self.valueSize(value)))
        }
        if operation.hasExpectedVersion {
            size += 1 + DeltaWireEncoding.varintSize(UInt64(bitPattern: operation.expectedVersion))
        }
        return size
    }

    // MARK: - Value

    /// The fields of a wire `Value`: its oneof case, always written when set; nothing when unset.
    static func appendValue(_ value: Meridian_V1_Value, to out: inout [UInt8]) {
        switch value.kind {
        case nil:
            break
        case .nullValue(let null):
            out.append(0x08)
            DeltaWireEncoding.appendVarint(UInt64(bitPattern: Int64(null.rawValue)), to: &out)
        case .intValue(let i):
            out.append(0x10)
            DeltaWireEncoding.appendVarint(UInt64(bitPattern: i), to: &out)
        case .doubleValue(let d):
            out.append(0x19)
            withUnsafeBytes(of: d.bitPattern.littleEndian) { out.append(contentsOf: $0) }
        case .stringValue(let s):
            DeltaWireEncoding.appendString(field: 4, s, to: &out, always: true)
        case .boolValue(let b):
            out.append(contentsOf: [0x28, b ? 0x01 : 0x00])
        case .bytesValue(let b):
            out.append(0x32)
            DeltaWireEncoding.appendVarint(UInt64(b.count), to: &out)
            out.append(contentsOf: b)
        case .timestampMicros(let t):
            out.append(0x38)
            DeltaWireEncoding.appendVarint(UInt64(bitPattern: t), to: &out)
        }
    }

    static func valueSize(_ value: Meridian_V1_Value) -> Int {
        switch value.kind {
        case nil: 0
        case .nullValue(let null): 1 + DeltaWireEncoding.varintSize(UInt64(bitPattern: Int64(null.rawValue)))
        case .intValue(let i): 1 + DeltaWireEncoding.varintSize(UInt64(bitPattern: i))
        case .doubleValue: 9
        case .stringValue(let s): DeltaWireEncoding.fieldSize(s.utf8.count)
        case .boolValue: 2
        case .bytesValue(let b): DeltaWireEncoding.fieldSize(b.count)
        case .timestampMicros(let t): 1 + DeltaWireEncoding.varintSize(UInt64(bitPattern: t))
        }
    }
}

// MARK: - Straight from Core operations

extension ApplyRequestWireEncoding {
    /// The bytes of the request ``Meridian_V1_ApplyRequest/init(_:policy:idempotencyKey:)`` would build from these
    /// operations (with `seq_only` set when `seqOnly`), written straight from them: no generated message, no map of
    /// wire values per row in between. Byte for byte what ``encode(_:)`` writes for that message when the operations
    /// keep their values in dictionaries (the wire map is made with `mapValues`, so its entries come in the Core
    /// map's order); an operation kept compactly writes its entries in its layout's order (a map's order carries no
    /// meaning).
    ///
    /// A large request (``concurrentOperations`` or more) is sized and written in pieces of consecutive operations at
    /// once, one per core: the CLI waits for nothing else meanwhile, and the server for the request.
    package static func encode(
        _ operations: [WriteOperation], policy: ConflictPolicy, clientTag: String = "", idempotencyKey: String = "",
        seqOnly: Bool = false
    ) -> [UInt8] {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        return Self.encode(
            operations, policy: policy, clientTag: clientTag, idempotencyKey: idempotencyKey, seqOnly: seqOnly,
            pieces: min(cores, operations.count / Self.concurrentOperations))
    }

    /// ``encode(_:policy:clientTag:idempotencyKey:seqOnly:)`` in `pieces` pieces (at least one; the benchmark's
    /// `applyEncode` mode compares them): each piece's operations are sized first, so that every piece knows where
    /// its bytes start, then each writes its own part of the one buffer. The same bytes however many pieces.
    package static func encode(
        _ operations: [WriteOperation], policy: ConflictPolicy, clientTag: String, idempotencyKey: String,
        seqOnly: Bool, pieces: Int
    ) -> [UInt8] {
        let policyValue = UInt64(Meridian_V1_ConflictPolicy(policy).rawValue)
        let pieceCount = max(1, min(pieces, operations.count))
        let pieces = pieceRanges(operations.count, pieces: pieceCount)
        var operationSizes = [Int](repeating: 0, count: operations.count)
        let pieceBytes: [Int]
        if pieceCount == 1 {
            pieceBytes = operationSizes.withUnsafeMutableBufferPointer { [Self.size(operations, $0.indices, into: $0)] }
        } else {
            pieceBytes = operationSizes.withUnsafeMutableBufferPointer { sizes in
                // Each piece writes only its own operations' sizes.
                nonisolated(unsafe) let sizes = sizes
                return concurrently(pieceCount) { piece in Self.size(operations, pieces[piece], into: sizes) }
                    .map { $0.get() }
            }
        }
        var size = pieceBytes.reduce(0, +)
        if policyValue != 0 { size += 1 + DeltaWireEncoding.varintSize(policyValue) }
        if !clientTag.isEmpty { size += DeltaWireEncoding.fieldSize(clientTag.utf8.count) }
        if !idempotencyKey.isEmpty { size += DeltaWireEncoding.fieldSize(idempotencyKey.utf8.count) }
        if seqOnly { size += 2 }
        // Every length is known before its bytes are written, so the request is written into memory of its exact
        // size, byte by byte without `Array`'s checks (a third of the CLI's encoding was `append`'s capacity and
        // uniqueness checks, perf of a 1,000,000-row import).
        guard size > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            let base = buffer.baseAddress!
            var start = 0
            let starts = pieceBytes.map { bytes in
                defer { start += bytes }
                return start
            }
            if pieceCount == 1 {
                Self.write(operations, operations.indices, sizes: operationSizes, at: base, bytes: pieceBytes[0])
            } else {
                // Each piece writes only its own bytes, from where the pieces before it end.
                nonisolated(unsafe) let base = base
                let sizes = operationSizes
                _ = concurrently(pieceCount) { piece in
                    Self.write(
                        operations, pieces[piece], sizes: sizes, at: base + starts[piece], bytes: pieceBytes[piece])
                }
            }
            var out = WireCursor(base + start)
            if policyValue != 0 {
                out.byte(0x10)
                out.varint(policyValue)
            }
            DeltaWireEncoding.appendString(field: 3, clientTag, to: &out)
            DeltaWireEncoding.appendString(field: 4, idempotencyKey, to: &out)
            if seqOnly {
                out.byte(0x28)
                out.byte(0x01)
            }
            initialized = out.written(from: base)
            precondition(initialized == size, "an ApplyRequest's size was computed as \(size), \(initialized) written")
        }
    }

    /// Requests of at least this many operations are sized and written in pieces at once, up to one per core (a piece
    /// of fewer costs more in its hand-off to another thread than it saves; a bulk write's 20,000 operations took
    /// ~6–7 ms to encode on one core, `MERIDIAN_BENCH_ONLY=applyEncode`).
    package static let concurrentOperations = 4_096

    /// Sizes `operations[range]` into `sizes` (at the same indices); returns the bytes of their fields (tag and length
    /// included).
    private static func size(
        _ operations: [WriteOperation], _ range: Range<Int>, into sizes: UnsafeMutableBufferPointer<Int>
    ) -> Int {
        var bytes = 0
        for i in range {
            let operationSize = Self.operationSize(operations[i])
            sizes[i] = operationSize
            bytes += DeltaWireEncoding.fieldSize(operationSize)
        }
        return bytes
    }

    /// Writes the fields of `operations[range]`, sized in `sizes`, at `start`: exactly `bytes` of them.
    private static func write(
        _ operations: [WriteOperation], _ range: Range<Int>, sizes: [Int], at start: UnsafeMutablePointer<UInt8>,
        bytes: Int
    ) {
        var out = WireCursor(start)
        for i in range {
            out.byte(0x0A)
            out.varint(UInt64(sizes[i]))
            Self.writeOperation(operations[i], to: &out)
        }
        let written = out.written(from: start)
        precondition(written == bytes, "a part of an ApplyRequest was sized as \(bytes) bytes, \(written) written")
    }

    static func writeOperation(_ operation: WriteOperation, to out: inout WireCursor) {
        out.byte(0x08)
        out.varint(UInt64(Meridian_V1_Operation.Kind(operation.kind).rawValue))
        DeltaWireEncoding.appendString(field: 2, operation.entity, to: &out)
        if let id = operation.id { DeltaWireEncoding.appendString(field: 3, id, to: &out, always: true) }
        operation.forEachValue { name, value in DeltaWireEncoding.appendValueEntry(tag: 0x22, name, value, to: &out) }
        if let expectedVersion = operation.expectedVersion {
            out.byte(0x28)
            out.varint(UInt64(bitPattern: expectedVersion))
        }
    }

    static func operationSize(_ operation: WriteOperation) -> Int {
        // The kind is never 0 (unspecified) for a Core operation: always written, one byte of value.
        var size = 2
        if !operation.entity.isEmpty { size += DeltaWireEncoding.fieldSize(operation.entity.utf8.count) }
        if let id = operation.id { size += DeltaWireEncoding.fieldSize(id.utf8.count) }
        operation.forEachValue { name, value in size += DeltaWireEncoding.valueEntrySize(name, value) }
        if let expectedVersion = operation.expectedVersion {
            size += 1 + DeltaWireEncoding.varintSize(UInt64(bitPattern: expectedVersion))
        }
        return size
    }
}

/// Writes protobuf bytes into memory already sized for them (every length computed first), without the capacity,
/// count and uniqueness checks of appending to an `Array` byte by byte; ``DeltaWireEncoding``'s field writers write
/// through it as through an `Array` (``WireOutput``). The writer must not write past the memory it was given: its
/// caller sized it from the same values.
struct WireCursor: WireOutput {
    private var next: UnsafeMutablePointer<UInt8>

    /// A cursor at `start`.
    init(_ start: UnsafeMutablePointer<UInt8>) {
        self.next = start
    }

    /// How many bytes were written since `start`.
    func written(from start: UnsafeMutablePointer<UInt8>) -> Int {
        self.next - start
    }

    @inline(__always)
    mutating func byte(_ value: UInt8) {
        self.next.initialize(to: value)
        self.next += 1
    }

    @inline(__always)
    mutating func varint(_ value: UInt64) {
        self.next += DeltaWireEncoding.writeVarint(value, at: UnsafeMutableRawPointer(self.next))
    }

    @inline(__always)
    mutating func bytes(_ source: UnsafeBufferPointer<UInt8>) {
        guard let start = source.baseAddress, !source.isEmpty else { return }
        self.next.initialize(from: start, count: source.count)
        self.next += source.count
    }
}

/// A `MessageSerializer` for messages already encoded: requests
/// (``ApplyRequestWireEncoding/encode(_:policy:clientTag:idempotencyKey:seqOnly:)``) and the server's `Query` answers
/// (``DeltaWireEncoding/queryResponse(seq:rowFields:last:)``).
package struct EncodedMessageSerializer: MessageSerializer {
    package init() {}

    package func serialize<Bytes: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Bytes { Bytes(message) }
}

/// A `MessageSerializer` for `Apply` and `ApplyStream` requests that encodes them by hand
/// (``ApplyRequestWireEncoding``).
package struct ApplyRequestSerializer: MessageSerializer {
    package init() {}

    package func serialize<Bytes: GRPCContiguousBytes>(_ message: Meridian_V1_ApplyRequest) throws -> Bytes {
        do {
            return Bytes(try ApplyRequestWireEncoding.encode(message))
        } catch {
            throw RPCError(code: .invalidArgument, message: "can't serialize an ApplyRequest", cause: error)
        }
    }
}

extension Meridian_V1_Meridian.ClientProtocol {
    /// The `Apply` call, its request encoded and its response decoded by hand (``ApplyRequestSerializer``,
    /// ``ApplyResponseDeserializer``).
    package func applyEncodingByHand(
        _ request: Meridian_V1_ApplyRequest, options: CallOptions = .defaults
    ) async throws -> Meridian_V1_ApplyResponse {
        try await self.apply(
            request: ClientRequest(message: request), serializer: ApplyRequestSerializer(),
            deserializer: ApplyResponseDeserializer(), options: options
        ) { response in try response.message }
    }

    /// The `ApplyStream` call, its requests encoded and its responses decoded by hand (``ApplyRequestSerializer``,
    /// ``ApplyResponseDeserializer``).
    package func applyStreamEncodingByHand<Result: Sendable>(
        options: CallOptions = .defaults,
        requestProducer producer: @Sendable @escaping (RPCWriter<Meridian_V1_ApplyRequest>) async throws -> Void,
        onResponse handleResponse:
            @Sendable @escaping (StreamingClientResponse<Meridian_V1_ApplyResponse>) async throws -> Result
    ) async throws -> Result {
        try await self.applyStream(
            request: StreamingClientRequest(producer: producer), serializer: ApplyRequestSerializer(),
            deserializer: ApplyResponseDeserializer(), options: options,
            onResponse: handleResponse)
    }
}
