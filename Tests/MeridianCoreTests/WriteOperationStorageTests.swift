// An operation kept compactly (values by position in a shared layout, as the server's and the CLI's readers make
// them) behaves exactly as one kept in a dictionary: accessors, equality and hashing by content, explicit nulls kept.

import Testing

@testable import MeridianCore

@Suite struct WriteOperationStorageTests {
    static let names = ["title", "qty", "a name longer than fifteen bytes", "é"]
    static let pool: [Value] = [
        .null, .int(1), .double(1), .double(2.5), .string("x"), .string("é"), .bool(true), .bytes([1, 2]),
        .timestamp(Timestamp(microseconds: 5)),
    ]

    static func compact(_ kind: WriteOperation.Kind, id: String?, _ values: [(String, Value)]) -> WriteOperation {
        let layout = RowLayout(names: values.map(\.0))
        return values.map(\.1).withUnsafeBufferPointer {
            WriteOperation(kind: kind, entity: "Item", id: id, layout: layout, values: $0, expectedVersion: 3)
        }
    }

    @Test("compact and dictionary operations agree on every accessor, equality and hash, nulls included")
    func randomOperations() {
        var rng = SplitMix64(seed: 0x20_26_11_28)
        for _ in 0..<500 {
            let names = Self.names.shuffled(using: &rng).prefix(Int.random(in: 0...Self.names.count, using: &rng))
            let pairs = names.map { ($0, Self.pool.randomElement(using: &rng)!) }
            let dictionary = Dictionary(uniqueKeysWithValues: pairs)
            let compact = Self.compact(.update, id: "r", pairs)
            let plain = WriteOperation(kind: .update, entity: "Item", id: "r", values: dictionary, expectedVersion: 3)
            #expect(compact.values == dictionary)  // an explicit null stays: it sets the attribute to null
            #expect(compact.valueCount == dictionary.count)
            for name in Self.names + ["absent"] { #expect(compact.value(named: name) == dictionary[name]) }
            var seen: [String: Value] = [:]
            compact.forEachValue { name, value in seen[name] = value }
            #expect(seen == dictionary)
            #expect(compact == plain && plain == compact)
            #expect(compact.hashValue == plain.hashValue)
            // The same values in another order (another layout) are the same operation.
            let reordered = Self.compact(.update, id: "r", pairs.reversed())
            #expect(reordered == compact && reordered.hashValue == compact.hashValue)
            // A change of any value, kind, id or expected version makes another operation.
            if let (name, value) = pairs.first {
                var changed = dictionary
                changed[name] = value == .int(7) ? .int(8) : .int(7)
                #expect(
                    compact
                        != WriteOperation(kind: .update, entity: "Item", id: "r", values: changed, expectedVersion: 3))
                var removed = dictionary
                removed[name] = nil
                #expect(
                    compact
                        != WriteOperation(kind: .update, entity: "Item", id: "r", values: removed, expectedVersion: 3))
            }
            #expect(compact != Self.compact(.upsert, id: "r", pairs))
            #expect(compact != Self.compact(.update, id: "s", pairs))
        }
    }

    @Test("an operation describes itself by its values, however it keeps them")
    func description() {
        let compact = Self.compact(.insert, id: "a", [("qty", .int(1))])
        let plain = WriteOperation(kind: .insert, entity: "Item", id: "a", values: ["qty": .int(1)], expectedVersion: 3)
        #expect("\(compact)" == "\(plain)")
        #expect("\(plain)".contains("values: [\"qty\": 1]"), "\(plain)")
    }

    @Test("writing through values turns a compact operation into a dictionary one; copies are not affected")
    func mutation() {
        let original = Self.compact(.insert, id: nil, [("title", .string("a")), ("qty", .int(1))])
        var operation = original
        operation.values["qty"] = .int(2)
        operation.values["é"] = .null
        #expect(operation.values == ["title": .string("a"), "qty": .int(2), "é": .null])
        #expect(original.values == ["title": .string("a"), "qty": .int(1)])
        operation.values = [:]
        #expect(operation.valueCount == 0 && operation.withCompactValues { _, _ in true } == nil)
        #expect(
            original.withCompactValues { layout, values in layout.names == ["title", "qty"] && values.count == 2 }
                == true)
    }
}
