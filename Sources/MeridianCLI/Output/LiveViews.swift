// MARK: - Live terminal views: watch --format table, map --format ascii

internal import MeridianCore

/// What a live view draws: whole screens of text, redrawn in place.
enum LiveScreen {
    /// Enters the terminal's alternate screen and hides the cursor.
    static let enter = "\u{1B}[?1049h\u{1B}[?25l"
    /// Shows the cursor and leaves the alternate screen, restoring what was there.
    static let leave = "\u{1B}[?25h\u{1B}[?1049l"

    /// The escape sequence that replaces the screen with `lines`: cursor home, each line cleared to its end, then
    /// everything below cleared, so nothing flickers.
    static func frame(_ lines: [String]) -> String {
        "\u{1B}[H" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\r\n") + "\u{1B}[J"
    }

    /// `text` cut to `width` terminal columns.
    static func fit(_ text: String, width: Int) -> String {
        guard TableRenderer.width(text) > width else { return text }
        var out = ""
        var used = 0
        for c in text {
            let w = TableRenderer.width(c)
            if used + w > width - 1 { break }
            out.append(c)
            used += w
        }
        return out + "…"
    }
}

/// The live table of `watch --format table`: a status line, the column header, then the rows with a header line
/// before each section, cut to the terminal's size, and a footer with the last change sets. Rows changed in the last
/// few seconds are highlighted (bold, on a yellow background).
///
/// ```text
/// Point where category >= 1, by category,title — 214 rows at seq 9051 (Ctrl-C quits)
/// id      title               category  latitude  longitude  updatedAt
/// ------  ------------------  --------  --------  ---------  ---------
/// ── category 1 (40) ──
/// p00012  Tasca Alfama               1  38.71102  -9.13054   2026-11-24T19:02:03Z
/// …
/// ── last changes ──
/// seq 9051  update p00012 (latitude, longitude, updatedAt) · insert w000031
/// ```
struct LiveTable: Sendable {
    let entity: EntitySchema
    let title: String
    let sectionKey: String?

    /// How long a changed row stays highlighted.
    static let highlightFor: Duration = .seconds(5)

    /// Highlights a line (select graphic rendition: bold, black on yellow), after it was cut to the width.
    static func highlight(_ line: String) -> String { "\u{1B}[1;30;43m" + line + "\u{1B}[0m" }

    /// The screen's lines.
    ///
    /// - Parameters:
    ///   - highlighted: The ids of rows to highlight (changed in the last seconds).
    ///   - recent: The last change sets, newest last, each one line (``describe(_:seq:)``); shown below the rows
    ///     when there is room for them and at least three rows.
    func render(
        _ list: SectionedList<Row>, seq: Int64, columns: Int, rows: Int, highlighted: Set<String> = [],
        recent: [String] = []
    ) -> [String] {
        let count = list.count
        var lines = [
            LiveScreen.fit(
                "\(self.title) — \(count) \(count == 1 ? "row" : "rows") at seq \(seq) (Ctrl-C quits)", width: columns)
        ]
        let footer = recent.isEmpty ? [] : Array(recent.suffix(max(0, min(5, rows - 9))))
        let available = max(1, rows - 3 - (footer.isEmpty ? 0 : footer.count + 1))
        var body: [(section: String?, row: Row?)] = []
        for section in list.sections {
            if let key = self.sectionKey {
                body.append(("── \(key) \(section.name) (\(section.elements.count)) ──", nil))
            }
            for row in section.elements { body.append((nil, row)) }
        }
        var shown = Array(body.prefix(available))
        if body.count > available, !shown.isEmpty {
            shown.removeLast()
        }
        let renderer = TableRenderer(entity: self.entity)
        let dataRows = shown.compactMap(\.row)
        let table = renderer.render(dataRows.map { TableRenderer.cells($0, entity: self.entity) })
        lines += table.prefix(2).map { LiveScreen.fit($0, width: columns) }
        var next = 2
        for item in shown {
            if let section = item.section {
                lines.append(LiveScreen.fit(section, width: columns))
            } else {
                let line = LiveScreen.fit(table[next], width: columns)
                let changed = item.row.map { highlighted.contains($0.id) } ?? false
                lines.append(changed ? Self.highlight(line) : line)
                next += 1
            }
        }
        if body.count > shown.count {
            lines.append("… \(body.count - shown.count) more lines")
        }
        if !footer.isEmpty {
            lines.append(LiveScreen.fit("── last changes ──", width: columns))
            lines += footer.map { LiveScreen.fit($0, width: columns) }
        }
        return lines
    }

