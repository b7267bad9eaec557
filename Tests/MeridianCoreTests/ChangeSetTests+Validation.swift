import MeridianCore
import Testing

// MARK: - Validator rejections

extension ChangeSetTests {
    /// One change set the validator must reject, with the exact error.
    struct Rejection: Sendable, CustomTestStringConvertible {
        var label: String
        var changes: ChangeSet<Item>
        var oldCounts: [Int]
        var newCounts: [Int]
        var code: ChangeSetError.Code
        var message: String

        var testDescription: String { self.label }

        static let all: [Rejection] = [
            Rejection(
                label: "wrong row count in a section",
                changes: ChangeSet(rowChanges: [.insert(id: 9, to: path(0, 0), element: Item(9))]),
                oldCounts: [3],
                newCounts: [3],
                code: .rowCountMismatch,
                message:
                    "Invalid update: invalid number of rows in section 0. The number of rows contained in an "
                    + "existing section after the update (3) must be equal to the number of rows contained in that "
                    + "section before the update (3), plus or minus the number of rows inserted or deleted from "
                    + "that section (1 inserted, 0 deleted) and plus or minus the number of rows moved into or out of "
                    + "that section (0 moved in, 0 moved out)."
            ),
            Rejection(
                label: "wrong row count after a section delete shifts the pairing",
                changes: ChangeSet(
                    deletedSections: [0],
                    rowChanges: [
                        .delete(id: 1, from: path(0, 0)),
                        .move(id: 2, from: path(1, 0), to: path(0, 0), element: Item(2), changed: []),
                    ]
                ),
                oldCounts: [1, 2],
                newCounts: [1],
                code: .rowCountMismatch,
                message: "Invalid update: invalid number of rows in section 0 (section 1 before). The number of rows "
                    + "contained in an existing section after the update (1) must be equal to the number of rows "
                    + "contained in that section before the update (2), plus or minus the number of rows inserted or "
                    + "deleted from that section (0 inserted, 0 deleted) and plus or minus the number of rows moved "
                    + "into or out of that section (1 moved in, 1 moved out)."
            ),
            Rejection(
                label: "duplicate delete",
                changes: ChangeSet(rowChanges: [.delete(id: 1, from: path(0, 1)), .delete(id: 2, from: path(0, 1))]),
                oldCounts: [3],
                newCounts: [1],
                code: .duplicateIndexPath,
                message: "attempt to delete the same index path [0,1] twice (ids 1 and 2)"
            ),
            Rejection(
                label: "out-of-range insert",
                changes: ChangeSet(rowChanges: [.insert(id: 9, to: path(0, 3), element: Item(9))]),
                oldCounts: [2],
                newCounts: [3],
                code: .indexPathOutOfRange,
                message:
                    "attempt to insert row 3 into section 0, but there are only 3 rows in section 0 after the update"
            ),
            Rejection(
                label: "insert into a section that does not exist",
                changes: ChangeSet(rowChanges: [.insert(id: 9, to: path(1, 0), element: Item(9))]),
                oldCounts: [2],
                newCounts: [3],
                code: .indexPathOutOfRange,
                message: "attempt to insert row 0 into section 1, but there are only 1 sections after the update"
            ),
            Rejection(
                label: "out-of-range delete",
                changes: ChangeSet(rowChanges: [.delete(id: 1, from: path(0, 2))]),
                oldCounts: [2],
                newCounts: [1],
                code: .indexPathOutOfRange,
                message: "attempt to delete row 2 from section 0 which only contains 2 rows before the update"
            ),
            Rejection(
                label: "section count mismatch",
                changes: ChangeSet(),
                oldCounts: [1],
                newCounts: [1, 0],
                code: .sectionCountMismatch,
                message:
                    "Invalid update: invalid number of sections. The number of sections contained after the update "
                    + "(2) must be equal to the number of sections contained before the update (1), plus or minus the "
                    + "number of sections inserted or deleted (0 inserted, 0 deleted)."
            ),
            Rejection(
                label: "delete and update of the same path",
                changes: ChangeSet(rowChanges: [
                    .delete(id: 1, from: path(0, 0)),
                    .update(id: 1, from: path(0, 0), to: path(0, 0), element: Item(1), changed: []),
                ]),
                oldCounts: [2],
                newCounts: [1],
                code: .duplicateIndexPath,
                message: "attempt to delete and reload the same index path [0,0] (ids 1 and 1)"
            ),
            Rejection(
                label: "insert and move to the same path",
                changes: ChangeSet(rowChanges: [
                    .insert(id: 5, to: path(0, 0), element: Item(5)),
                    .move(id: 1, from: path(0, 1), to: path(0, 0), element: Item(1), changed: []),
                ]),
                oldCounts: [2],
                newCounts: [3],
                code: .duplicateIndexPath,
                message: "attempt to insert and move to the same index path [0,0] (ids 5 and 1)"
            ),
            Rejection(
                label: "section index out of range",
                changes: ChangeSet(deletedSections: [2]),
                oldCounts: [0, 0],
                newCounts: [0],
                code: .sectionOutOfRange,
                message: "attempt to delete section 2, but there are only 2 sections before the update"
            ),
            Rejection(
                label: "duplicate section insert",
                changes: ChangeSet(insertedSections: [
                    SectionInsertion(index: 1, key: .int(1)), SectionInsertion(index: 1, key: .int(2)),
                ]),
                oldCounts: [0],
                newCounts: [0, 0, 0],
                code: .duplicateSection,
                message: "attempt to insert section 1 twice"
            ),
            Rejection(
                label: "one id in two changes",
                changes: ChangeSet(rowChanges: [
                    .delete(id: 1, from: path(0, 0)),
                    .insert(id: 1, to: path(0, 1), element: Item(1)),
                ]),
                oldCounts: [2],
                newCounts: [2],
                code: .duplicateID,
                message: "id 1 appears in more than one change"
            ),
            Rejection(
                label: "update across sections",
                changes: ChangeSet(rowChanges: [
                    .update(id: 1, from: path(0, 0), to: path(1, 0), element: Item(1), changed: [])
                ]),
                oldCounts: [1, 1],
                newCounts: [1, 1],
                code: .updateAcrossSections,
                message:
                    "update of id 1 from [0,0] to [1,0] does not stay in one surviving section; report it as a move"
            ),
            Rejection(
                label: "rows left in a deleted section",
                changes: ChangeSet(deletedSections: [0], rowChanges: [.delete(id: 1, from: path(0, 0))]),
                oldCounts: [2, 1],
                newCounts: [1],
                code: .incompleteSection,
                message: "section 0 is deleted but only 1 of its 2 rows are deleted or moved out"
            ),
            Rejection(
                label: "rows missing from an inserted section",
                changes: ChangeSet(insertedSections: [SectionInsertion(index: 0, key: .int(0))]),
                oldCounts: [1],
                newCounts: [1, 1],
                code: .incompleteSection,
                message: "section 0 is inserted but only 0 of its 1 rows are inserted or moved in"
            ),
        ]
    }
}

