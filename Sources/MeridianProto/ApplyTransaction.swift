// MARK: - An Apply request as the server runs it

package import MeridianCore

/// An `ApplyRequest` as the server runs it: its operations in Core terms, or the error that says which one is not
/// valid and why; its conflict policy, or why it is not one; the byte length of each operation's id (checked against
/// `--max-id-bytes` before anything else), its client tag, its idempotency key, and whether its answer is the seq
/// alone (`seq_only`).
///
/// ``ApplyRequestWireDecoding/transaction(_:)`` builds it straight from the request's bytes for the common valid
/// request, without the generated message in between (decoding and converting were ~16% of the server's CPU in an
/// import, reading straight ~11%); ``init(_:)`` builds it from a decoded message, which gives the errors. Both give the same transaction for the
/// same bytes (`ApplyTransactionTests` pins it on random and damaged requests).
package struct ApplyTransaction: Sendable {
    package var operations: Result<[WriteOperation], ProtoConversionError>
    package var policy: Result<ConflictPolicy, ProtoConversionError>
    package var idByteCounts: [Int]
    package var clientTag: String
    package var idempotencyKey: String
    package var seqOnly: Bool

    /// How many operations the request holds (valid or not).
    package var operationCount: Int { self.idByteCounts.count }

    package init(
        operations: Result<[WriteOperation], ProtoConversionError>,
        policy: Result<ConflictPolicy, ProtoConversionError>,
        idByteCounts: [Int], clientTag: String, idempotencyKey: String, seqOnly: Bool = false
    ) {
        self.operations = operations
        self.policy = policy
        self.idByteCounts = idByteCounts
        self.clientTag = clientTag
        self.idempotencyKey = idempotencyKey
        self.seqOnly = seqOnly
    }

    /// The transaction of a decoded message.
    package init(_ request: Meridian_V1_ApplyRequest) {
        self.init(
            operations: Result { () throws(ProtoConversionError) in try request.decodedOperations() },
            policy: Result { () throws(ProtoConversionError) in try ConflictPolicy(request.conflictPolicy) },
            idByteCounts: request.operations.map(\.id.utf8.count), clientTag: request.clientTag,
            idempotencyKey: request.idempotencyKey, seqOnly: request.seqOnly)
    }
}

extension ApplyRequestWireDecoding {
    /// The transaction of a request's bytes: read straight into Core operations when the request is plain and
    /// valid, else decoded as a message (by hand or by swift-protobuf) and converted, which says what is wrong.
    package static func transaction(_ bytes: UnsafeRawBufferPointer) throws -> ApplyTransaction {
        if let transaction = self.plainTransaction(bytes) { return transaction }
        return ApplyTransaction(try self.decode(bytes))
    }

