import MeridianCore
import Testing

// MARK: - LiveResultsTests

/// The results engine: hand-written transitions (this file), randomized batches against a from-scratch query
/// (`LiveResultsTests+Random.swift`) and the order-statistic tree on its own (`LiveResultsTests+Tree.swift`).
@Suite struct LiveResultsTests {
    /// The schema every test uses, parsed the way a deployment's schema file is.
    static let schema: Schema = {
        do {
            return try Schema.parse(
                yaml: """
                    version: 1
                    entities:
                      Item:
                        id: client
                        attributes:
                          title: string
                          category: int?
                          score: int
                          flag: bool?
                    """,
                file: "live-results-tests.yaml"
            )
        } catch {
            fatalError("test schema: \(error)")
        }
    }()

    static var item: EntitySchema { Self.schema.entity(named: "Item")! }

    /// An `Item` row.
    static func row(_ id: String, _ title: String, category: Int?, score: Int, flag: Bool? = nil) -> Row {
        var values: [String: Value] = ["title": .string(title), "score": .int(Int64(score))]
        values["category"] = category.map { .int(Int64($0)) } ?? .null
        values["flag"] = flag.map { .bool($0) } ?? .null
        return Row(id: id, values: values)
    }

    /// Results over `Item` from predicate and sort text.
    static func results(
        _ predicate: String = "TRUEPREDICATE",
        order: String,
        sectionKey: String? = nil,
        limit: Int? = nil
    ) throws -> LiveResults {
        try LiveResults(
            predicate: try PredicateExpression.parse(predicate).bind(to: Self.item),
            order: try RowOrder(parsing: order).checked(against: Self.item, sectionKey: sectionKey),
            sectionKey: sectionKey,
            limit: limit
        )
    }

    /// Applies a batch, checks the change set against the snapshots before and after, and returns it.
    static func step(
        _ results: inout LiveResults,
        _ mutations: [RowMutation],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> ChangeSet<Row> {
        let before = results.snapshot
        let changes = results.apply(mutations)
        let after = results.snapshot
        try changes.validate(old: before, new: after)
        #expect(try before.applying(changes) == after, sourceLocation: sourceLocation)
        return changes
    }

    // MARK: - Membership

    @Test("a matching row enters at its path; a row that stops matching leaves")
    func enterAndLeave() throws {
        var results = try Self.results("score >= 10", order: "score")
        _ = results.reset(rows: [
            Self.row("a", "A", category: 1, score: 10), Self.row("b", "B", category: 1, score: 30),
        ])

        let enter = try Self.step(&results, [.upsert(Self.row("c", "C", category: 1, score: 20))])
        #expect(
            enter.rowChanges == [
                .insert(id: "c", to: ListIndexPath(0, 1), element: Self.row("c", "C", category: 1, score: 20))
            ])

        let leave = try Self.step(&results, [.upsert(Self.row("a", "A", category: 1, score: 5))])
        #expect(leave.rowChanges == [.delete(id: "a", from: ListIndexPath(0, 0))])
        #expect(results.rows.map(\.id) == ["c", "b"])

        #expect(try Self.step(&results, [.delete(id: "b")]).rowChanges == [.delete(id: "b", from: ListIndexPath(0, 1))])
        #expect(results.apply([.delete(id: "nobody"), .upsert(Self.row("z", "Z", category: 1, score: 0))]).isEmpty)
    }

    @Test("the fault trap: an update brings a row into the predicate, a later one takes it out")
    func faultTrap() throws {
        var results = try Self.results("flag == true", order: "title")
        _ = results.reset(rows: [Self.row("a", "A", category: 1, score: 1, flag: true)])
        let hidden = Self.row("b", "B", category: 1, score: 1, flag: false)
        #expect(results.apply([.upsert(hidden)]).isEmpty)

        var shown = hidden
        shown["flag"] = .bool(true)
        let entered = try Self.step(&results, [.upsert(shown)])
        #expect(entered.rowChanges == [.insert(id: "b", to: ListIndexPath(0, 1), element: shown)])
        #expect(results.indexPath(for: "b") == ListIndexPath(0, 1))

        var retitled = shown
        retitled["title"] = .string("0")
        let moved = try Self.step(&results, [.upsert(retitled)])
        #expect(
            moved.rowChanges == [
                .move(
                    id: "b", from: ListIndexPath(0, 1), to: ListIndexPath(0, 0), element: retitled, changed: ["title"])
            ])