    /// One footer line for a change set: `seq 9051  update p00012 (latitude, longitude) · insert w000031 · …`.
    static func describe(_ changeSet: ChangeSet<Row>, seq: Int64) -> String {
        var parts: [String] = []
        for change in changeSet.rowChanges.prefix(6) {
            var part = "\(change.operation) \(change.id)"
            if !change.changed.isEmpty { part += " (\(change.changed.joined(separator: ", ")))" }
            parts.append(part)
        }
        if changeSet.rowChanges.count > 6 { parts.append("\(changeSet.rowChanges.count - 6) more") }
        return "seq \(seq)  " + parts.joined(separator: " · ")
    }
}

/// One annotation as the ASCII map draws it.
struct MapPoint: Sendable, Equatable {
    var id: String
    var latitude: Double
    var longitude: Double
    var title: String?
}

/// The live map of `map --format ascii`: annotations plotted on a character grid fitted to the terminal, north up.
/// A cell shows `•` for one annotation, a digit for 2–9, `#` for more; the last events are listed below the map.
struct AsciiMap: Sendable {
    /// The box drawn: the `--region`, else the annotations' bounding box.
    static func bounds(_ points: [MapPoint], region: (south: Double, west: Double, north: Double, east: Double)?)
        -> (south: Double, west: Double, north: Double, east: Double)
    {
        if let region { return region }
        guard let first = points.first else { return (-90, -180, 90, 180) }
        var box = (south: first.latitude, west: first.longitude, north: first.latitude, east: first.longitude)
        for p in points {
            box.south = min(box.south, p.latitude)
            box.north = max(box.north, p.latitude)
            box.west = min(box.west, p.longitude)
            box.east = max(box.east, p.longitude)
        }
        return box
    }

    /// The grid's lines: `height` lines of `width` characters inside a frame.
    static func grid(
        _ points: [MapPoint],
        box: (south: Double, west: Double, north: Double, east: Double),
        width: Int,
        height: Int
    ) -> [String] {
        let w = max(1, width - 2)
        let h = max(1, height - 2)
        var counts = [[Int]](repeating: [Int](repeating: 0, count: w), count: h)
        let latSpan = max(box.north - box.south, 1e-9)
        let lonSpan = max(box.east - box.west, 1e-9)
        for p in points {
            guard p.latitude >= box.south, p.latitude <= box.north, p.longitude >= box.west, p.longitude <= box.east
            else { continue }
            let column = min(w - 1, Int((p.longitude - box.west) / lonSpan * Double(w)))
            let row = min(h - 1, Int((box.north - p.latitude) / latSpan * Double(h)))
            counts[row][column] += 1
        }
        var lines = ["┌" + String(repeating: "─", count: w) + "┐"]
        for row in counts {
            lines.append(
                "│"
                    + String(
                        row.map { n -> Character in
                            switch n {
                            case 0: " "
                            case 1: "•"
                            case 2...9: Character(String(n))
                            default: "#"
                            }
                        }) + "│")
        }
        lines.append("└" + String(repeating: "─", count: w) + "┘")
        return lines
    }

    /// A whole screen: a status line, the map, and the latest events.
    static func render(
        _ points: [MapPoint],
        region: (south: Double, west: Double, north: Double, east: Double)?,
        title: String,
        seq: Int64,
        recentEvents: [String],
        columns: Int,
        rows: Int
    ) -> [String] {
        let box = Self.bounds(points, region: region)
        let eventLines = min(recentEvents.count, max(0, min(5, rows / 4)))
        let mapHeight = max(3, rows - 1 - eventLines)
        let status =
            "\(title) — \(points.count) annotations at seq \(seq), "
            + "lat \(Self.short(box.south))…\(Self.short(box.north)), lon \(Self.short(box.west))…\(Self.short(box.east))"
            + " (Ctrl-C quits)"
        var lines = [LiveScreen.fit(status, width: columns)]
        lines += Self.grid(points, box: box, width: columns, height: mapHeight)
        lines += recentEvents.suffix(eventLines).map { LiveScreen.fit($0, width: columns) }
        return lines
    }

    static func short(_ d: Double) -> String {
        let scaled = (d * 10_000).rounded() / 10_000
        return scaled.description
    }
}
