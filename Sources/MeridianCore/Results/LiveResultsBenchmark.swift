// MARK: - LiveResultsBenchmark
//
// A runnable measurement for `meridian-bench`, not a test: what applying one remote change costs a results engine of
// n rows, next to what re-running the query and diffing costs (the approach the engine replaces). Pure computation
// on the calling thread; the caller prints the report.

/// Measures ``LiveResults`` on synthetic rows: µs per applied change, alone and in batches, against re-query + diff.
///
/// ```swift
/// for rows in [10_000, 100_000, 1_000_000] {
///     print(LiveResultsBenchmark.run(rows: rows))
/// }
/// ```
package enum LiveResultsBenchmark {
    /// What one run measured.
    package struct Report: Sendable, CustomStringConvertible {
        /// Rows fed to the engine, and how many of them matched the predicate.
        package var rows: Int
        package var matching: Int
        /// Time of the initial `reset(rows:)`, in milliseconds.
        package var resetMilliseconds: Double
        /// Mean cost of one mutation applied as its own batch (one commit per change), in µs.
        package var singleMicroseconds: Double
        /// Mean cost of one mutation applied in batches of 100, in µs.
        package var batchedMicroseconds: Double
        /// Mean cost of re-filtering, re-sorting and diffing the whole result for one change, in µs.
        package var requeryMicroseconds: Double
        /// Bytes the engine's structures hold per matching row, beyond the rows themselves.
        package var bytesPerRow: Double
        /// The rows of one batch of new rows (as many as the data holds, at most 100,000), and its mean cost per row
        /// merged into the tree (what `apply` does with such a batch) and put in row by row, in µs.
        package var bulkRows: Int
        package var bulkMergedMicroseconds: Double
        package var bulkOneByOneMicroseconds: Double

        package var description: String {
            func f(_ x: Double) -> String {
                let scaled = (x * 100).rounded() / 100
                return String(describing: scaled)
            }
            return "LiveResults \(self.rows) rows (\(self.matching) matching): reset \(f(self.resetMilliseconds)) ms, "
                + "apply \(f(self.singleMicroseconds)) µs/change (1 per commit), "
                + "\(f(self.batchedMicroseconds)) µs/change (100 per commit); "
                + "re-query + diff \(f(self.requeryMicroseconds)) µs/change "
                + "(\(f(self.requeryMicroseconds / self.singleMicroseconds))x); "
                + "\(f(self.bytesPerRow)) bytes/row of index; a batch of \(self.bulkRows) new rows into them "
                + "\(f(self.bulkMergedMicroseconds)) µs/row merged, \(f(self.bulkOneByOneMicroseconds)) µs/row one by one"
        }
    }

    /// Runs the measurement.
    ///
    /// Rows have a category (100 values, the section key), a score and a title; 90% match the predicate. The
    /// changes are 60% score updates (which move rows, and make some enter or leave), 20% inserts and 20% deletes.
    ///
    /// - Parameters:
    ///   - rows: The number of rows.
    ///   - changes: The number of changes applied, one per commit and then 100 per commit.
    ///   - requeries: How many re-query + diff rounds to time for the baseline.
    /// - Returns: The report.
    package static func run(rows: Int, changes: Int = 20_000, requeries: Int = 3) -> Report {
        var rng = SplitMix64(seed: 42)
        func makeRow(_ id: Int) -> Row {
            Row(
                id: "row-\(id)",
                values: [
                    "category": .int(Int64(rng.next() % 100)),
                    "score": .int(Int64(rng.next() % 1_000)),
                    "title": .string("title \(rng.next() % 10_000)"),
                ]
            )
        }
        var data = (0..<rows).map(makeRow)
        var nextID = rows

        let predicate = RowPredicate(node: .compare(attribute: "score", op: .less, options: [], value: .int(900)))
        var results: LiveResults
        do {
            results = try LiveResults(
                predicate: predicate,
                order: RowOrder([SortKey("category"), SortKey("score", ascending: false)]),
                sectionKey: "category"
            )
        } catch {
            preconditionFailure("benchmark request: \(error)")
        }
        let clock = ContinuousClock()
        let resetTime = clock.measure { _ = results.reset(rows: data) }
        let bytesPerRow = Double(results.indexBytes) / Double(max(results.matchingCount, 1))

        // Prepare the changes outside the timed regions.
        func makeMutations(_ count: Int) -> [RowMutation] {
            var mutations: [RowMutation] = []
            mutations.reserveCapacity(count)
            for _ in 0..<count {
                let dice = rng.next() % 10
                let index = Int(rng.next() % UInt64(data.count))
                if dice < 6 {
                    data[index]["score"] = .int(Int64(rng.next() % 1_000))
                    mutations.append(.upsert(data[index]))
                } else if dice < 8 {
                    let row = makeRow(nextID)
                    nextID += 1
                    data.append(row)
                    mutations.append(.upsert(row))
                } else {
                    data.swapAt(index, data.count - 1)
                    let row = data.removeLast()
                    mutations.append(.delete(id: row.id))
                }
            }
            return mutations
        }
        let single = makeMutations(changes)
        let singleTime = clock.measure {
            for mutation in single { _ = results.apply([mutation]) }
        }
        let batched = makeMutations(changes)
        let batchedTime = clock.measure {
            var start = 0
            while start < batched.count {
                let end = min(start + 100, batched.count)
                _ = results.apply(Array(batched[start..<end]))
                start = end
            }
        }

        // Baseline: what a controller without an index does per commit.
        var shown = results.snapshot
        var requeryTime = Duration.zero
        for _ in 0..<requeries {
            _ = makeMutations(1)
            requeryTime += clock.measure {
                // The fastest honest re-query: filter, then sort on extracted key values.
                let keys = results.sortKeys
                let matching = data.filter { predicate.evaluate($0) }
                    .map { row in (keys: keys.map { row[$0.attribute] }, row: row) }
                    .sorted { a, b in
                        for i in keys.indices {
                            let c = Value.compare(a.keys[i], b.keys[i])
                            if c != 0 { return keys[i].ascending ? c < 0 : c > 0 }
                        }
                        return false
                    }
                    .map(\.row)
                var sections: [ListSection<Row>] = []
                for row in matching {
                    let key = row["category"]
                    if let last = sections.last, Value.compare(last.key, key) == 0 {
                        sections[sections.count - 1].elements.append(row)
                    } else {
                        sections.append(ListSection(key: key, name: key.displayText, elements: [row]))
                    }
                }
                let fresh = SectionedList(sections: sections)
                _ = try? ChangeSet.between(old: shown, new: fresh)
                shown = fresh
            }
        }

        // A bulk write into results that show data: as many new rows as the data holds (at most 100,000: one by one,
        // a million would take a minute), in one batch, merged and one by one (each on its own copy of the results).
        let bulk = (0..<min(data.count, 100_000)).map { i in RowMutation.upsert(makeRow(nextID + i)) }
        var mergedCopy = results
        var oneByOneCopy = results
        let mergedTime = clock.measure { _ = mergedCopy.apply(bulk) }
        let oneByOneTime = clock.measure { _ = oneByOneCopy.applyOneByOne(bulk) }
        precondition(mergedCopy.matchingCount == oneByOneCopy.matchingCount, "the two bulk paths disagree")

        func microseconds(_ d: Duration, _ n: Int) -> Double {
            let (seconds, attoseconds) = d.components
            return (Double(seconds) * 1e6 + Double(attoseconds) / 1e12) / Double(max(n, 1))
        }
        return Report(
            rows: rows,
            matching: results.matchingCount,
            resetMilliseconds: microseconds(resetTime, 1) / 1_000,
            singleMicroseconds: microseconds(singleTime, single.count),
            batchedMicroseconds: microseconds(batchedTime, batched.count),
            requeryMicroseconds: microseconds(requeryTime, requeries),
            bytesPerRow: bytesPerRow,
            bulkRows: bulk.count,
            bulkMergedMicroseconds: microseconds(mergedTime, bulk.count),
            bulkOneByOneMicroseconds: microseconds(oneByOneTime, bulk.count)
        )
    }
}
