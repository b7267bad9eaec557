// MARK: - Live terminal views

import MeridianCore
import Testing

@testable import MeridianCLI

@Suite struct LiveViewTests {
    @Test("the live table: status line, columns, section headers, cut to the terminal")
    func table() {
        let rows = (1...6).map { i in
            Row(id: "p\(i)", values: ["title": .string("T\(i)"), "category": .int(Int64(i % 2))])
        }
        let list = WatchEventsTests.list(rows, sectioned: true)
        let view = LiveTable(entity: point, title: "Point", sectionKey: "category")
        let lines = view.render(list, seq: 9, columns: 60, rows: 8)
        #expect(
            lines == [
                "Point — 6 rows at seq 9 (Ctrl-C quits)",
                "id  title  category  latitude  longitude  updatedAt",
                "--  -----  --------  --------  ---------  ---------",
                "── category 0 (3) ──",
                "p2  T2            0",
                "p4  T4            0",
                "p6  T6            0",
                "… 4 more lines",
            ])
        #expect(view.render(list, seq: 9, columns: 20, rows: 40)[1] == "id  title  category…")
    }

    @Test("the live table highlights the rows changed lately and lists the last change sets below them")
    func tableHighlightsAndFooter() throws {
        let rows = (1...6).map { i in
            Row(id: "p\(i)", values: ["title": .string("T\(i)"), "category": .int(Int64(i % 2))])
        }
        let list = WatchEventsTests.list(rows, sectioned: true)
        let moved = Row(id: "p4", values: ["title": .string("T4b"), "category": .int(0)])
        let next = WatchEventsTests.list(
            rows.map { $0.id == "p4" ? moved : $0 } + [
                Row(id: "p7", values: ["title": .string("T7"), "category": .int(0)])
            ],
            sectioned: true)
        let changeSet = try ChangeSet<Row>.between(old: list, new: next)
        let footer = LiveTable.describe(changeSet, seq: 10)
        #expect(footer.hasPrefix("seq 10  "), "\(footer)")
        #expect(footer.contains("update p4 (title)"), "\(footer)")
        #expect(footer.contains("insert p7"), "\(footer)")
        let view = LiveTable(entity: point, title: "Point", sectionKey: "category")
        let lines = view.render(list, seq: 9, columns: 60, rows: 12, highlighted: ["p4"], recent: [footer])
        #expect(lines.count == 12, "\(lines)")
        #expect(lines.contains(LiveTable.highlight("p4  T4            0")), "\(lines)")
        #expect(lines.contains("p2  T2            0"), "an unchanged row is not highlighted: \(lines)")
        #expect(lines.suffix(2) == ["── last changes ──", footer])
    }

    @Test("the ASCII map: north up, counts per cell, outside points dropped")
    func map() {
        let points = [
            MapPoint(id: "nw", latitude: 1, longitude: 0, title: nil),
            MapPoint(id: "se", latitude: 0, longitude: 1, title: nil),
            MapPoint(id: "se2", latitude: 0, longitude: 1, title: nil),
            MapPoint(id: "out", latitude: 5, longitude: 5, title: nil),
        ]
        let grid = AsciiMap.grid(points, box: (0, 0, 1, 1), width: 6, height: 4)
        #expect(grid == ["┌────┐", "│•   │", "│   2│", "└────┘"])
        let screen = AsciiMap.render(
            Array(points.prefix(3)), region: nil, title: "Point", seq: 3, recentEvents: ["move nw"], columns: 40,
            rows: 10)
        #expect(screen.first == "Point — 3 annotations at seq 3, lat 0.0…")
        #expect(screen.count == 10)
        #expect(screen.last == "move nw")
    }
}