extension ChangeSetTests {
    @Test("the validator rejects what a table view would, with its message", arguments: Rejection.all)
    func rejects(_ rejection: Rejection) {
        #expect {
            try rejection.changes.validate(oldSectionCounts: rejection.oldCounts, newSectionCounts: rejection.newCounts)
        } throws: { error in
            guard let error = error as? ChangeSetError else { return false }
            #expect(error.code == rejection.code)
            #expect(error.message == rejection.message)
            return error.code == rejection.code
        }
    }

    @Test("a valid move across a deleted section's neighbours passes")
    func acceptsShiftedPairing() throws {
        let changes = ChangeSet<Item>(
            deletedSections: [0],
            insertedSections: [SectionInsertion(index: 1, key: .int(9))],
            rowChanges: [
                .move(id: 1, from: path(0, 0), to: path(1, 0), element: Item(1), changed: []),
                .update(id: 2, from: path(1, 0), to: path(0, 0), element: Item(2, 1), changed: []),
            ]
        )
        try changes.validate(oldSectionCounts: [1, 1], newSectionCounts: [1, 1])
        let old = list(section("A", [Item(1)]), section("B", [Item(2)]))
        let new = SectionedList(sections: [
            section("B", [Item(2, 1)]), ListSection(key: .int(9), name: "", elements: [Item(1)]),
        ])
        try changes.validate(old: old, new: new)
    }

    @Test("the list check names the first row that differs")
    func resultMismatch() {
        let old = list(section("A", [Item(1), Item(2)]))
        let new = list(section("A", [Item(2), Item(1)]))
        #expect {
            try ChangeSet<Item>().validate(old: old, new: new)
        } throws: { error in
            guard let error = error as? ChangeSetError else { return false }
            return error.code == .resultMismatch
                && error.message == "the row at [0,0] after applying is 1:0, expected 2:0"
        }
    }
}
