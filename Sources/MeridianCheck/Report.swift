// MARK: - Report: the JSON lines child processes print for the checker

internal import Foundation
public import MeridianCore

/// One line a client or writer prints on stdout. Every field but `kind` is optional; which ones are set depends on
/// the kind:
///
/// | kind | fields |
/// |---|---|
/// | `ready` | `process` (the role is running) |
/// | `state` | `controller`, `seq`, `cause`, `count`, `digest`, `sinceResync` — a controller's list after one change |
/// | `map` | `seq`, `cause`, `regions` (the regions that may be in force), `count`, `digest`, `sinceResync` |
/// | `connected` | (the connection reached `connected`) |
/// | `violation` | `message` — something the process itself found wrong (an invalid change set, a stuck write) |
/// | `txn` | `operation`, `ops`, `outcome` (`confirmed`, `reverted`), `seq` (confirmed), `code` (reverted) |
/// | `done` | (a writer finished its last transaction after SIGTERM) |
public struct Report: Codable, Sendable, Equatable {
    public var kind: String
    public var process: String?
    public var controller: String?
    public var seq: Int64?
    public var cause: String?
    public var count: Int?
    public var digest: String?
    public var regions: [[Double]]?
    public var message: String?
    public var operation: String?
    public var ops: Int?
    public var outcome: String?
    public var code: String?
    /// Milliseconds since the client last (re)connected or saw a snapshot change, when the state was reported.
    public var sinceResync: Int?

    /// Creates a report of `kind` with no fields set.
    public init(kind: String) {
        self.kind = kind
    }

    /// The report as one JSON line (no newline).
    public var line: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { return "{\"kind\":\"violation\"}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Parses a line; `nil` when it is not a report (the checker then treats it as a protocol violation).
    public static func parse(_ line: Substring) -> Report? {
        try? JSONDecoder().decode(Report.self, from: Data(line.utf8))
    }
}

// MARK: - StateDigest

/// A digest of a sectioned list of rows — section keys, ids, order and every non-null value — computed identically
/// by clients (from the list model they built by applying change sets) and by the oracle (from the store's log).
/// Values are hashed by their bits (a double by its bit pattern), so equal digests mean identical values.
public enum StateDigest {
    /// The digest of `list` as 16 hex digits (FNV-1a, 64 bits).
    public static func of(_ list: SectionedList<Row>) -> String {
        var hasher = FNV1a()
        for section in list.sections {
            hasher.byte(0xFE)
            hasher.value(section.key)
            for row in section.elements { hasher.row(row) }
        }
        return hasher.hex
    }

    /// The digest of map annotations `(id, latitude, longitude, title)`, sorted by id here.
    public static func ofAnnotations(_ annotations: [(id: String, latitude: Double, longitude: Double, title: String?)])
        -> String
    {
        var hasher = FNV1a()
        for a in annotations.sorted(by: { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }) {
            hasher.string(a.id)
            hasher.word(a.latitude.bitPattern)
            hasher.word(a.longitude.bitPattern)
            hasher.value(a.title.map(Value.string) ?? .null)
        }
        return hasher.hex
    }
}

/// The 64-bit FNV-1a hash: stable across processes and runs (unlike `Hasher`).
struct FNV1a {
    private(set) var state: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func byte(_ byte: UInt8) {
        self.state ^= UInt64(byte)
        self.state &*= 0x0000_0100_0000_01B3
    }

    mutating func word(_ word: UInt64) {
        var w = word
        for _ in 0..<8 {
            self.byte(UInt8(truncatingIfNeeded: w))
            w >>= 8
        }
    }

    mutating func string(_ text: String) {
        for byte in text.utf8 { self.byte(byte) }
        self.byte(0)
    }

    mutating func value(_ value: Value) {
        switch value {
        case .null: self.byte(0)
        case .int(let i):
            self.byte(1)
            self.word(UInt64(bitPattern: i))
        case .double(let d):
            self.byte(2)
            self.word(d.bitPattern)
        case .string(let s):
            self.byte(3)
            self.string(s)
        case .bool(let b):
            self.byte(4)
            self.byte(b ? 1 : 0)
        case .bytes(let bytes):
            self.byte(5)
            self.word(UInt64(bytes.count))
            for b in bytes { self.byte(b) }
        case .timestamp(let t):
            self.byte(6)
            self.word(UInt64(bitPattern: t.microseconds))
        }
    }

    /// A row: its id, then the sum of each non-null attribute's own hash (name and value): the same whatever order the
    /// row keeps its values in (a row read from the store and one read from the wire may list them differently), and
    /// read in place (looking each of the schema's names up in every row was half of a client's time in a soak).
    mutating func row(_ row: Row) {
        self.byte(0xFF)
        self.string(row.id)
        var sum: UInt64 = 0
        row.forEachValue { name, value in
            var pair = FNV1a()
            pair.string(name)
            pair.value(value)
            sum &+= pair.state
        }
        self.word(sum)
    }

    var hex: String {
        let digits = String(self.state, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
