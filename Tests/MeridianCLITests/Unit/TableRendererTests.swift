// MARK: - Tables

import MeridianCore
import Testing

@testable import MeridianCLI

@Suite struct TableRendererTests {
    @Test("aligned columns, numbers right-aligned, nulls blank, trailing spaces trimmed")
    func renders() {
        let rows = [
            Row(id: "p1", values: ["title": "Café Aurora", "category": 2, "latitude": 38.711, "longitude": -9.139]),
            Row(id: "p10", values: ["title": "Bar", "category": 10]),
        ]
        let table = TableRenderer(entity: point)
        let lines = table.render(rows.map { TableRenderer.cells($0, entity: point) })
        #expect(
            lines == [
                "id   title        category  latitude  longitude  updatedAt",
                "---  -----------  --------  --------  ---------  ---------",
                "p1   Café Aurora         2    38.711     -9.139",
                "p10  Bar                10",
            ])
    }

    @Test("line breaks show as spaces, long cells are cut, wide characters count two columns")
    func cells() {
        var table = TableRenderer(columns: [
            .init(title: "a", rightAligned: false), .init(title: "b", rightAligned: false),
        ])
        table.maximumCellWidth = 8
        let lines = table.render([["one\ntwo", "x"], ["abcdefghijkl", "y"], ["東京", "z"]])
        #expect(
            lines == [
                "a         b",
                "--------  -",
                "one two   x",
                "abcdefg…  y",
                "東京      z",
            ])
        #expect(TableRenderer.width("東京") == 4)
        #expect(TableRenderer.width("Café") == 4)
    }

    @Test("an empty result is the header and the rule")
    func empty() {
        #expect(TableRenderer(entity: point).render([]).count == 2)
    }
}
