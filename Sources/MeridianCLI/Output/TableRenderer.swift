// MARK: - Tables

internal import MeridianCore

/// Renders rows as an aligned text table, the `--format table` of `query` and `watch`:
///
/// ```text
/// id  title        category  latitude  longitude
/// --  -----------  --------  --------  ---------
/// p1  Café Aurora         2    38.711     -9.139
/// p2  Bar Lusitano        0
/// ```
///
/// Columns are separated by two spaces; numbers are right-aligned, everything else left-aligned; null is blank;
/// line breaks and tabs inside a value show as spaces; a value wider than `maximumCellWidth` is cut with `…`.
/// Widths count terminal columns (East Asian wide characters and emoji count two).
struct TableRenderer: Sendable {
    /// A column: its title and whether its values are right-aligned.
    struct Column: Sendable, Equatable {
        var title: String
        var rightAligned: Bool
    }

    var columns: [Column]
    var maximumCellWidth = 40

    /// The columns for an entity: `id`, then every attribute in declaration order.
    init(entity: EntitySchema) {
        self.columns =
            [Column(title: EntitySchema.idAttribute, rightAligned: false)]
            + entity.attributes.map { Column(title: $0.name, rightAligned: $0.type.isNumeric) }
    }

    init(columns: [Column]) {
        self.columns = columns
    }

    /// The cells of a row, in column order (for an entity table).
    static func cells(_ row: Row, entity: EntitySchema) -> [String] {
        [row.id] + entity.attributes.map { ValueRendering.text(row[$0.name]) }
    }

    /// The table's lines: the header, the rule, then one line per row. Trailing spaces are trimmed.
    func render(_ rows: [[String]]) -> [String] {
        let cleaned = rows.map { $0.map(self.clean) }
        var widths = self.columns.map { Self.width($0.title) }
        for row in cleaned {
            for (i, cell) in row.enumerated() where i < widths.count {
                widths[i] = max(widths[i], Self.width(cell))
            }
        }
        var lines = [self.line(self.columns.map(\.title), widths: widths, header: true)]
        lines.append(self.line(widths.map { String(repeating: "-", count: $0) }, widths: widths, header: true))
        for row in cleaned {
            lines.append(self.line(row, widths: widths, header: false))
        }
        return lines
    }

    private func line(_ cells: [String], widths: [Int], header: Bool) -> String {
        var parts: [String] = []
        for (i, width) in widths.enumerated() {
            let cell = i < cells.count ? cells[i] : ""
            let pad = String(repeating: " ", count: max(0, width - Self.width(cell)))
            parts.append(!header && self.columns[i].rightAligned ? pad + cell : cell + pad)
        }
        var text = parts.joined(separator: "  ")
        while text.last == " " { text.removeLast() }
        return text
    }

    /// A cell's text on one line, cut to the maximum width.
    func clean(_ text: String) -> String {
        let shown = String(text.map { $0.isNewline || $0 == "\t" ? " " : $0 })
        guard Self.width(shown) > self.maximumCellWidth else { return shown }
        var out = ""
        var width = 0
        for c in shown {
            let w = Self.width(c)
            if width + w > self.maximumCellWidth - 1 { break }
            out.append(c)
            width += w
        }
        return out + "…"
    }

    /// The number of terminal columns `text` takes.
    static func width(_ text: String) -> Int {
        text.reduce(0) { $0 + Self.width($1) }
    }

    /// The number of terminal columns a character takes: 2 for East Asian wide characters and emoji, 0 for
    /// control characters, else 1.
    static func width(_ c: Character) -> Int {
        guard let scalar = c.unicodeScalars.first else { return 0 }
        let v = scalar.value
        if v < 0x20 || v == 0x7F { return 0 }
        let wide: [ClosedRange<UInt32>] = [
            0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
            0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1F300...0x1F64F,
            0x1F900...0x1F9FF, 0x20000...0x3FFFD,
        ]
        return wide.contains { $0.contains(v) } ? 2 : 1
    }
}
