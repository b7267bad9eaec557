// MARK: - Report: the JSON lines child processes print for the checker

internal import Foundation
public import MeridianCore

/// One line a client or writer prints on stdout. Every field but `kind` is optional; which ones are set depends on
/// the kind:
///
/// | kind | fields |
/// |---|---|
/// | `ready` | `process` (the role is running) |
/// | `state` | `controller`, `seq`, `cause`, `count`, `digest` — a controller's list after applying one change |
/// | `map` | `seq`, `cause`, `regions` (the region in force, and the one being moved to), `count`, `digest` |
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
public enum StateDigest {
    /// The digest of `list` as 16 hex digits (FNV-1a, 64 bits, over a canonical text).
    public static func of(_ list: SectionedList<Row>) -> String {
        var hasher = FNV1a()
        for section in list.sections {
            hasher.add("\u{1}\(section.key)\n")
            for row in section.elements { hasher.add(Self.canonical(row)) }
        }
        return hasher.hex
    }

    /// The digest of map annotations `(id, latitude, longitude, title)`, sorted by id here.
    public static func ofAnnotations(_ annotations: [(id: String, latitude: Double, longitude: Double, title: String?)])
        -> String
    {
        var hasher = FNV1a()
        for a in annotations.sorted(by: { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }) {
            hasher.add("\(a.id)\t\(a.latitude)\t\(a.longitude)\t\(a.title ?? "")\n")
        }
        return hasher.hex
    }

    static func canonical(_ row: Row) -> String {
        var text = row.id
        for name in row.values.keys.sorted() {
            let value = row.values[name]!
            if value.isNull { continue }
            text += "\t\(name)=\(value)"
        }
        return text + "\n"
    }
}

/// The 64-bit FNV-1a hash: stable across processes and runs (unlike `Hasher`).
struct FNV1a {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func add(_ text: String) {
        for byte in text.utf8 {
            self.value ^= UInt64(byte)
            self.value &*= 0x0000_0100_0000_01B3
        }
    }

    var hex: String {
        let digits = String(self.value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