    /// The transaction read straight from the bytes; `nil` for anything unusual or invalid.
    package static func plainTransaction(_ bytes: UnsafeRawBufferPointer) -> ApplyTransaction? {
        var reader = SyncResponseWireDecoding.Reader(bytes)
        var operations: [WriteOperation] = []
        var idByteCounts: [Int] = []
        var policy = ConflictPolicy.storeWins
        var clientTag = ""
        var idempotencyKey = ""
        var seqOnly = false
        var scratch = OperationScratch()
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 2):
                guard let body = reader.lengthDelimited(), let (operation, idBytes) = self.coreOperation(body, &scratch)
                else {
                    return nil
                }
                if operations.isEmpty {
                    // A rough count of the operations, from the first one's size.
                    let estimate = min(bytes.count / (body.count + 2) + 1, 100_000)
                    operations.reserveCapacity(estimate)
                    idByteCounts.reserveCapacity(estimate)
                }
                operations.append(operation)
                idByteCounts.append(idBytes)
            case (2, 0):
                guard let raw = reader.varint(), raw <= 2 else { return nil }
                policy = raw == 2 ? .clientWins : .storeWins
            case (3, 2):
                guard let tag = reader.string() else { return nil }
                clientTag = tag
            case (4, 2):
                guard let key = reader.string() else { return nil }
                idempotencyKey = key
            case (5, 0):
                // A bool, as swift-protobuf reads one: any varint but 0 is true.
                guard let raw = reader.varint() else { return nil }
                seqOnly = raw != 0
            default:
                return nil
            }
        }
        return ApplyTransaction(
            operations: .success(operations), policy: .success(policy), idByteCounts: idByteCounts,
            clientTag: clientTag, idempotencyKey: idempotencyKey, seqOnly: seqOnly)
    }

    /// What reading a request's operations keeps from one to the next: the last layout of values' names (operations
    /// of one shape share it, and it is compared with the next one's names, not hashed), and the arrays an
    /// operation's names and values are gathered in.
    struct OperationScratch {
        var layout: RowLayout?
        var names: [String] = []
        var values: [Value] = []
        /// Where each of `names` is in `layout`, when its bytes were found there; -1 when it was not.
        var positions: [Int] = []
        /// Which of a layout's positions are set, for a layout of more than 64 names.
        var filled: [Bool] = []
    }

    /// An operation and its id's byte length, as ``Meridian_V1_Operation/decoded()`` converts it (its values kept
    /// compactly, in a layout shared with the previous operation's when the names are the same); `nil` when that
    /// would throw or the bytes are unusual.
    static func coreOperation(_ bytes: UnsafeRawBufferPointer, _ scratch: inout OperationScratch) -> (
        WriteOperation, Int
    )? {
        var reader = SyncResponseWireDecoding.Reader(bytes)
        var kind: WriteOperation.Kind?
        var entity = ""
        var id: String?
        var idBytes = 0
        var expectedVersion: Int64?
        scratch.names.removeAll(keepingCapacity: true)
        scratch.values.removeAll(keepingCapacity: true)
        scratch.positions.removeAll(keepingCapacity: true)
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 0):
                guard let raw = reader.varint() else { return nil }
                switch raw {
                case 1: kind = .insert
                case 2: kind = .update
                case 3: kind = .upsert
                case 4: kind = .delete
                default: return nil  // unset or unknown: the general way says so
                }
            case (2, 2):
                guard let text = reader.string() else { return nil }
                entity = text
            case (3, 2):
                guard let text = reader.string() else { return nil }
                id = text
                idBytes = text.utf8.count
            case (4, 2):
                guard let body = reader.lengthDelimited(),
                    let (key, value) = SyncResponseWireDecoding.mapEntryKey(
                        body, missing: Value.null, value: self.coreValue)
                else {
                    return nil
                }
                // The previous operation's name at this place, when the bytes are its (the usual case: one shape
                // for a whole transaction), so that no `String` is made of every name of every operation.
                let place = scratch.names.count
                if let layout = scratch.layout, let found = layout.position(ofUTF8: key, hint: place) {
                    scratch.names.append(layout.names[found])
                    scratch.positions.append(found)
                } else {
                    guard let name = SyncResponseWireDecoding.string(key) else { return nil }
                    scratch.names.append(name)
                    scratch.positions.append(-1)
                }
                scratch.values.append(value)
            case (5, 0):
                guard let raw = reader.varint() else { return nil }
                expectedVersion = Int64(bitPattern: raw)
            default:
                return nil
            }
        }
        guard let kind, kind == .insert || id != nil, kind != .delete || scratch.names.isEmpty else { return nil }
        let operation: WriteOperation
        if scratch.names.isEmpty {
            operation = WriteOperation(kind: kind, entity: entity, id: id, expectedVersion: expectedVersion)
        } else if let layout = self.layout(of: &scratch) {
            operation = scratch.values.withUnsafeBufferPointer {
                WriteOperation(
                    kind: kind, entity: entity, id: id, layout: layout, values: $0, expectedVersion: expectedVersion)
            }
        } else {
            // A name given twice: the last value wins, as in a decoded map.
            var values = [String: Value](minimumCapacity: scratch.names.count)
            for (name, value) in zip(scratch.names, scratch.values) { values[name] = value }
            operation = WriteOperation(
                kind: kind, entity: entity, id: id, values: values, expectedVersion: expectedVersion)
        }
        return (operation, idBytes)
    }

    /// The layout of the names gathered in `scratch`: the previous operation's when they are the same names, in the
    /// same order or in another (a map's entries come in any order: swift-protobuf and a Swift dictionary give each
    /// operation its own; the values are then put in the layout's order); else a new one in this operation's order,
    /// kept for the next. `nil` when a name repeats (the names and values are then left as they came).
    static func layout(of scratch: inout OperationScratch) -> RowLayout? {
        if let layout = scratch.layout {
            // The positions found by the names' bytes say where each value goes; only a name not found so is
            // looked up again.
            if layout.count == scratch.names.count, self.reorder(&scratch, as: layout) { return layout }
        }
        let names = scratch.names
        if names.count <= 8 {
            for i in names.indices.dropFirst() where names[..<i].contains(names[i]) { return nil }
        } else if Set(names).count != names.count {
            return nil
        }
        let layout = RowLayout(names: names)
        scratch.layout = layout
        return layout
    }

    /// Puts the values gathered in `scratch` at the layout positions their names were found at (`positions`, one per
    /// name, none -1, as many as the layout has), when each position is found once; else leaves them as they are and
    /// returns `false`. The values are moved into place cycle by cycle, none copied (`positions` is used up).
    private static func place(_ scratch: inout OperationScratch, as layout: RowLayout) -> Bool {
        let count = layout.count
        // Each position once (a name given twice is not a permutation).
        if count <= 64 {
            var seen: UInt64 = 0
            for position in scratch.positions {
                guard position < count, seen & (1 << UInt64(position)) == 0 else { return false }
                seen |= 1 << UInt64(position)
            }
        } else {
            scratch.filled.removeAll(keepingCapacity: true)
            scratch.filled.append(contentsOf: repeatElement(false, count: count))
            for position in scratch.positions {
                guard position < count, !scratch.filled[position] else { return false }
                scratch.filled[position] = true
            }
        }
        for i in 0..<count {
            // The value at `i` belongs at `positions[i]`: swapped there, the one that comes to `i` is placed next.
            while scratch.positions[i] != i {
                let target = scratch.positions[i]
                scratch.values.swapAt(i, target)
                scratch.positions.swapAt(i, target)
            }
        }
        return true
    }

    /// Puts the values gathered in `scratch` in the order of `layout`, which has as many names, when those are the
    /// names gathered, each once; else leaves them as they are and returns `false`. A name whose bytes were not found
    /// in the layout while it was read (an equivalent spelling, a layout of more than 8 names) is looked up here.
    private static func reorder(_ scratch: inout OperationScratch, as layout: RowLayout) -> Bool {
        for (i, name) in scratch.names.enumerated() where scratch.positions[i] < 0 {
            guard let position = layout.position(of: name) else { return false }
            scratch.positions[i] = position
        }
        return self.place(&scratch, as: layout)
    }

    /// A wire `Value` in Core terms (no case set: null, as the protocol says); `nil` for NaN or anything unusual.
    static func coreValue(_ bytes: UnsafeRawBufferPointer) -> Value? {
        var reader = SyncResponseWireDecoding.Reader(bytes)
        var value = Value.null
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            // A oneof: the last case set wins, as in swift-protobuf (every case here is a scalar).
            switch (field, wireType) {
            case (1, 0):
                guard let raw = reader.varint(), raw == 0 else { return nil }
                value = .null
            case (2, 0):
                guard let raw = reader.varint() else { return nil }
                value = .int(Int64(bitPattern: raw))
            case (3, 1):
                guard let raw = reader.fixed64() else { return nil }
                let double = Double(bitPattern: raw)
                guard !double.isNaN else { return nil }
                value = .double(double)
            case (4, 2):
                guard let text = reader.string() else { return nil }
                value = .string(text)
            case (5, 0):
                guard let raw = reader.varint() else { return nil }
                value = .bool(raw != 0)
            case (6, 2):
                guard let body = reader.lengthDelimited() else { return nil }
                value = .bytes([UInt8](body))
            case (7, 0):
                guard let raw = reader.varint() else { return nil }
                value = .timestamp(Timestamp(microseconds: Int64(bitPattern: raw)))
            default:
                return nil
            }
        }
        return value
    }
}
