// MARK: - ListIndexPath

/// The position of one row in a sectioned list: a section index and a row index within that section.
///
/// Index paths order by section, then by row, and print as `[section,row]`, the form the `meridian` CLI also uses
/// in its JSON output. They encode to and decode from a two-element array.
///
/// ```swift
/// let path = ListIndexPath(section: 1, row: 4)
/// print(path)                                        // [1,4]
/// ListIndexPath(0, 9) < ListIndexPath(1, 0)          // true
/// ```
///
/// - Note: It is not named `IndexPath` so that it never clashes with Foundation's type in files that import both.
public struct ListIndexPath: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The index of the section, 0-based.
    public var section: Int
    /// The index of the row within its section, 0-based.
    public var row: Int

    /// Creates an index path from a section and a row index.
    ///
    /// - Parameters:
    ///   - section: The 0-based section index.
    ///   - row: The 0-based row index within the section.
    public init(section: Int, row: Int) {
        self.section = section
        self.row = row
    }

    /// Creates an index path from a section and a row index, without labels.
    ///
    /// - Parameters:
    ///   - section: The 0-based section index.
    ///   - row: The 0-based row index within the section.
    public init(_ section: Int, _ row: Int) {
        self.init(section: section, row: row)
    }

    /// Orders by section, then by row.
    public static func < (lhs: ListIndexPath, rhs: ListIndexPath) -> Bool {
        (lhs.section, lhs.row) < (rhs.section, rhs.row)
    }

    /// The path as `[section,row]`.
    public var description: String { "[\(self.section),\(self.row)]" }
}

// MARK: - Codable

extension ListIndexPath: Codable {
    /// Decodes an index path from a two-element array `[section, row]`.
    ///
    /// - Throws: `DecodingError` when the array does not hold exactly two integers.
    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        let section = try container.decode(Int.self)
        let row = try container.decode(Int.self)
        if !container.isAtEnd {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "an index path is an array of exactly two integers"
            )
        }
        self.init(section: section, row: row)
    }

    /// Encodes the index path as a two-element array `[section, row]`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(self.section)
        try container.encode(self.row)
    }
}
