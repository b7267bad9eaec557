// MARK: - FNV1a64

/// The 64-bit FNV-1a hash (Fowler–Noll–Vo), a fixed, portable function for fingerprints.
enum FNV1a64 {
    static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325
    static let prime: UInt64 = 0x0000_0100_0000_01b3

    /// The hash of a byte sequence.
    static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash = Self.offsetBasis
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* Self.prime
        }
        return hash
    }

    /// The hash as 16 lowercase hex digits.
    static func hex(of bytes: some Sequence<UInt8>) -> String {
        let digits = String(Self.hash(bytes), radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
