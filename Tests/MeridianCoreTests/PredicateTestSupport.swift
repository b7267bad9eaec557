internal import Foundation
internal import GRDB
internal import MeridianCore

// MARK: - Seeded randomness

/// SplitMix64: a small, fast, seedable generator, so a failing random case can be replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        self.state = seed
    }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The seed from `MERIDIAN_SEED` when set, otherwise a random one.
    static func seedFromEnvironment() -> UInt64 {
        if let text = ProcessInfo.processInfo.environment["MERIDIAN_SEED"], let seed = UInt64(text) { return seed }
        return UInt64.random(in: 0...UInt64.max)
    }
}

// MARK: - SQLite glue

/// Converts core values to what the store binds: bools as 0/1, timestamps as microseconds, bytes as blobs.
func databaseValue(_ value: Value) -> DatabaseValue {
    switch value {
    case .null: return .null
    case .int(let i): return i.databaseValue
    case .double(let d): return d.databaseValue
    case .string(let s): return s.databaseValue
    case .bool(let b): return (b ? 1 as Int64 : 0).databaseValue
    case .bytes(let b): return Data(b).databaseValue
    case .timestamp(let t): return t.microseconds.databaseValue
    }
}

/// Statement arguments for a fragment's values.
func statementArguments(_ values: [Value]) -> StatementArguments {
    StatementArguments(values.map(databaseValue))
}
