// MARK: - Value ↔ Meridian_V1_Value

package import MeridianCore

#if canImport(FoundationEssentials)
    internal import FoundationEssentials
#else
    internal import Foundation
#endif

extension Meridian_V1_Value {
    /// The wire form of a value. Never fails: NaN is encoded as it is (Core entry points reject it earlier), and the
    /// receiving side rejects it.
    package init(_ value: Value) {
        self.init()
        switch value {
        case .null: self.kind = .nullValue(.nullValue)
        case .int(let i): self.kind = .intValue(i)
        case .double(let d): self.kind = .doubleValue(d)
        case .string(let s): self.kind = .stringValue(s)
        case .bool(let b): self.kind = .boolValue(b)
        case .bytes(let b): self.kind = .bytesValue(Data(b))
        case .timestamp(let t): self.kind = .timestampMicros(t.microseconds)
        }
    }
}

extension Value {
    /// The Core value of a wire value. A value with no case set is null, as the protocol says.
    ///
    /// - Throws: ``ProtoConversionError`` with code `invalidValue` for a NaN double.
    package init(_ proto: Meridian_V1_Value) throws(ProtoConversionError) {
        switch proto.kind {
        case nil, .nullValue: self = .null
        case .intValue(let i): self = .int(i)
        case .doubleValue(let d):
            guard !d.isNaN else { throw ProtoConversionError(.invalidValue, "NaN is not a valid double") }
            self = .double(d)
        case .stringValue(let s): self = .string(s)
        case .boolValue(let b): self = .bool(b)
        case .bytesValue(let b): self = .bytes([UInt8](b))
        case .timestampMicros(let t): self = .timestamp(Timestamp(microseconds: t))
        }
    }
}

// MARK: - Value maps

extension Dictionary where Key == String, Value == Meridian_V1_Value {
    /// The wire form of an attribute map.
    package init(_ values: [String: MeridianCore.Value]) {
        // `mapValues` keeps the keys' hash table: no name is hashed again.
        self = values.mapValues(Meridian_V1_Value.init)
    }
}

extension Dictionary where Key == String, Value == MeridianCore.Value {
    /// The Core form of a wire attribute map.
    ///
    /// - Throws: ``ProtoConversionError`` naming the attribute whose value is invalid.
    package init(_ proto: [String: Meridian_V1_Value]) throws(ProtoConversionError) {
        // A new dictionary of exactly this size, not `mapValues`, which would keep the source's table: the hand
        // decoders reserve 8 entries per row, and a client's cached rows grew by ~550 bytes each (`sync`).
        self.init(minimumCapacity: proto.count)
        for (name, value) in proto {
            do {
                self[name] = try MeridianCore.Value(value)
            } catch {
                throw error.within("attribute \(MeridianCore.Value.quote(name))")
            }
        }
    }
}

// MARK: - Variables

/// A predicate variable's value as the wire carries it: one value, or a list for `IN` and `BETWEEN`.
///
/// Mirrors MeridianCore's `PredicateVariable` case for case (`.value`, `.list`); once that type is on the main
/// branch, the conversions below target it directly and this enum goes away.
package enum WireVariable: Sendable, Hashable {
    /// One value.
    case value(Value)
    /// A list of values.
    case list([Value])
}

extension Meridian_V1_Variable {
    /// The wire form of a variable.
    package init(_ variable: WireVariable) {
        self.init()
        switch variable {
        case .value(let value):
            self.kind = .value(Meridian_V1_Value(value))
        case .list(let values):
            var list = Meridian_V1_ValueList()
            list.values = values.map(Meridian_V1_Value.init)
            self.kind = .list(list)
        }
    }
}

extension WireVariable {
    /// The Core form of a wire variable.
    ///
    /// - Throws: ``ProtoConversionError``: `missingField` when no case is set, `invalidValue` for NaN.
    package init(_ proto: Meridian_V1_Variable) throws(ProtoConversionError) {
        switch proto.kind {
        case nil:
            throw ProtoConversionError(.missingField, "a variable must hold a value or a list")
        case .value(let value):
            self = .value(try Value(value))
        case .list(let list):
            var values: [Value] = []
            values.reserveCapacity(list.values.count)
            for (i, value) in list.values.enumerated() {
                do {
                    values.append(try Value(value))
                } catch {
                    throw error.within("element \(i)")
                }
            }
            self = .list(values)
        }
    }
}
