// MARK: - Protobuf wire format, for structure-aware mutations

/// Just enough of the protobuf wire format to take a valid message apart one level at a time and put it back
/// together wrong: unknown enum values and oneof cases, wrong wire types, lying lengths, deep nesting, oversized
/// fields, invalid UTF-8.
enum ProtoWire {
    /// One field as it appears on the wire. `payload` is the value's bytes: the varint, the 4 or 8 fixed bytes, or a
    /// length-delimited field's content (without its length).
    struct Field {
        var number: UInt64
        var wireType: UInt8
        var payload: [UInt8]
    }

    static let varintType: UInt8 = 0
    static let fixed64Type: UInt8 = 1
    static let lengthType: UInt8 = 2
    static let groupStartType: UInt8 = 3
    static let groupEndType: UInt8 = 4
    static let fixed32Type: UInt8 = 5

    /// The base-128 varint encoding of `value`.
    static func varint(_ value: UInt64) -> [UInt8] {
        var value = value
        var out: [UInt8] = []
        while value >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        out.append(UInt8(value))
        return out
    }

    /// A field's tag.
    static func tag(_ number: UInt64, _ wireType: UInt8) -> [UInt8] {
        Self.varint(number << 3 | UInt64(wireType))
    }

    /// Reads a varint at `index`, advancing it; nil when the bytes end first or it is longer than ten bytes.
    static func readVarint(_ bytes: [UInt8], _ index: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.count, shift < 70 {
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }

    /// The top-level fields of `bytes`, or nil when they are not a well-formed message (groups are not taken apart).
    static func fields(_ bytes: [UInt8]) -> [Field]? {
        var fields: [Field] = []
        var index = 0
        while index < bytes.count {
            guard let key = readVarint(bytes, &index) else { return nil }
            let number = key >> 3
            let wireType = UInt8(key & 7)
            guard number > 0 else { return nil }
            let start = index
            switch wireType {
            case varintType:
                guard readVarint(bytes, &index) != nil else { return nil }
            case fixed64Type:
                index += 8
            case fixed32Type:
                index += 4
            case lengthType:
                guard let length = readVarint(bytes, &index), length <= UInt64(bytes.count - index) else { return nil }
                fields.append(
                    Field(number: number, wireType: wireType, payload: Array(bytes[index..<(index + Int(length))])))
                index += Int(length)
                continue
            default:
                return nil
            }
            guard index <= bytes.count else { return nil }
            fields.append(Field(number: number, wireType: wireType, payload: Array(bytes[start..<index])))
        }
        return fields
    }

    /// The wire bytes of `fields`.
    static func encode(_ fields: [Field]) -> [UInt8] {
        var out: [UInt8] = []
        for field in fields {
            out += Self.tag(field.number, field.wireType)
            if field.wireType == lengthType { out += Self.varint(UInt64(field.payload.count)) }
            out += field.payload
        }
        return out
    }

    /// `bytes` with one structural mutation, recursing into nested messages; byte-level when `bytes` is not a
    /// well-formed message.
    ///
    /// - Parameter oversize: A size over the server's request limit, for the "oversized payload" mutation.
    static func mutate(_ bytes: [UInt8], random: inout FuzzRandom, oversize: Int) -> [UInt8] {
        guard var fields = Self.fields(bytes) else { return ByteMutator.mutate(bytes, random: &random) }
        let target = fields.isEmpty ? nil : random.below(fields.count)
        switch random.below(12) {
        case 0, 1:  // recurse into a length-delimited field that is itself a message
            if let i = target, fields[i].wireType == lengthType, Self.fields(fields[i].payload) != nil,
                !fields[i].payload.isEmpty
            {
                fields[i].payload = Self.mutate(fields[i].payload, random: &random, oversize: oversize)
            } else {
                return ByteMutator.mutate(bytes, random: &random)
            }
        case 2:  // a varint field (an enum, a number, a bool) set to an unknown or boundary value
            if let i = target, fields[i].wireType == varintType {
                fields[i].payload = Self.varint(UInt64(bitPattern: random.interestingInteger()))
            } else {
                fields.append(
                    Field(
                        number: UInt64(random.within(1...9)), wireType: varintType,
                        payload: Self.varint(UInt64(bitPattern: random.interestingInteger()))))
            }
        case 3:  // an unknown field, or an unknown oneof case
            let number = UInt64(random.oneIn(3) ? random.within(1...536_870_911) : random.within(1...20))
            let wireType = random.pick([varintType, fixed64Type, lengthType, fixed32Type])
            let payload: [UInt8] =
                switch wireType {
                case varintType: Self.varint(random.next())
                case fixed64Type: random.bytes(8)
                case fixed32Type: random.bytes(4)
                default: random.bytes(random.length(upTo: 64))
                }
            fields.insert(
                Field(number: number, wireType: wireType, payload: payload), at: random.below(fields.count + 1))
        case 4:  // a field repeated (a second oneof case, a repeated singular field)
            if let i = target { fields.insert(fields[i], at: random.below(fields.count + 1)) }
        case 5:  // a known field with the wrong wire type
            if let i = target {
                fields[i].wireType = random.pick(
                    [varintType, fixed64Type, lengthType, fixed32Type].filter { $0 != fields[i].wireType })
                fields[i].payload = fields[i].wireType == varintType ? Self.varint(random.next()) : fields[i].payload
                if fields[i].wireType == fixed64Type { fields[i].payload = random.bytes(8) }
                if fields[i].wireType == fixed32Type { fields[i].payload = random.bytes(4) }
            }
        case 6:  // a length that lies: claims far more bytes than follow
            var out = Self.encode(fields)
            let claimed = random.pick([UInt64(out.count + 1), 0x7FFF_FFFF, 0xFFFF_FFFF, UInt64.max >> 1])
            out +=
                Self.tag(UInt64(random.within(1...6)), lengthType) + Self.varint(claimed)
                + random.bytes(random.below(8))
            return out
        case 7:  // deep nesting: a field wrapped in many levels of nested messages or groups
            let depth = random.pick([64, 101, 1_000, 10_000, 100_000])
            let number = UInt64(random.within(1...30))
            var nested: [UInt8]
            if random.oneIn(2) {
                nested = Array(repeating: Self.tag(number, groupStartType), count: depth).flatMap { $0 }
                if random.oneIn(2) {
                    nested += Array(repeating: Self.tag(number, groupEndType), count: depth).flatMap { $0 }
                }
            } else {
                nested = []
                for _ in 0..<min(depth, 2_000) {
                    nested = Self.tag(number, lengthType) + Self.varint(UInt64(nested.count)) + nested
                }
            }
            return Self.encode(fields) + nested
        case 8:  // a string or bytes field that is not valid UTF-8
            if let i = target, fields[i].wireType == lengthType {
                fields[i].payload =
                    random.pick([[0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82]])
                    + fields[i].payload
            }
        case 9:  // an oversized payload: a field just over the server's limit
            let size = oversize + random.below(1_024)
            fields.append(
                Field(
                    number: UInt64(random.within(1...6)), wireType: lengthType,
                    payload: Array(repeating: UInt8(ascii: "x"), count: size)))
        case 10:  // a field removed
            if let i = target { fields.remove(at: i) }
        default:  // fields reordered
            fields.shuffle(using: &random)
        }
        return Self.encode(fields)
    }
}

extension FuzzRandom: RandomNumberGenerator {}
