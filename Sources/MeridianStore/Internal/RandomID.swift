// MARK: - RandomID

#if canImport(Glibc)
    internal import Glibc
#elseif canImport(Darwin)
    internal import Darwin
#endif

/// Random (version 4) UUIDs as lowercase strings, the ids the store generates for inserts without one.
///
/// Foundation's `UUID()` on Linux opens, reads and closes `/dev/urandom` for every id, which cost about as much as the
/// rest of validating an insert; this draws 16 bytes from `arc4random_buf` (the kernel's `getrandom`) instead. Same format:
/// `xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx`.
package enum RandomID {
    package static func uuidString() -> String {
        // One call (one getrandom on glibc ≥ 2.36) for both words; SystemRandomNumberGenerator makes one per word.
        var words: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &words) { arc4random_buf($0.baseAddress!, 16) }
        var (high, low) = words
        high = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000  // version 4
        low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // variant 10
        return String(unsafeUninitializedCapacity: 36) { buffer in
            let digits: StaticString = "0123456789abcdef"
            var out = 0
            func put(_ word: UInt64, _ nibbles: Int, _ shift: Int) {
                var s = shift
                for _ in 0..<nibbles {
                    s -= 4
                    buffer[out] = digits.utf8Start[Int((word >> UInt64(s)) & 0xF)]
                    out += 1
                }
            }
            let dash = UInt8(ascii: "-")
            put(high, 8, 64)
            buffer[out] = dash
            out += 1
            put(high, 4, 32)
            buffer[out] = dash
            out += 1
            put(high, 4, 16)
            buffer[out] = dash
            out += 1
            put(low, 4, 64)
            buffer[out] = dash
            out += 1
            put(low, 12, 48)
            return out
        }
    }
}
