// MARK: - ListModel: applying in place
//
// A list model moves its rows in place for each change set: these tests pin what that must not change — an array of
// rows a caller still holds keeps them, observers hear of each applied change once, and a change set that does not
// fit (by its paths, or only by the table view's count check) changes nothing and tells no one.

import MeridianClient
import MeridianCore
import Testing

@Suite struct ListModelTests {
    static func row(_ i: Int) -> Point {
        Point(id: "p\(i)", title: "title \(i)", category: i % 3)
    }

    @Test("a list model applies in place: a held array keeps its rows; a change set that does not fit tells no one")
    func inPlace() throws {
        nonisolated(unsafe) let list = ListModel<Point>()
        let rows = (0..<1_000).map(Self.row)
        try list.apply(
            try ChangeSet.between(old: SectionedList(unsectioned: []), new: SectionedList(unsectioned: rows)))
        #expect(list.allElements == rows)
        let held = list.sections
        let log = ObservationLog(read: { _ = list.allElements }, probe: {})

        // A delete, an insert and an update: the model shows the new rows, the caller's array the old ones.
        var next = rows
        next.remove(at: 10)
        next.insert(Point(id: "new", title: "new", category: 0), at: 500)
        next[900].note = "changed"
        let changes = try ChangeSet.between(old: list.list, new: SectionedList(unsectioned: next))
        try list.apply(changes)
        #expect(list.allElements == next)
        #expect(held.map(\.elements) == [rows])
        #expect(log.values.count == 1)
        #expect(list.lastChangeSet == changes)

        // A delete whose id is not at its path: the paths do not fit.
        var wrongID = ChangeSet<Point>()
        wrongID.rowChanges = [.delete(id: "p0", from: ListIndexPath(0, 1))]
        #expect(throws: ChangeSetError.self) { try list.apply(wrongID) }
        // A delete and an insert of one id: the paths fit, the table view's check refuses it (duplicateID).
        var twice = ChangeSet<Point>()
        twice.rowChanges = [
            .delete(id: "p0", from: ListIndexPath(0, 0)), .insert(id: "p0", to: ListIndexPath(0, 5), element: rows[0]),
        ]
        #expect(throws: ChangeSetError.self) { try list.apply(twice) }
        #expect(list.allElements == next)
        #expect(list.lastChangeSet == changes)
        #expect(log.values.count == 1, "a change set that does not fit tells no one")
    }
}
