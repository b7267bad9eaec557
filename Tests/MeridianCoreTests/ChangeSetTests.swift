import MeridianCore
import Testing

// MARK: - Fixtures

extension ChangeSetTests {
    /// A minimal list element: an integer id and a value that updates change.
    struct Item: Identifiable, Equatable, Sendable, CustomStringConvertible {
        var id: Int
        var value: Int

        init(_ id: Int, _ value: Int = 0) {
            self.id = id
            self.value = value
        }

        var description: String { "\(self.id):\(self.value)" }
    }
}

/// A section keyed by a string, named like its key.
func section(_ key: String, _ items: [ChangeSetTests.Item]) -> ListSection<ChangeSetTests.Item> {
    ListSection(key: .string(key), name: key, elements: items)
}

/// A list of items from sections.
func list(_ sections: ListSection<ChangeSetTests.Item>...) -> SectionedList<ChangeSetTests.Item> {
    SectionedList(sections: sections)
}

/// Shorthand for `ListIndexPath(section, row)`.
func path(_ section: Int, _ row: Int) -> ListIndexPath {
    ListIndexPath(section, row)
}

// MARK: - Hand-written transitions

@Suite struct ChangeSetTests {
    @Test("index paths order by section then row and print as [s,r]")
    func indexPaths() {
        #expect(ListIndexPath(section: 2, row: 7).description == "[2,7]")
        #expect(path(0, 9) < path(1, 0))
        #expect(path(1, 0) < path(1, 1))
        #expect([path(1, 1), path(0, 5), path(1, 0)].sorted() == [path(0, 5), path(1, 0), path(1, 1)])
    }

    @Test("a row moving to another section is one move")
    func moveAcrossSections() throws {
        let old = list(section("A", [Item(1), Item(2), Item(3)]), section("B", [Item(4), Item(5)]))
        let new = list(section("A", [Item(1), Item(3)]), section("B", [Item(4), Item(2), Item(5)]))
        let changes = try ChangeSet.between(old: old, new: new)
        #expect(changes.deletedSections.isEmpty)
        #expect(changes.insertedSections.isEmpty)
        #expect(changes.rowChanges == [.move(id: 2, from: path(0, 1), to: path(1, 1), element: Item(2), changed: [])])
        try changes.validate(old: old, new: new)
    }

