import Testing

@testable import MeridianCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - Randomized batches against a from-scratch query

extension LiveResultsTests {

    /// Random `Item` rows and batches of mutations over a small pool of ids, so ids collide often.
    struct Generator {
        var rng: SplitMix64
        let ids: [String]

        init(seed: UInt64, idCount: Int) {
            self.rng = SplitMix64(seed: seed)
            self.ids = (0..<idCount).map { "r\($0)" }
        }

        mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self.rng) }
        mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self.rng) < p }

        mutating func category() -> Value { self.chance(0.15) ? .null : .int(Int64(self.int(0...4))) }
        mutating func flag() -> Value { self.chance(0.2) ? .null : .bool(self.chance(0.5)) }
        mutating func title() -> Value { .string(["", "a", "B", "b", "é", "zz"][self.int(0...5)]) }
        mutating func score() -> Value { .int(Int64(self.int(0...40))) }

        mutating func freshRow(id: String) -> Row {
            Row(
                id: id,
                values: [
                    "title": self.title(), "category": self.category(), "score": self.score(), "flag": self.flag(),
                ]
            )
        }

        /// One attribute of `row` changed at random (sometimes to the same value).
        mutating func tweak(_ row: Row) -> Row {
            var row = row
            switch self.int(0...3) {
            case 0: row["title"] = self.title()
            case 1: row["category"] = self.category()
            case 2: row["score"] = self.score()
            default: row["flag"] = self.flag()
            }
            return row
        }

        /// A batch of 1 to 12 mutations over `data`: inserts, updates (tweaks and rewrites), deletes, no-op updates
        /// and repeated ids.
        mutating func batch(over data: [String: Row]) -> [RowMutation] {
            var batch: [RowMutation] = []
            var view = data
            for _ in 0..<self.int(self.chance(0.1) ? 8...24 : 1...5) {
                let id = self.ids[self.int(0...self.ids.count - 1)]
                let mutation: RowMutation
                if let existing = view[id] {
                    switch self.int(0...9) {
                    case 0...4: mutation = .upsert(self.tweak(existing))
                    case 5: mutation = .upsert(self.freshRow(id: id))
                    case 6: mutation = .upsert(existing)  // no-op
                    default: mutation = .delete(id: id)
                    }
                } else {
                    mutation = self.chance(0.9) ? .upsert(self.freshRow(id: id)) : .delete(id: id)
                }
                if case .upsert(let row) = mutation { view[id] = row } else { view[id] = nil }
                batch.append(mutation)
                if self.chance(0.1) { batch.append(mutation) }  // the same mutation twice
            }
            return batch
        }
    }

    /// What the results must show: the data filtered, sorted, cut to the limit and sectioned, from scratch.
    static func expected(_ data: [String: Row], like results: LiveResults) -> SectionedList<Row> {
        let rows = data.values.filter { results.predicate.evaluate($0) }
            .sorted { results.order.compare($0, $1) < 0 }
            .prefix(results.limit ?? Int.max)
        guard let sectionKey = results.sectionKey else { return SectionedList(unsectioned: Array(rows)) }
        var sections: [ListSection<Row>] = []
        for row in rows {
            let key = row[sectionKey]
            if let last = sections.last, Value.compare(last.key, key) == 0 {
                sections[sections.count - 1].elements.append(row)
            } else {
                sections.append(ListSection(key: key, name: key.displayText, elements: [row]))
            }
        }
        return SectionedList(sections: sections)
    }

    /// A results configuration for the randomized test.
    struct Configuration: Sendable, CustomStringConvertible {
        var predicate: String
        var order: String
        var sectionKey: String?
        var limit: Int?
        var description: String {
            let limit = self.limit.map(String.init) ?? "-"
            return "\(self.predicate) by \(self.order) section \(self.sectionKey ?? "-") limit \(limit)"
        }

        /// Empty results of this configuration.
        func results() throws -> LiveResults {
            try LiveResultsTests.results(
                self.predicate, order: self.order, sectionKey: self.sectionKey, limit: self.limit)
        }
    }

    static let configurations: [Configuration] = [
        Configuration(predicate: "score < 30 OR flag == true", order: "score,-title", sectionKey: nil, limit: nil),
        Configuration(predicate: "flag != false", order: "category,-score", sectionKey: "category", limit: nil),
        Configuration(predicate: "score >= 5", order: "-category,title", sectionKey: "category", limit: 12),
        Configuration(
            predicate: "title BEGINSWITH[cd] \"b\" OR score > 10", order: "-score", sectionKey: nil, limit: 7),
        // Ordered by id alone, both ways (a reset sorts these by the ids directly).
        Configuration(predicate: "score < 30 OR flag == true", order: "", sectionKey: nil, limit: nil),
        Configuration(predicate: "flag != false", order: "-id", sectionKey: nil, limit: 9),
    ]

    @Test(
        "random batches: results equal a from-scratch query, and each change set validates and applies",
        arguments: 0..<6)
    func randomBatches(configurationIndex: Int) throws {
        let configuration = Self.configurations[configurationIndex]
        let seed = SplitMix64.seedFromEnvironment() &+ UInt64(configurationIndex)
        var generator = Generator(seed: seed, idCount: 45)
        var results = try configuration.results()
        var data: [String: Row] = [:]
        var shown = results.snapshot
        let context = "MERIDIAN_SEED=\(seed &- UInt64(configurationIndex)) configuration \(configuration)"
        // What the run exercised, so a generator that drifts into triviality fails the test.
        var seen = (deletes: 0, inserts: 0, moves: 0, updates: 0, sectionInserts: 0, sectionDeletes: 0)

        for index in 0..<10_000 {
            // Occasionally a fresh snapshot, as after a reconnect.
            if index % 1_000 == 999 {
                data = [:]
                for id in generator.ids where generator.chance(0.6) { data[id] = generator.freshRow(id: id) }
                let changes = results.reset(rows: Array(data.values))
                let after = results.snapshot
                try #require(after == Self.expected(data, like: results), "\(context) reset \(index)")
                try changes.validate(old: shown, new: after)
                shown = after
                continue
            }
            let batch = generator.batch(over: data)
            for mutation in batch {
                if case .upsert(let row) = mutation { data[row.id] = row } else { data[mutation.id] = nil }
            }
            let changes = results.apply(batch)
            let after = results.snapshot
            let expected = Self.expected(data, like: results)
            guard after == expected else {
                Issue.record(
                    "\(context) batch \(index): results differ\nbatch: \(batch)\ngot: \(after)\nwant: \(expected)")
                return
            }
            do {
                try changes.validate(oldSectionCounts: shown.sectionCounts, newSectionCounts: after.sectionCounts)
                let applied = try shown.applying(changes)
                guard applied == after else {
                    Issue.record("\(context) batch \(index): applying gives\n\(applied)\nnot\n\(after)\n\(changes)")
                    return
                }
            } catch {
                Issue.record("\(context) batch \(index): \(error)\nbatch: \(batch)\nchanges: \(changes)\nold: \(shown)")
                return
            }
            let counts = changes.counts
            seen.deletes += counts.deletes
            seen.inserts += counts.inserts
            seen.moves += counts.moves
            seen.updates += counts.updates
            seen.sectionInserts += changes.insertedSections.count
            seen.sectionDeletes += changes.deletedSections.count
            try Self.checkMinimality(changes, old: shown, batch: batch, context: "\(context) batch \(index)")
            try Self.checkReads(
                results, expected: expected, generator: &generator, context: "\(context) batch \(index)")
            shown = after
        }
        // Ordered by id alone, a row never moves: its id does not change.
        let rowsCanMove = !["", "id", "-id"].contains(configuration.order)
        #expect(
            seen.deletes > 100 && seen.inserts > 100 && (seen.moves > 100 || !rowsCanMove) && seen.updates > 100,
            "\(seen)")
        if !rowsCanMove { #expect(seen.moves == 0, "\(seen)") }
        if configuration.sectionKey != nil {
            #expect(seen.sectionInserts > 10 && seen.sectionDeletes > 10, "\(seen)")
        }
        print("LiveResults random \(configuration): \(seen)")
    }

    @Test("a batch into results that matched nothing gives what inserting its rows one by one gives", arguments: 0..<6)
    func firstLoadBatches(configurationIndex: Int) throws {
        let configuration = Self.configurations[configurationIndex]
        let seed = SplitMix64.seedFromEnvironment() &+ UInt64(configurationIndex)
        var generator = Generator(seed: seed, idCount: 45)
        var shortcuts = 0
        for index in 0..<500 {
            var results = try configuration.results()
            // Sometimes rows that all fail the predicate first: the results still match nothing.
            if index % 5 == 0 { _ = results.apply(generator.batch(over: [:])) }
            let before = results.snapshot
            var oneByOne = results
            let batch = (0..<generator.int(1...4)).flatMap { _ in generator.batch(over: [:]) }
            if results.matchingCount == 0 { shortcuts += 1 }
            let changes = results.apply(batch)
            let expected = oneByOne.applyOneByOne(batch)
            let context = "MERIDIAN_SEED=\(seed &- UInt64(configurationIndex)) \(configuration) case \(index)"
            try #require(results.snapshot == oneByOne.snapshot, "\(context): results differ")
            try #require(changes == expected, "\(context): \(changes)\nnot\n\(expected)\nbatch: \(batch)")
            try changes.validate(old: before, new: results.snapshot)
        }
        #expect(shortcuts > 300)
    }

    @Test("a batch merged into the tree gives what putting its rows in one by one gives", arguments: 0..<6)
    func mergedBatches(configurationIndex: Int) throws {
        let configuration = Self.configurations[configurationIndex]
        let seed = SplitMix64.seedFromEnvironment() &+ UInt64(configurationIndex)
        var generator = Generator(seed: seed, idCount: 60)
        var merged = try configuration.results()
        var oneByOne = merged
        var data: [String: Row] = [:]
        var seen = (changes: 0, moves: 0, emptied: 0)
        for index in 0..<600 {
            // Batches of one to a few dozen mutations over 60 ids: small against the results and large, at times
            // every row leaving or the results empty before.
            var batch = (0..<generator.int(1...6)).flatMap { _ in generator.batch(over: data) }
            if generator.chance(0.03) { batch = data.keys.map { .delete(id: $0) } }
            for mutation in batch {
                if case .upsert(let row) = mutation { data[row.id] = row } else { data[mutation.id] = nil }
            }
            let before = merged.snapshot
            let changes = merged.applyMerging(batch)
            let expected = oneByOne.applyOneByOne(batch)
            let context = "MERIDIAN_SEED=\(seed &- UInt64(configurationIndex)) \(configuration) case \(index)"
            try #require(merged.snapshot == oneByOne.snapshot, "\(context): results differ")
            try #require(merged.snapshot == Self.expected(data, like: merged), "\(context): not the query's results")
            try #require(changes == expected, "\(context): \(changes)\nnot\n\(expected)\nbatch: \(batch)")
            try changes.validate(old: before, new: merged.snapshot)
            // The rebuilt id index and section counts answer as the one-by-one results' do.
            for id in generator.ids {
                try #require(merged.indexPath(for: id) == oneByOne.indexPath(for: id), "\(context): path of \(id)")
                try #require(merged.row(id: id) == oneByOne.row(id: id), "\(context): row \(id)")
            }
            try #require(merged.sections == oneByOne.sections, "\(context): sections differ")
            seen.changes += changes.rowChanges.count
            seen.moves += changes.counts.moves
            if merged.matchingCount == 0 { seen.emptied += 1 }
        }
        #expect(seen.changes > 1_000 && seen.emptied > 5, "\(seen)")
        // Moves are rarer in a window of 7 or 12 rows than in all of them.
        if !["", "id", "-id"].contains(configuration.order) { #expect(seen.moves > 10, "\(seen)") }
        print("LiveResults merged \(configuration): \(seen)")
    }

    @Test("a batch large against its results is merged, a small one put in row by row")
    func mergeThreshold() {
        #expect(LiveResults.mergesBatch(touching: 20_000, of: 20_000))
        #expect(LiveResults.mergesBatch(touching: 256, of: 1_000))
        #expect(!LiveResults.mergesBatch(touching: 255, of: 255))
        // The break-even points measured: about n/8 of 9,000 rows, n/20 of 90,000, n/25 of 900,000.
        #expect(LiveResults.mergesBatch(touching: 9_000 / 6, of: 9_000))
        #expect(!LiveResults.mergesBatch(touching: 9_000 / 16, of: 9_000))
        #expect(LiveResults.mergesBatch(touching: 90_000 / 12, of: 90_000))
        #expect(!LiveResults.mergesBatch(touching: 90_000 / 32, of: 90_000))
        #expect(LiveResults.mergesBatch(touching: 900_000 / 16, of: 900_000))
        #expect(!LiveResults.mergesBatch(touching: 900_000 / 32, of: 900_000))
    }

    @Test(
        "replacing every row without a change set leaves what a reset leaves, and changed means a change set",
        arguments: 0..<6)
    func replaceWithoutChangeSet(configurationIndex: Int) throws {
        let configuration = Self.configurations[configurationIndex]
        let seed = SplitMix64.seedFromEnvironment() &+ UInt64(configurationIndex)
        var generator = Generator(seed: seed, idCount: 30)
        var results = try configuration.results()
        var data: [String: Row] = [:]
        var seen = (changed: 0, unchanged: 0)
        for index in 0..<600 {
            // The next rows: the same ones (often), some tweaked (sometimes to the same value), some gone or new, or
            // none at all.
            var next = data
            switch generator.int(0...5) {
            case 0: break
            case 1: next = [:]
            default:
                for _ in 0..<generator.int(1...6) {
                    let id = generator.ids[generator.int(0...generator.ids.count - 1)]
                    switch generator.int(0...2) {
                    case 0: next[id] = nil
                    case 1: next[id] = generator.freshRow(id: id)
                    default: next[id] = next[id].map { generator.tweak($0) } ?? generator.freshRow(id: id)
                    }
                }
            }
            let rows = Array(next.values).shuffled(using: &generator.rng)
            var reset = results
            let changes = reset.reset(uniqueRows: rows)
            let changed = results.replace(uniqueRows: rows)
            let context = "MERIDIAN_SEED=\(seed &- UInt64(configurationIndex)) \(configuration) case \(index)"
            try #require(results.snapshot == reset.snapshot, "\(context): results differ")
            try #require(results.sections == reset.sections, "\(context): sections differ")
            try #require(changed == !changes.isEmpty, "\(context): changed \(changed), change set \(changes)")
            if changed { seen.changed += 1 } else { seen.unchanged += 1 }
            data = next
        }
        #expect(seen.changed > 100)
        #expect(seen.unchanged > 100)
    }

    @Test(
        "a large fill, its tree and id index built at once, reads and changes as rows put in one by one",
        arguments: 0..<6)
    func largeFill(configurationIndex: Int) throws {
        let configuration = Self.configurations[configurationIndex]
        let seed = SplitMix64.seedFromEnvironment() &+ UInt64(configurationIndex)
        var generator = Generator(seed: seed, idCount: LiveResults.concurrentFillRows + 1_500)
        let empty = try configuration.results()
        let rows = generator.ids.map { generator.freshRow(id: $0) }.shuffled(using: &generator.rng)
        var filled = empty
        _ = filled.replace(uniqueRows: rows)
        var oneByOne = empty
        _ = oneByOne.applyOneByOne(rows.map { .upsert($0) })
        let context = "MERIDIAN_SEED=\(seed &- UInt64(configurationIndex)) \(configuration)"
        try #require(filled.snapshot == oneByOne.snapshot, "\(context): results differ")
        try #require(filled.sections == oneByOne.sections, "\(context): sections differ")
        // Every id is found through the index, where the one-by-one results find it.
        for id in generator.ids {
            try #require(filled.row(id: id) == oneByOne.row(id: id), "\(context): row \(id)")
            try #require(filled.indexPath(for: id) == oneByOne.indexPath(for: id), "\(context): path of \(id)")
        }
        // Changes after the fill find their rows through the index.
        for round in 0..<5 {
            var batch: [RowMutation] = []
            for _ in 0..<200 {
                let id = generator.ids[generator.int(0...generator.ids.count - 1)]
                batch.append(generator.chance(0.3) ? .delete(id: id) : .upsert(generator.freshRow(id: id)))
            }
            try #require(filled.apply(batch) == oneByOne.apply(batch), "\(context): round \(round) change sets")
            try #require(filled.snapshot == oneByOne.snapshot, "\(context): round \(round) results")
        }
    }

    /// Only rows the batch changed move or update; a batch of no-ops changes nothing.
    static func checkMinimality(
        _ changes: ChangeSet<Row>,
        old: SectionedList<Row>,
        batch: [RowMutation],
        context: String
    ) throws {
        let touched = Set(batch.map(\.id))
        for change in changes.rowChanges {
            switch change {
            case .move(let id, let from, _, let element, _), .update(let id, let from, _, let element, _):
                try #require(touched.contains(id), "\(context): untouched row \(id) reported as \(change)")
                try #require(old[from] != element || !change.changed.isEmpty, "\(context): unchanged \(change)")
            case .delete, .insert:
                break
            }
        }
    }

    /// `count`, `sections`, `indexPath(for:)`, `object(at:)` and `row(id:)` agree with the expected list.
    static func checkReads(
        _ results: LiveResults,
        expected: SectionedList<Row>,
        generator: inout Generator,
        context: String
    ) throws {
        try #require(results.count == expected.count, "\(context): count")
        try #require(results.sections.map(\.count) == expected.sectionCounts, "\(context): section counts")
        var paths: [String: ListIndexPath] = [:]
        for (s, section) in expected.sections.enumerated() {
            for (r, row) in section.elements.enumerated() { paths[row.id] = ListIndexPath(s, r) }
        }
        for _ in 0..<3 {
            let id = generator.ids[generator.int(0...generator.ids.count - 1)]
            try #require(results.indexPath(for: id) == paths[id], "\(context): indexPath(for: \(id))")
            if let path = paths[id] {
                try #require(results.object(at: path).id == id, "\(context): object(at: \(path))")
                try #require(results.row(id: id) == expected[path], "\(context): row(id: \(id))")
            } else {
                try #require(results.row(id: id) == nil, "\(context): row(id: \(id)) beyond the results")
            }
        }
    }
}
