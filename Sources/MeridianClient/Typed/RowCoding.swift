// MARK: - RowEncoder and RowDecoder
//
// A small Encoder/Decoder pair over a row's `[String: Value]`: one keyed container at the top, one attribute per
// stored property, `id` as the row's id. Nested containers are not attributes and are rejected with a clear error.

internal import Foundation
public import MeridianCore

/// Encodes a `Codable` model as a row: each property an attribute, `id` the row's id, `nil` an explicit null.
public struct RowEncoder: Sendable {
    /// Creates an encoder.
    public init() {}

    /// Encodes `value` as a row.
    ///
    /// - Throws: `EncodingError` for a property of an unsupported type or a model without an `id` string.
    public func encode<T: Encodable>(_ value: T) throws -> Row {
        let storage = RowEncodingStorage()
        try value.encode(to: RowEncodingImpl(storage: storage))
        guard case .string(let id)? = storage.values.removeValue(forKey: EntitySchema.idAttribute) else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: [], debugDescription: "\(T.self) has no String `id` property"))
        }
        return Row(id: id, values: storage.values)
    }
}

/// Decodes a `Codable` model from a row: each property from the attribute of its name, `id` from the row's id.
public struct RowDecoder: Sendable {
    /// Creates a decoder.
    public init() {}

    /// Decodes a `T` from `row`.
    ///
    /// - Throws: `DecodingError` when an attribute is missing, null for a non-optional property, or of another type.
    public func decode<T: Decodable>(_ type: T.Type, from row: Row) throws -> T {
        try T(from: RowDecodingImpl(row: row))
    }
}

// MARK: - Value conversion

/// Turns a property value into an attribute value, or `nil` when its type is not an attribute type.
func attributeValue(_ value: Any) -> Value? {
    switch value {
    case let v as String: .string(v)
    case let v as Bool: .bool(v)
    case let v as Int: .int(Int64(v))
    case let v as Int64: .int(v)
    case let v as Int32: .int(Int64(v))
    case let v as Int16: .int(Int64(v))
    case let v as Int8: .int(Int64(v))
    case let v as UInt32: .int(Int64(v))
    case let v as UInt16: .int(Int64(v))
    case let v as UInt8: .int(Int64(v))
    case let v as Double: .double(v)
    case let v as Float: .double(Double(v))
    case let v as Timestamp: .timestamp(v)
    case let v as Date: .timestamp(Timestamp(secondsSince1970: v.timeIntervalSince1970))
    case let v as [UInt8]: .bytes(v)
    case let v as Data: .bytes([UInt8](v))
    case let v as Value: v
    default: nil
    }
}

/// Turns an attribute value into a property of type `T`, or `nil` when it does not fit.
private func propertyValue<T>(_ value: Value, as type: T.Type) -> T? {
    func integer<I: FixedWidthInteger>(_: I.Type) -> I? {
        switch value {
        case .int(let i): I(exactly: i)
        case .double(let d): I(exactly: d)
        case .bool(let b): b ? 1 : 0
        default: nil
        }
    }
    let result: Any? =
        switch type {
        case is String.Type: value.stringValue
        case is Bool.Type:
            switch value {
            case .bool(let b): b
            case .int(let i): i != 0
            default: nil
            }
        case is Int.Type: integer(Int.self)
        case is Int64.Type: integer(Int64.self)
        case is Int32.Type: integer(Int32.self)
        case is Int16.Type: integer(Int16.self)
        case is Int8.Type: integer(Int8.self)
        case is UInt32.Type: integer(UInt32.self)
        case is UInt16.Type: integer(UInt16.self)
        case is UInt8.Type: integer(UInt8.self)
        case is Double.Type:
            switch value {
            case .double(let d): d
            case .int(let i): Double(i)
            default: nil
            }
        case is Float.Type:
            switch value {
            case .double(let d): Float(d)
            case .int(let i): Float(i)
            default: nil
            }
        case is Timestamp.Type:
            if case .timestamp(let t) = value { t } else { nil }
        case is Date.Type:
            if case .timestamp(let t) = value { Date(timeIntervalSince1970: Double(t.microseconds) / 1e6) } else { nil }
        case is [UInt8].Type:
            if case .bytes(let b) = value { b } else { nil }
        case is Data.Type:
            if case .bytes(let b) = value { Data(b) } else { nil }
        case is Value.Type: value
        default: nil
        }
    return result as? T
}

