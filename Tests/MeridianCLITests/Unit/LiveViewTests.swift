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
