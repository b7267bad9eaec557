import Foundation
import MeridianCore
import Testing

@testable import MeridianStore

/// The quick way of preparing operations (``OperationValidation/Plan``) must agree with the general way on every
/// operation it accepts, and leave every operation the general way rejects to it.
@Suite struct ValidationPlanTests {
    /// A value for an attribute of `Fixtures.schema()`: mostly fitting, sometimes of the wrong kind, nil, NaN or
    /// holding a NUL.
    static func value(_ random: inout some RandomNumberGenerator) -> Value {
        switch Int.random(in: 0..<12, using: &random) {
        case 0: .null
        case 1: .int(Int64.random(in: -5...5, using: &random))
        case 2: .double(Double.random(in: -10...10, using: &random))
        case 3: .double(.nan)
        case 4: .double(.infinity)
        case 5: .string("text \(Int.random(in: 0...9, using: &random))")
        case 6: .string("nul\u{0}inside")
        case 7: .bool(Bool.random(using: &random))
        case 8: .bytes([1, 2, 3])
        case 9: .timestamp(Timestamp(microseconds: Int64.random(in: 0...1_000_000, using: &random)))
        default: .string("")
        }
    }

    /// A value that fits an attribute of `type` (an int for a double now and then).
    static func fitting(_ type: AttributeType, _ random: inout some RandomNumberGenerator) -> Value {
        switch type {
        case .int: .int(Int64.random(in: -5...5, using: &random))
        case .double:
            Bool.random(using: &random)
                ? .double(Double.random(in: -10...10, using: &random)) : .int(Int64.random(in: -5...5, using: &random))
        case .string: .string("text \(Int.random(in: 0...9, using: &random))")
        case .bool: .bool(Bool.random(using: &random))
        case .bytes: .bytes([1, 2, 3])
        case .timestamp: .timestamp(Timestamp(microseconds: Int64.random(in: 0...1_000_000, using: &random)))
        }
    }

    static func operation(_ random: inout some RandomNumberGenerator) -> WriteOperation {
        let entity = ["Item", "Item", "Item", "Tag", "Nope"].randomElement(using: &random)!
        let attributes =
            entity == "Tag" ? [Attribute(name: "name", type: .string)] : Fixtures.itemAttributes
        var values: [String: Value] = [:]
        for attribute in attributes where Int.random(in: 0..<10, using: &random) < 7 {
            // Mostly a fitting value, so that many operations are valid; else anything (nil, NaN, a NUL, …).
            values[attribute.name] =
                Int.random(in: 0..<100, using: &random) < 92
                ? self.fitting(attribute.type, &random) : self.value(&random)
        }
        for name in ["unknown", "id"] where Int.random(in: 0..<100, using: &random) < 3 {
            values[name] = self.value(&random)
        }
        let id: String? = [nil, "a", "b\u{0}c", "row-\(Int.random(in: 0...99, using: &random))"].randomElement(
            using: &random)!
        let kind = [WriteOperation.Kind.insert, .update, .upsert, .delete].randomElement(using: &random)!
        let expected: Int64? = Bool.random(using: &random) ? Int64.random(in: 1...3, using: &random) : nil
        return WriteOperation(kind: kind, entity: entity, id: id, values: values, expectedVersion: expected)
    }

    /// The operation kept compactly, in a layout of its names in a random order, shared with earlier operations of
    /// the same names (as the operations read from one request share one).
    static func compact(
        _ operation: WriteOperation, _ layouts: inout [[String]: RowLayout], _ random: inout some RandomNumberGenerator
    ) -> WriteOperation {
        let names = operation.values.keys.sorted()
        guard !names.isEmpty else { return operation }
        if layouts[names] == nil { layouts[names] = RowLayout(names: names.shuffled(using: &random)) }
        let layout = layouts[names]!
        let values = layout.names.map { operation.values[$0]! }
        return values.withUnsafeBufferPointer {
            WriteOperation(
                kind: operation.kind, entity: operation.entity, id: operation.id, layout: layout, values: $0,
                expectedVersion: operation.expectedVersion)
        }
    }

    @Test(
        "the quick way agrees with the general way on 20,000 random operations, valid or not, in dictionaries or compact",
        arguments: [false, true])
    func agreesWithTheGeneralWay(compact: Bool) throws {
        let schema = Fixtures.schema()
        let plan = OperationValidation.Plan(schema: schema)
        var random = SplitMix64(seed: 7)
        var quick = 0
        var quickWrites = 0
        var layouts: [[String]: RowLayout] = [:]
        var positions = OperationValidation.Plan.Positions()
        for index in 0..<20_000 {
            var operation = Self.operation(&random)
            if compact {
                operation = Self.compact(operation, &layouts, &random)
                #expect(operation.valueCount == 0 || operation.withCompactValues { _, _ in true } == true)
            }
            let general = Result { () throws(StoreError) -> PreparedOperation in
                try OperationValidation.prepare(operation, index: index, schema: schema)
            }
            guard let prepared = plan.quick(operation, index: index, positions: &positions) else { continue }
            quick += 1
            if operation.kind != .delete { quickWrites += 1 }
            guard case .success(let expected) = general else {
                Issue.record("the quick way accepted \(operation), which the general way rejects: \(general)")
                continue
            }
            #expect(prepared.index == expected.index && prepared.kind == expected.kind)
            #expect(prepared.entity == expected.entity)
            #expect(prepared.columns == expected.columns, "\(operation)")
            // Value's == compares numbers across kinds (2 == 2.0): compare the kinds too.
            #expect(prepared.values == expected.values, "\(operation)")
            #expect(prepared.values.map(\.type) == expected.values.map(\.type), "\(operation)")
            #expect(prepared.expectedVersion == expected.expectedVersion)
            if let id = operation.id {
                #expect(prepared.id == id && expected.id == id)
            } else {
                #expect(prepared.id.count == 36 && expected.id.count == 36)
            }
        }
        // Both ways are exercised: many random operations are valid, many are not.
        #expect(quick > 1_000 && quick < 19_000, "\(quick) taken the quick way")
        #expect(quickWrites > 2_000, "\(quickWrites) inserts, updates and upserts taken the quick way")
    }
}
