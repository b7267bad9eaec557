// MARK: - Seeded choices

internal import MeridianCore

/// The random source of a campaign: ``SplitMix64`` with the choices fuzzers make, so a seed replays a run exactly.
struct FuzzRandom {
    private var generator: SplitMix64

    /// A generator for input `index` of a campaign: every input has its own stream, so an input can be replayed
    /// without replaying the inputs before it.
    init(seed: UInt64, campaign: FuzzCampaign, index: Int) {
        var mixer = SplitMix64(seed: seed ^ (UInt64(truncatingIfNeeded: index) &* 0x9E37_79B9_7F4A_7C15))
        for _ in 0...FuzzCampaign.allCases.firstIndex(of: campaign)! { _ = mixer.next() }
        self.generator = SplitMix64(seed: mixer.next())
    }

    init(seed: UInt64) {
        self.generator = SplitMix64(seed: seed)
    }

    mutating func next() -> UInt64 { self.generator.next() }

    /// A number in `0..<bound` (0 when `bound` is not positive).
    mutating func below(_ bound: Int) -> Int {
        bound <= 0 ? 0 : Int(self.generator.next() % UInt64(bound))
    }

    /// A number in `range`.
    mutating func within(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + self.below(range.count)
    }

    /// True with probability `1/n`.
    mutating func oneIn(_ n: Int) -> Bool { self.below(n) == 0 }

    /// One element of a non-empty collection.
    mutating func pick<C: RandomAccessCollection>(_ elements: C) -> C.Element where C.Index == Int {
        elements[elements.startIndex + self.below(elements.count)]
    }

    /// `count` random bytes.
    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: self.generator.next()) }
    }

    /// A length skewed towards small values: mostly under 16, sometimes up to `maximum`.
    mutating func length(upTo maximum: Int) -> Int {
        switch self.below(10) {
        case 0..<6: self.below(min(16, maximum) + 1)
        case 6..<9: self.below(min(256, maximum) + 1)
        default: self.below(maximum + 1)
        }
    }

    /// An "interesting" 64-bit integer: boundaries and their neighbours, or a random one.
    mutating func interestingInteger() -> Int64 {
        self.pick([
            0, 1, -1, 2, 127, 128, 255, 256, 32_767, 65_535, 65_536, Int64(Int32.max), Int64(Int32.min),
            Int64(UInt32.max), Int64.max, Int64.min, Int64.max - 1, Int64.min + 1,
            Int64(bitPattern: self.generator.next()),
        ])
    }
}
