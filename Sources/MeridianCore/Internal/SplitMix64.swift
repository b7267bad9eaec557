#if canImport(Glibc)
    internal import Glibc
#elseif canImport(Darwin)
    internal import Darwin
#endif

// MARK: - SplitMix64

/// A small, fast, seedable random number generator, so a random test case, a benchmark's data or the demo's data
/// can be replayed from its seed. Not for anything that needs unpredictability.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Creates a generator whose sequence is determined by `seed`.
    package init(seed: UInt64) {
        self.state = seed
    }

    package mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The seed in the environment variable `MERIDIAN_SEED` when it is set, otherwise a random one.
    package static func seedFromEnvironment() -> UInt64 {
        if let text = getenv("MERIDIAN_SEED"), let seed = UInt64(String(cString: text)) { return seed }
        return UInt64.random(in: 0...UInt64.max)
    }
}
