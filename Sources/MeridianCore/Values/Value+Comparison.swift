// MARK: - Ordering and equality, SQLite's BINARY collation

extension Value {
    /// Three-way comparison with SQLite's semantics for values of any storage class.
    ///
    /// Returns a negative number, zero or a positive number. Nulls compare equal to each other here; predicate
    /// evaluation treats any comparison with null as false before it gets this far.
    public static func compare(_ lhs: Value, _ rhs: Value) -> Int {
        let lr = lhs.storageClassRank
        let rr = rhs.storageClassRank
        if lr != rr { return lr < rr ? -1 : 1 }
        switch (lhs, rhs) {
        case (.null, .null):
            return 0
        case (.string(let a), .string(let b)):
            return a.utf8Compare(b)
        case (.bytes(let a), .bytes(let b)):
            return compareBytes(a, b)
        default:
            return compareNumeric(lhs.numericForm, rhs.numericForm)
        }
    }

    /// Compares two byte sequences like `memcmp`, the shorter first when one is a prefix of the other.

    static func compareBytes<A: Sequence<UInt8>, B: Sequence<UInt8>>(_ a: A, _ b: B) -> Int {
        var ia = a.makeIterator()
        var ib = b.makeIterator()
        while true {
            switch (ia.next(), ib.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let x?, let y?):
                if x != y { return x < y ? -1 : 1 }
            }
        }
    }

    /// A number in one of SQLite's two numeric storage classes.
    enum Numeric {
        case integer(Int64)
        case real(Double)
    }

    var numericForm: Numeric {
        switch self {
        case .int(let i): .integer(i)
        case .double(let d): .real(d)
        case .bool(let b): .integer(b ? 1 : 0)
        case .timestamp(let t): .integer(t.microseconds)
        default: .integer(0)
        }
    }

    static func compareNumeric(_ a: Numeric, _ b: Numeric) -> Int {
        switch (a, b) {
        case (.integer(let x), .integer(let y)):
            return x == y ? 0 : (x < y ? -1 : 1)
        case (.real(let x), .real(let y)):
            return x == y ? 0 : (x < y ? -1 : 1)
        case (.integer(let x), .real(let y)):
            return -compareRealToInteger(y, x)
        case (.real(let x), .integer(let y)):
            return compareRealToInteger(x, y)
        }
    }

    /// Compares a double with an integer exactly, as SQLite's `sqlite3IntFloatCompare` does.
    static func compareRealToInteger(_ r: Double, _ i: Int64) -> Int {
        if r.isNaN { return -1 }
        // 2^63 is exactly representable; every Int64 is below it.
        if r >= 9_223_372_036_854_775_808.0 { return 1 }
        if r < -9_223_372_036_854_775_808.0 { return -1 }
        let truncated = r.rounded(.towardZero)
        let whole = Int64(truncated)
        if whole != i { return whole < i ? -1 : 1 }
        let fraction = r - truncated
        if fraction == 0 { return 0 }
        return fraction < 0 ? -1 : 1
    }
}

extension Value: Equatable {
    /// Equality under ``Value/compare(_:_:)``: numbers numerically, strings by bytes.
    public static func == (lhs: Value, rhs: Value) -> Bool {
        compare(lhs, rhs) == 0
    }
}

extension Value: Hashable {
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0 as UInt8)
        case .string(let s):
            hasher.combine(2 as UInt8)
            for byte in s.utf8 { hasher.combine(byte) }
        case .bytes(let b):
            hasher.combine(3 as UInt8)
            hasher.combine(b)
        default:
            // Numbers that compare equal must hash equally: hash integral doubles as integers.
            hasher.combine(1 as UInt8)
            switch self.numericForm {
            case .integer(let i):
                hasher.combine(i)
            case .real(let d):
                if d == d.rounded(), d >= -9_223_372_036_854_775_808.0, d < 9_223_372_036_854_775_808.0 {
                    hasher.combine(Int64(d))
                } else {
                    hasher.combine(d)
                }
            }
        }
    }
}

extension Value: Comparable {
    public static func < (lhs: Value, rhs: Value) -> Bool {
        compare(lhs, rhs) < 0
    }
}

// MARK: - Strings by bytes

extension String {
    /// Compares two strings by their UTF-8 bytes, as SQLite's `BINARY` collation does.

    public func utf8Compare(_ other: String) -> Int {
        // Native strings (and small ones, copied to the stack) are compared as contiguous bytes; walking two
        // `UTF8View` iterators byte by byte was most of a sort's comparisons (a 200,000-row controller's reset).
        let contiguous = self.utf8.withContiguousStorageIfAvailable { a in
            other.utf8.withContiguousStorageIfAvailable { b in Self.compare(a, b) }
        }
        if let result = contiguous ?? nil { return result }
        return Value.compareBytes(self.utf8, other.utf8)
    }

    /// `memcmp`'s order on two byte buffers, the shorter first when one is a prefix of the other.
    private static func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let common = Swift.min(a.count, b.count)
        var i = 0
        while i < common {
            let x = a[i]
            let y = b[i]
            if x != y { return x < y ? -1 : 1 }
            i += 1
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }

    /// Byte-wise equality: unlike `==`, a precomposed and a decomposed "é" are different strings.

    public func utf8Equals(_ other: String) -> Bool {
        self.utf8.elementsEqual(other.utf8)
    }
}