// MARK: - Encoding

/// The values an encoding builds.
private final class RowEncodingStorage {
    var values: [String: Value] = [:]
}

private struct RowEncodingImpl: Encoder {
    let storage: RowEncodingStorage
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RowKeyedEncoder<Key>(storage: self.storage, codingPath: self.codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        preconditionFailure("a row model must encode with a keyed container (one attribute per property)")
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        preconditionFailure("a row model must encode with a keyed container (one attribute per property)")
    }
}

private struct RowKeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let storage: RowEncodingStorage
    var codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws {
        self.storage.values[key.stringValue] = .null
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        guard let attribute = attributeValue(value) else {
            throw EncodingError.invalidValue(
                value,
                .init(
                    codingPath: self.codingPath + [key],
                    debugDescription: "\(T.self) is not an attribute type (String, Bool, integers, Double, "
                        + "Float, Timestamp, Date, [UInt8], Data)"))
        }
        self.storage.values[key.stringValue] = attribute
    }

    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }

    // The protocol's concrete overloads skip nil by default; a row writes an explicit null instead.
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws {
        if let value { try self.encode(value, forKey: key) } else { try self.encodeNil(forKey: key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        preconditionFailure("attribute \(key.stringValue): nested values are not attributes")
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        preconditionFailure("attribute \(key.stringValue): nested values are not attributes")
    }

    mutating func superEncoder() -> any Encoder { RowEncodingImpl(storage: self.storage) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { RowEncodingImpl(storage: self.storage) }
}

// MARK: - Decoding

/// Reads the row as it is kept (`row[name]`, `id` included): no dictionary made per decode.
private struct RowDecodingImpl: Decoder {
    let row: Row
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RowKeyedDecoder<Key>(row: self.row, codingPath: self.codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch(
            [Any].self, .init(codingPath: self.codingPath, debugDescription: "a row decodes as a keyed container"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DecodingError.typeMismatch(
            Any.self, .init(codingPath: self.codingPath, debugDescription: "a row decodes as a keyed container"))
    }
}

private struct RowKeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let row: Row
    var codingPath: [any CodingKey]

    var allKeys: [Key] {
        var keys = Key(stringValue: EntitySchema.idAttribute).map { [$0] } ?? []
        self.row.forEachValue { name, _ in
            if let key = Key(stringValue: name) { keys.append(key) }
        }
        return keys
    }

    func contains(_ key: Key) -> Bool { !self.row[key.stringValue].isNull }

    func decodeNil(forKey key: Key) throws -> Bool {
        self.row[key.stringValue].isNull
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let value = self.row[key.stringValue]
        if value.isNull {
            throw DecodingError.valueNotFound(
                T.self,
                .init(
                    codingPath: self.codingPath + [key],
                    debugDescription: "attribute \(key.stringValue) is null; declare the property optional"))
        }
        guard let result = propertyValue(value, as: T.self) else {
            throw DecodingError.typeMismatch(
                T.self,
                .init(
                    codingPath: self.codingPath + [key],
                    debugDescription: "attribute \(key.stringValue) holds \(value), not a \(T.self)"))
        }
        return result
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        if try self.decodeNil(forKey: key) { return nil }
        return try self.decode(T.self, forKey: key)
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        throw DecodingError.typeMismatch(
            type, .init(codingPath: self.codingPath + [key], debugDescription: "nested values are not attributes"))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch(
            [Any].self, .init(codingPath: self.codingPath + [key], debugDescription: "nested values are not attributes")
        )
    }

    func superDecoder() throws -> any Decoder { RowDecodingImpl(row: self.row) }
    func superDecoder(forKey key: Key) throws -> any Decoder { RowDecodingImpl(row: self.row) }
}