        var gone = retitled
        gone["flag"] = .null
        let left = try Self.step(&results, [.upsert(gone)])
        #expect(left.rowChanges == [.delete(id: "b", from: ListIndexPath(0, 0))])
        #expect(results.row(id: "b") == nil)
        #expect(results.indexPath(for: "b") == nil)
    }

    // MARK: - Moves and updates

    @Test("a change that keeps the order is an update; one that changes it is a move, within and across sections")
    func moveAndUpdate() throws {
        var results = try Self.results(order: "category,score", sectionKey: "category")
        _ = results.reset(rows: [
            Self.row("a", "A", category: 1, score: 1), Self.row("b", "B", category: 1, score: 2),
            Self.row("c", "C", category: 1, score: 3), Self.row("d", "D", category: 2, score: 1),
        ])
        #expect(results.sections.map(\.count) == [3, 1])
        #expect(results.sections.map(\.name) == ["1", "2"])

        let retitled = Self.row("b", "Bee", category: 1, score: 2)
        let update = try Self.step(&results, [.upsert(retitled)])
        #expect(
            update.rowChanges == [
                .update(
                    id: "b", from: ListIndexPath(0, 1), to: ListIndexPath(0, 1), element: retitled, changed: ["title"])
            ])

        // Order kept relative to the others, even though the score changed: still an update.
        let rescored = Self.row("b", "Bee", category: 1, score: 2, flag: true)
        #expect(try Self.step(&results, [.upsert(rescored)]).counts.updates == 1)

        let last = Self.row("a", "A", category: 1, score: 9)
        let within = try Self.step(&results, [.upsert(last)])
        #expect(
            within.rowChanges == [
                .move(id: "a", from: ListIndexPath(0, 0), to: ListIndexPath(0, 2), element: last, changed: ["score"])
            ])

        let across = Self.row("c", "C", category: 2, score: 0)
        let moved = try Self.step(&results, [.upsert(across)])
        #expect(
            moved.rowChanges == [
                .move(
                    id: "c", from: ListIndexPath(0, 1), to: ListIndexPath(1, 0), element: across,
                    changed: ["category", "score"])
            ])
        #expect(results.object(at: ListIndexPath(1, 0)) == across)
        #expect(results.indexPath(for: "d") == ListIndexPath(1, 1))
    }

    @Test("two changes to one row in one batch: the last wins, reported once as a move against the old state")
    func updateThenMoveInOneBatch() throws {
        var results = try Self.results(order: "score")
        let rows = (0..<4).map { Self.row("r\($0)", "T\($0)", category: 1, score: $0 * 10) }
        _ = results.reset(rows: rows)
        let retitled = Self.row("r1", "renamed", category: 1, score: 10)
        let moved = Self.row("r1", "renamed", category: 1, score: 35)
        let changes = try Self.step(&results, [.upsert(retitled), .upsert(moved)])
        #expect(
            changes.rowChanges == [
                .move(
                    id: "r1", from: ListIndexPath(0, 1), to: ListIndexPath(0, 3), element: moved,
                    changed: ["score", "title"])
            ])
    }

    @Test("several changed rows: only those off the longest increasing run move; unchanged rows never move")
    func minimalMoves() throws {
        var results = try Self.results(order: "score")
        _ = results.reset(rows: (0..<6).map { Self.row("r\($0)", "T", category: 1, score: $0 * 10) })
        // r0 jumps to the end; r1..r3 shift within their gaps; r4, r5 untouched.
        let changes = try Self.step(
            &results,
            [
                .upsert(Self.row("r0", "T", category: 1, score: 99)),
                .upsert(Self.row("r1", "T", category: 1, score: 11)),
                .upsert(Self.row("r2", "T", category: 1, score: 21)),
            ])
        #expect(changes.counts.moves == 1)
        #expect(changes.counts.updates == 2)
        #expect(changes.rowChanges.allSatisfy { ["r0", "r1", "r2"].contains($0.id) })
    }

    // MARK: - Sections

    @Test("the first row of a value creates its section, the last one deletes it")
    func sectionLifecycle() throws {
        var results = try Self.results(order: "-category,title", sectionKey: "category")
        _ = results.reset(rows: [
            Self.row("a", "A", category: 1, score: 0), Self.row("n", "N", category: nil, score: 0),
        ])
        #expect(results.sections.map(\.key) == [.int(1), .null])

        let first = Self.row("b", "B", category: 5, score: 0)
        let created = try Self.step(&results, [.upsert(first)])
        #expect(created.insertedSections == [SectionInsertion(index: 0, key: .int(5), name: "5")])
        #expect(created.rowChanges == [.insert(id: "b", to: ListIndexPath(0, 0), element: first)])

        let deleted = try Self.step(&results, [.delete(id: "a")])
        #expect(deleted.deletedSections == [1])
        #expect(deleted.rowChanges == [.delete(id: "a", from: ListIndexPath(1, 0))])

        // The last row of a section moves into a new one: the section is deleted and another inserted.
        let renumbered = Self.row("b", "B", category: 3, score: 0)
        let both = try Self.step(&results, [.upsert(renumbered)])
        #expect(both.deletedSections == [0])
        #expect(both.insertedSections == [SectionInsertion(index: 0, key: .int(3), name: "3")])
        #expect(
            both.rowChanges == [
                .move(
                    id: "b", from: ListIndexPath(0, 0), to: ListIndexPath(0, 0), element: renumbered,
                    changed: ["category"])
            ])
        #expect(results.sections.map(\.name) == ["3", ""])
    }

    // MARK: - Limit

    @Test("rows pushed into and out of a limit window are inserts and deletes at window positions")
    func limitWindow() throws {
        var results = try Self.results(order: "score", sectionKey: nil, limit: 3)
        _ = results.reset(rows: (0..<5).map { Self.row("r\($0)", "T", category: 1, score: $0 * 10) })
        #expect(results.rows.map(\.id) == ["r0", "r1", "r2"])
        #expect(results.matchingCount == 5)

        let top = Self.row("t", "T", category: 1, score: -1)
        let pushed = try Self.step(&results, [.upsert(top)])
        #expect(
            pushed.rowChanges == [
                .delete(id: "r2", from: ListIndexPath(0, 2)), .insert(id: "t", to: ListIndexPath(0, 0), element: top),
            ])
        #expect(results.row(id: "r2") == nil)

        let pulled = try Self.step(&results, [.delete(id: "t"), .delete(id: "r0")])
        #expect(pulled.counts.deletes == 2)
        #expect(pulled.counts.inserts == 2)
        #expect(results.rows.map(\.id) == ["r1", "r2", "r3"])
    }

    @Test("a limit cuts sections: a section pushed wholly out of the window is deleted")
    func limitWindowSections() throws {
        var results = try Self.results(order: "category,score", sectionKey: "category", limit: 2)
        _ = results.reset(rows: [Self.row("a", "A", category: 1, score: 0), Self.row("b", "B", category: 2, score: 0)])
        let changes = try Self.step(&results, [.upsert(Self.row("c", "C", category: 0, score: 0))])
        #expect(changes.deletedSections == [1])
        #expect(changes.insertedSections.map(\.index) == [0])
        #expect(results.sections.map(\.key) == [.int(0), .int(1)])
    }

    // MARK: - Narrowing, reset and errors

    @Test("narrowing cached rows locally is another LiveResults fed the same mutations")
    func narrowing() throws {
        var subscription = try Self.results("score < 50", order: "score")
        var narrowed = try Self.results("flag == true", order: "category,title", sectionKey: "category")
        var cache: [String: Row] = [:]
        let initial = (0..<8).map {
            Self.row("r\($0)", "T\(7 - $0)", category: $0 % 3, score: $0 * 10, flag: $0 % 2 == 0)
        }
        _ = subscription.reset(rows: initial)
        for row in subscription.rows { cache[row.id] = row }
        _ = narrowed.reset(rows: Array(cache.values))

        // What the server sends for the subscription: after-images of rows that stay or enter, ids of rows that leave.
        let batch: [RowMutation] = [
            .upsert(Self.row("r1", "T6", category: 1, score: 10, flag: true)),  // enters the narrowed results
            .delete(id: "r2"),  // left the subscription
            .upsert(Self.row("r9", "A", category: 2, score: 5, flag: true)),  // entered the subscription
        ]
        for mutation in batch {
            if case .upsert(let row) = mutation { cache[row.id] = row } else { cache[mutation.id] = nil }
        }
        _ = try Self.step(&subscription, batch)
        let changes = try Self.step(&narrowed, batch)
        #expect(changes.counts.inserts == 2 && changes.counts.deletes == 1)

        var fresh = try Self.results("flag == true", order: "category,title", sectionKey: "category")
        _ = fresh.reset(rows: Array(cache.values))
        #expect(narrowed.snapshot == fresh.snapshot)
    }

    @Test("a resnapshot is a diff from what was shown, not delete-all insert-all")
    func resetDiffs() throws {
        var results = try Self.results(order: "score")
        let rows = (0..<5).map { Self.row("r\($0)", "T", category: 1, score: $0) }
        #expect(results.reset(rows: rows).counts.inserts == 5)
        var again = rows
        again[4] = Self.row("r4", "changed", category: 1, score: 4)
        again.append(Self.row("r5", "T", category: 1, score: 5))
        let changes = results.reset(rows: again)
        #expect(changes.counts.deletes == 0 && changes.counts.inserts == 1 && changes.counts.updates == 1)
    }

    @Test("the section key must be the first sort key, and the limit non-negative")
    func invalidRequests() throws {
        #expect(throws: QueryError.self) { try Self.results(order: "score,category", sectionKey: "category") }
        #expect(throws: QueryError.self) { try Self.results(order: "score", limit: -1) }
        let empty = try Self.results(order: "score", limit: 0)
        #expect(empty.sections == [ResultsSection(key: .string(""), name: "", count: 0)])
    }
}
