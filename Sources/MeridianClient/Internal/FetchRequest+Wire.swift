// MARK: - FetchRequest ↔ the wire

internal import MeridianCore
internal import MeridianProto
internal import SwiftProtobuf

extension Meridian_V1_FetchRequest {
    /// The wire form of a Core fetch request (an always-true predicate is sent as empty text).
    init(_ request: FetchRequest) {
        var predicate = request.predicateText
        if case .constant(true, _) = request.predicate { predicate = "" }
        self.init(
            entity: request.entity,
            predicate: predicate,
            variables: request.variables.mapValues { variable in
                switch variable {
                case .value(let value): .value(value)
                case .list(let values): .list(values)
                }
            },
            sort: request.order.descriptors.map { ($0.attribute, $0.ascending) },
            sectionKey: request.sectionKey,
            limit: request.limit.map { UInt32(clamping: $0) }
        )
    }
}

extension FetchRequest {
    /// The Core form of a wire fetch request (as the persisted cache stores it).
    ///
    /// - Throws: ``ClientError`` with code `badPredicate` or `malformedRequest`.
    init(wire: Meridian_V1_FetchRequest) throws(ClientError) {
        do {
            let variables = try wire.decodedVariables().mapValues { variable -> PredicateVariable in
                switch variable {
                case .value(let value): .value(value)
                case .list(let values): .list(values)
                }
            }
            let text = wire.predicate.trimmingCharactersInSpaces
            self.init(
                entity: wire.entity,
                predicate: text.isEmpty ? .constant(true, .none) : try PredicateExpression.parse(wire.predicate),
                variables: variables,
                order: RowOrder(wire.sortKeys.map { SortKey($0.attribute, ascending: $0.ascending) }),
                sectionKey: wire.sectionKeyIfPresent,
                limit: try wire.limitIfPresent().map(Int.init)
            )
        } catch {
            throw ClientError(.malformedRequest, "cannot read fetch request for \(wire.entity): \(error)", cause: error)
        }
    }

    /// A stable identity for the request: the hex FNV-1a 64 of its deterministic wire bytes. Two equal requests
    /// share one subscription, and a restarted app finds its persisted subscription again.
    var subscriptionKey: String {
        var options = BinaryEncodingOptions()
        options.useDeterministicOrdering = true
        let bytes: [UInt8] = (try? Meridian_V1_FetchRequest(self).serializedBytes(options: options)) ?? []
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "q-" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}

extension String {
    /// The string without leading and trailing spaces and newlines.
    var trimmingCharactersInSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let start = self.firstIndex(where: { !isSpace($0) }) else { return "" }
        return self[start...self.lastIndex(where: { !isSpace($0) })!]
    }
}