    @Test("an inserted section comes with its rows, inserted and moved in")
    func sectionInsertWithRows() throws {
        let old = list(section("A", [Item(1), Item(2)]))
        let new = list(section("A", [Item(1)]), section("B", [Item(2), Item(3)]))
        let changes = try ChangeSet.between(old: old, new: new)
        #expect(changes.deletedSections == [])
        #expect(changes.insertedSections == [SectionInsertion(index: 1, key: .string("B"), name: "B")])
        #expect(
            changes.rowChanges == [
                .insert(id: 3, to: path(1, 1), element: Item(3)),
                .move(id: 2, from: path(0, 1), to: path(1, 0), element: Item(2), changed: []),
            ]
        )
        try changes.validate(old: old, new: new)
    }

    @Test("a row that changed and moved is one move carrying the new value")
    func updateAndMove() throws {
        let old = list(section("A", [Item(1, 0), Item(2), Item(3)]))
        let new = list(section("A", [Item(2), Item(3), Item(1, 9)]))
        let changes = try ChangeSet.between(old: old, new: new) { before, after in
            before.value == after.value ? [] : ["value"]
        }
        #expect(
            changes.rowChanges == [
                .move(id: 1, from: path(0, 0), to: path(0, 2), element: Item(1, 9), changed: ["value"])
            ]
        )
        try changes.validate(old: old, new: new)
    }

    @Test("a row that changed in place is an update with its old and new paths")
    func updateInPlace() throws {
        let old = list(section("A", [Item(1), Item(2), Item(3)]))
        let new = list(section("A", [Item(0), Item(1), Item(3, 5)]))
        let changes = try ChangeSet.between(old: old, new: new)
        #expect(
            changes.rowChanges == [
                .delete(id: 2, from: path(0, 1)),
                .insert(id: 0, to: path(0, 0), element: Item(0)),
                .update(id: 3, from: path(0, 2), to: path(0, 2), element: Item(3, 5), changed: []),
            ]
        )
        try changes.validate(old: old, new: new)
    }

    @Test(
        "an unchanged list gives an empty change set",
        arguments: [
            list(),
            list(section("", [])),
            list(section("A", [Item(1), Item(2)]), section("B", [Item(3)])),
        ])
    func emptyTransition(_ same: SectionedList<Item>) throws {
        let changes = try ChangeSet.between(old: same, new: same)
        #expect(changes.isEmpty)
        #expect(changes == ChangeSet())
        try changes.validate(old: same, new: same)
        #expect(try same.applying(changes) == same)
    }

    @Test("deleting everything deletes every section and every row, descending")
    func deleteAll() throws {
        let old = list(section("A", [Item(1), Item(2)]), section("B", [Item(3)]))
        let new = list()
        let changes = try ChangeSet.between(old: old, new: new)
        #expect(changes.deletedSections == [1, 0])
        #expect(
            changes.rowChanges == [
                .delete(id: 3, from: path(1, 0)), .delete(id: 2, from: path(0, 1)), .delete(id: 1, from: path(0, 0)),
            ]
        )
        try changes.validate(old: old, new: new)
    }

    @Test("inserting into an empty list inserts every section and every row, ascending")
    func insertIntoEmpty() throws {
        let old = list()
        let new = list(section("A", [Item(1), Item(2)]), section("B", [Item(3)]))
        let changes = try ChangeSet.between(old: old, new: new)
        #expect(changes.insertedSections.map(\.index) == [0, 1])
        #expect(changes.rowChanges.map(\.newPath) == [path(0, 0), path(0, 1), path(1, 0)])
        #expect(changes.counts.inserts == 3)
        try changes.validate(old: old, new: new)
    }

    @Test("a section out of order is deleted and inserted again, its rows moved")
    func sectionReorder() throws {
        let old = list(section("A", [Item(1)]), section("B", [Item(2)]), section("C", [Item(3), Item(4)]))
        let new = list(section("C", [Item(3), Item(4)]), section("A", [Item(1)]), section("B", [Item(2)]))
        let changes = try ChangeSet.between(old: old, new: new)
        #expect(changes.deletedSections == [2])
        #expect(changes.insertedSections == [SectionInsertion(index: 0, key: .string("C"), name: "C")])
        #expect(
            changes.rowChanges == [
                .move(id: 3, from: path(2, 0), to: path(0, 0), element: Item(3), changed: []),
                .move(id: 4, from: path(2, 1), to: path(0, 1), element: Item(4), changed: []),
            ]
        )
        try changes.validate(old: old, new: new)
    }

    @Test("a renamed section is replaced; a null section key is a key like any other")
    func renamedSection() throws {
        let old = SectionedList(sections: [
            ListSection(key: .null, name: "", elements: [Item(1)]),
            ListSection(key: .int(1), name: "one", elements: [Item(2)]),
        ])
        var new = old
        new.sections[1].name = "One"
        let changes = try ChangeSet.between(old: old, new: new)
        #expect(changes.deletedSections == [1])
        #expect(changes.insertedSections == [SectionInsertion(index: 1, key: .int(1), name: "One")])
        #expect(changes.rowChanges == [.move(id: 2, from: path(1, 0), to: path(1, 0), element: Item(2), changed: [])])
        try changes.validate(old: old, new: new)
    }

    @Test("rows name their changed attributes, strictly by stored value")
    func rows() throws {
        let a = Row(id: "a", values: ["title": .string("x"), "n": .int(1)])
        let b = Row(id: "b", values: ["title": .string("y")])
        let old = SectionedList(unsectioned: [a, b])
        var a2 = a
        a2["n"] = .double(1.0)  // equal under ==, but the stored type changed
        var b2 = b
        b2["title"] = .string("z")
        let new = SectionedList(unsectioned: [b2, a2])
        let changes = try ChangeSet<Row>.between(old: old, new: new)
        #expect(
            changes.rowChanges == [
                .move(id: "b", from: path(0, 1), to: path(0, 0), element: b2, changed: ["title"]),
                .update(id: "a", from: path(0, 0), to: path(0, 1), element: a2, changed: ["n"]),
            ]
        )
        #expect(SectionedList<Row>.unsectionedKey == .string(""))
        try changes.validate(old: old, new: new)
    }

    @Test("lists that repeat an id or a section key cannot be diffed")
    func invalidLists() {
        let good = list(section("A", [Item(1)]))
        let repeatedID = list(section("A", [Item(1)]), section("B", [Item(1)]))
        let repeatedKey = list(section("A", [Item(1)]), section("A", [Item(2)]))
        for bad in [repeatedID, repeatedKey] {
            #expect(throws: ChangeSetError.self) { try ChangeSet.between(old: bad, new: good) }
            #expect(throws: ChangeSetError.self) { try ChangeSet.between(old: good, new: bad) }
        }
        do {
            _ = try ChangeSet.between(old: good, new: repeatedID)
        } catch {
            #expect(error.code == .invalidList)
            #expect(error.description == "invalidList: the new list holds id 1 twice")
        }
    }

    @Test("a change set built by hand, in any order, applies like the diff's")
    func builtByHand() throws {
        let old = list(section("A", [Item(1), Item(2), Item(3)]), section("B", [Item(4)]))
        let new = list(section("A", [Item(3), Item(5)]), section("B", [Item(4, 1), Item(1)]))
        // As a results controller would append them, one row at a time.
        var changes = ChangeSet<Item>()
        changes.rowChanges.append(.update(id: 4, from: path(1, 0), to: path(1, 0), element: Item(4, 1), changed: []))
        changes.rowChanges.append(.move(id: 1, from: path(0, 0), to: path(1, 1), element: Item(1), changed: []))
        changes.rowChanges.append(.insert(id: 5, to: path(0, 1), element: Item(5)))
        changes.rowChanges.append(.delete(id: 2, from: path(0, 1)))
        try changes.validate(oldSectionCounts: old.sectionCounts, newSectionCounts: new.sectionCounts)
        try changes.validate(old: old, new: new)
        #expect(changes.canonicalized() == (try ChangeSet.between(old: old, new: new)))
    }

    /// `canonicalized()` sorts keys and moves each change once; this pins it to what sorting the changes themselves
    /// gives (ties in their given order), for random mixes of kinds and paths, repeated paths included.
    @Test("canonical order by keys equals the stable sort of the changes, for random change lists")
    func canonicalOrderMatchesSort() {
        var rng = SplitMix64(seed: 2026_1124)
        for round in 0..<500 {
            var changes = ChangeSet<Item>()
            for i in 0..<Int.random(in: 0...40, using: &rng) {
                let a = path(Int.random(in: 0...3, using: &rng), Int.random(in: 0...5, using: &rng))
                let b = path(Int.random(in: 0...3, using: &rng), Int.random(in: 0...5, using: &rng))
                switch Int.random(in: 0...3, using: &rng) {
                case 0: changes.rowChanges.append(.delete(id: i, from: a))
                case 1: changes.rowChanges.append(.insert(id: i, to: b, element: Item(i)))
                case 2: changes.rowChanges.append(.move(id: i, from: a, to: b, element: Item(i), changed: []))
                default: changes.rowChanges.append(.update(id: i, from: a, to: b, element: Item(i), changed: []))
                }
            }
            func rank(_ change: ChangeSet<Item>.RowChange) -> Int {
                switch change {
                case .delete: 0
                case .insert: 1
                case .move: 2
                case .update: 3
                }
            }
            // The order as it was defined before: a stable sort of the changes (ties by their position).
            let expected = changes.rowChanges.enumerated().sorted { x, y in
                let (a, b) = (x.element, y.element)
                if rank(a) != rank(b) { return rank(a) < rank(b) }
                if case .delete(_, let fromA) = a, case .delete(_, let fromB) = b, fromA != fromB {
                    return fromA > fromB
                }
                if case .delete = a {} else if a.newPath! != b.newPath! { return a.newPath! < b.newPath! }
                return x.offset < y.offset
            }.map(\.element)
            #expect(changes.canonicalized().rowChanges == expected, "round \(round)")
        }
    }

    @Test("applying reports ids that do not match the rows at their paths")
    func applyChecksIDs() {
        let old = list(section("A", [Item(1), Item(2)]))
        let changes = ChangeSet<Item>(rowChanges: [.delete(id: 2, from: path(0, 0))])
        #expect {
            try old.applying(changes)
        } throws: { error in
            (error as? ChangeSetError)?.code == .idMismatch
        }
    }
}
