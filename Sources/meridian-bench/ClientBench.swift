// MARK: - Client benchmark
//
// `meridian-bench client [--rows 10000,100000,1000000] [--changes N]`
//
// The cost of applying one remote change to a results controller holding n rows, end to end inside the client
// (decode the Batch, update the cache, move the controller by O(log n), deliver the change set), against what a
// Swift developer would otherwise write: GRDB's ValueObservation re-fetching the same query from SQLite after each
// write, then diffing the new result against the previous one (ChangeSet.between, an O(n log n) diff). Both run in
// the same process, on the same rows and the same query. Also reports the client's memory per cached row (resident
// bytes after loading the snapshot minus before, divided by the rows: the cache's row, its subscription membership
// and the controller's engine; the transient snapshot chunk, 10,000 rows, is included, so small sizes overstate).
// Then the list model's share: one moved row applied to a `ListModel` of n rows, in place, against building the list
// after it by copying (`SectionedList.applying`, what the model did before it applied in place).

import Foundation
import GRDB
import MeridianClient
import MeridianCore
import MeridianProto

/// Runs the client benchmark; `arguments` are the words after `client`.
func runClientBenchmark(arguments: [String]) async throws {
    var sizes = [10_000, 100_000, 1_000_000]
    var changes = 2_000
    var i = 0
    while i < arguments.count {
        switch arguments[i] {
        case "--rows" where i + 1 < arguments.count:
            sizes = arguments[i + 1].split(separator: ",").compactMap { Int($0) }
            i += 1
        case "--changes" where i + 1 < arguments.count:
            changes = Int(arguments[i + 1]) ?? changes
            i += 1
        default:
            print("usage: meridian-bench client [--rows 10000,100000,1000000] [--changes N]")
            return
        }
        i += 1
    }
    print("one remote change applied to a results controller of n rows (release build, medians)")
    fflush(nil)
    print(
        "rows       | Meridian client µs/change | GRDB ValueObservation + diff µs/change | speed-up | resident bytes/cached row"
    )
    for rows in sizes {
        let client = try await ClientBenchmark.measureClient(rows: rows, changes: changes)
        let baseline = try await ClientBenchmark.measureObservation(
            rows: rows, changes: max(3, min(200, 2_000_000 / rows)))
        print(
            String(
                format: "%-10d | %25.2f | %38.1f | %7.0fx | %.0f",
                rows, client.microsecondsPerChange, baseline, baseline / client.microsecondsPerChange,
                client.bytesPerRow))
        fflush(nil)  // one line at a time, even into a file
    }
    print("\none moved row applied to a ListModel of n rows: in place (`apply`) against a copying apply (`applying`)")
    print(
        "rows       | ListModel.apply µs/change | SectionedList.applying µs/change | ratio | first load ms, apply / applying"
    )
    for rows in sizes {
        let figures = try ClientBenchmark.measureListModel(rows: rows, changes: max(20, min(400, 4_000_000 / rows)))
        print(
            String(
                format: "%-10d | %25.2f | %32.1f | %.2fx | %.1f / %.1f", rows, figures.inPlace, figures.copying,
                figures.inPlace / figures.copying, figures.firstLoad, figures.firstLoadCopying))
        fflush(nil)
    }
    print("\none moved annotation applied to a MapModel of n annotations, against copying its annotations")
    print("rows       | MapModel.apply µs/change | copy of its annotations µs | ratio")
    for rows in sizes {
        let figures = ClientBenchmark.measureMapModel(rows: rows, changes: max(20, min(400, 4_000_000 / rows)))
        print(
            String(
                format: "%-10d | %24.2f | %26.1f | %.2fx", rows, figures.apply, figures.copy,
                figures.apply / figures.copy))
        fflush(nil)
    }
}

enum ClientBenchmark {
    static let schema: Schema = {
        let yaml = """
            version: 1
            entities:
              Point:
                attributes:
                  title: string
                  category: int
                  latitude: double?
                  longitude: double?
                derived:
                  coordinate: { coordinate: [latitude, longitude] }
            """
        return try! Schema.parse(yaml: yaml)
    }()

    /// The query both sides maintain: most rows match, sorted by title.
    static let predicate = "category < 90"
    static let sort = "title"

    static func row(_ i: Int, version: Int = 0) -> MeridianCore.Row {
        MeridianCore.Row(
            id: "p\(i)",
            values: [
                "title": .string("title \((i &* 7_919 &+ version &* 104_729) % 1_000_003)"),
                "category": .int(Int64(i % 100)),
                "latitude": .double(Double(i % 180) - 90),
                "longitude": .double(Double(i % 360) - 180),
            ])
    }

    /// The resident set size, from /proc/self/statm (Linux).
    static func heapInUse() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// The Meridian side: a context with one controller over a snapshot of `rows` rows, then `changes` Batches of
    /// one updated row each (a title change, so the row moves).
    static func measureClient(rows: Int, changes: Int) async throws -> (
        microsecondsPerChange: Double, bytesPerRow: Double
    ) {
        let heapBefore = Self.heapInUse()
        // A container that is never run: the benchmark plays the connection, feeding decoded messages in order.
        let container = try await MeridianContainer(.init(server: "127.0.0.1:1", schema: Self.schema))
        let context = container.context
        let (_, outbound) = AsyncStream<Meridian_V1_SyncRequest>.makeStream()
        await context.connectionOpened(outbound: outbound)
        let request = try FetchRequest(entity: "Point", where: Self.predicate, sortedBy: Self.sort)
        let controller = try await container.controller(for: request)
        guard let subscriptionID = await context.subscriptionIDs.first else { throw CancellationError() }

        // The snapshot, in chunks of 10,000 rows.
        var start = 0
        var index: UInt32 = 0
        repeat {
            let end = min(rows, start + 10_000)
            var chunk = Meridian_V1_SnapshotChunk()
            chunk.subscriptionID = subscriptionID
            chunk.epoch = 1
            chunk.seq = 1
            chunk.rows = (start..<end).map { Meridian_V1_Row(Self.row($0), version: 1) }
            chunk.chunkIndex = index
            chunk.last = end == rows
            var response = Meridian_V1_SyncResponse()
            response.kind = .snapshotChunk(chunk)
            try await context.receive(response)
            start = end
            index += 1
        } while start < rows
        // A snapshot shows when a Batch names it (the protocol's one rule).
        var ready = Meridian_V1_SubscriptionDelta()
        ready.subscriptionID = subscriptionID
        ready.epoch = 1
        ready.snapshot = true
        var readyBatch = Meridian_V1_SyncResponse()
        readyBatch.batch.seq = 1
        readyBatch.batch.deltas = [ready]
        try await context.receive(readyBatch)
        let heapAfter = Self.heapInUse()
        precondition(controller.count == Self.expectedCount(rows), "the snapshot did not load")

        // Consume the change stream like an app would.
        let stream = controller.changes(includingInitial: false)
        let consumer = Task {
            var seen = 0
            for try await _ in stream { seen += 1 }
            return seen
        }

        var batches: [Meridian_V1_SyncResponse] = []
        batches.reserveCapacity(changes)
        for k in 0..<changes {
            let id = Self.changedID(k, rows: rows)
            var delta = Meridian_V1_SubscriptionDelta()
            delta.subscriptionID = subscriptionID
            delta.epoch = 1
            delta.updated = [
                Meridian_V1_RowUpdate(Self.row(id, version: k + 1), version: Int64(k + 2), changed: ["title"])
            ]
            var batch = Meridian_V1_Batch()
            batch.seq = Int64(k + 2)
            batch.deltas = [delta]
            var response = Meridian_V1_SyncResponse()
            response.kind = .batch(batch)
            batches.append(response)
        }
        var samples: [Double] = []
        samples.reserveCapacity(changes)
        let clock = ContinuousClock()
        for batch in batches {
            let started = clock.now
            try await context.receive(batch)
            samples.append((clock.now - started) / .microseconds(1))
        }
        await controller.close()
        _ = try await consumer.value
        samples.sort()
        withExtendedLifetime(context) {}
        return (samples[samples.count / 2], Double(heapAfter - heapBefore) / Double(rows))
    }

    /// A list model of `rows` rows, then `changes` change sets of one row moved from one random path to another
    /// (a title change moves a row so): the median time of the model's own apply (in place), and of what it did before
    /// it moved rows in place — building the list after the same change set by `applying` (a copy of the section),
    /// then the same count check —, the two alternated on the same states; and the first load, both ways.
    static func measureListModel(rows: Int, changes: Int) throws -> (
        inPlace: Double, copying: Double, firstLoad: Double, firstLoadCopying: Double
    ) {
        let model = ListModel<MeridianCore.Row>(sectioned: false)
        let initial = Self.firstLoad(rows: rows)
        let clock = ContinuousClock()
        let copyingLoadStarted = clock.now
        do {
            let empty = SectionedList<MeridianCore.Row>(unsectioned: [])
            let copy = try empty.applying(initial)
            try initial.validate(oldSectionCounts: empty.sectionCounts, newSectionCounts: copy.sectionCounts)
        }
        let firstLoadCopying = (clock.now - copyingLoadStarted) / .milliseconds(1)
        let loadStarted = clock.now
        try model.apply(initial)
        let firstLoad = (clock.now - loadStarted) / .milliseconds(1)
        var rng = SystemRandomNumberGenerator()
        var inPlace: [Double] = []
        var copying: [Double] = []
        for k in 0..<changes {
            let from = Int.random(in: 0..<rows, using: &rng)
            var to = Int.random(in: 0..<rows - 1, using: &rng)
            if to >= from { to += 1 }
            let moved = model[ListIndexPath(0, from)]
            let element = Self.row(Int(moved.id.dropFirst())!, version: k + 1)
            var changeSet = ChangeSet<MeridianCore.Row>()
            changeSet.rowChanges = [
                .move(
                    id: moved.id, from: ListIndexPath(0, from), to: ListIndexPath(0, to), element: element,
                    changed: ["title"])
            ]
            let copyStarted = clock.now
            do {  // checked as the model checks it, and the list it replaces freed too, as the model's apply did
                let copy = try model.list.applying(changeSet)
                try changeSet.validate(oldSectionCounts: model.list.sectionCounts, newSectionCounts: copy.sectionCounts)
            }
            copying.append((clock.now - copyStarted) / .microseconds(1))
            let started = clock.now
            try model.apply(changeSet)
            inPlace.append((clock.now - started) / .microseconds(1))
        }
        inPlace.sort()
        copying.sort()
        return (inPlace[inPlace.count / 2], copying[copying.count / 2], firstLoad, firstLoadCopying)
    }

    /// Rows 0..<`rows` inserted into an empty unsectioned list: a model's first load.
    static func firstLoad(rows: Int) -> ChangeSet<MeridianCore.Row> {
        var changeSet = ChangeSet<MeridianCore.Row>()
        changeSet.rowChanges = (0..<rows).map { .insert(id: "p\($0)", to: ListIndexPath(0, $0), element: Self.row($0)) }
        return changeSet
    }

    /// A map model of `rows` annotations, then `changes` change sets of one row moved to another coordinate: the
    /// median time of the model's apply, and of copying its annotations (what its apply did first before it wrote
    /// in place: its state was copied, and the copy's table copied at its first write), alternated on the same
    /// states.
    static func measureMapModel(rows: Int, changes: Int) -> (apply: Double, copy: Double) {
        let model = MapModel(MapConfiguration(latitude: "latitude", longitude: "longitude", title: "title"))
        model.apply(Self.firstLoad(rows: rows))
        var rng = SystemRandomNumberGenerator()
        var applied: [Double] = []
        var copied: [Double] = []
        let clock = ContinuousClock()
        for k in 0..<changes {
            let i = Int.random(in: 0..<rows, using: &rng)
            var row = Self.row(i)
            row["latitude"] = .double(Double((i + k + 1) % 180) - 90)
            var changeSet = ChangeSet<MeridianCore.Row>()
            changeSet.rowChanges = [
                .update(
                    id: row.id, from: ListIndexPath(0, i), to: ListIndexPath(0, i), element: row, changed: ["latitude"])
            ]
            let copyStarted = clock.now
            do {
                var copy = model.annotations
                copy[row.id] = nil
            }
            copied.append((clock.now - copyStarted) / .microseconds(1))
            let started = clock.now
            model.apply(changeSet)
            applied.append((clock.now - started) / .microseconds(1))
        }
        applied.sort()
        copied.sort()
        return (applied[applied.count / 2], copied[copied.count / 2])
    }

    /// The row the k-th change updates: spread over the table, always one the query selects (category < 90).
    static func changedID(_ k: Int, rows: Int) -> Int {
        ((k &* 7_919) % max(1, rows / 100)) * 100 + k % 90
    }

    static func expectedCount(_ rows: Int) -> Int {
        (0..<rows).filter { $0 % 100 < 90 }.count
    }

    /// The GRDB side: the same rows in SQLite, a ValueObservation of the same query, one UPDATE per change, and
    /// the time until the re-fetched result has been diffed against the previous one.
    static func measureObservation(rows: Int, changes: Int) async throws -> Double {
        let queue = try DatabaseQueue()
        try await queue.write { db in
            try db.execute(
                sql: "CREATE TABLE point (id TEXT PRIMARY KEY, title TEXT NOT NULL, category INTEGER NOT NULL, "
                    + "latitude REAL, longitude REAL)")
            try db.execute(sql: "CREATE INDEX point_title ON point (title, id)")
            let statement = try db.makeStatement(sql: "INSERT INTO point VALUES (?, ?, ?, ?, ?)")
            for i in 0..<rows {
                let row = Self.row(i)
                try statement.execute(arguments: [
                    row.id, row["title"].stringValue, i % 100, row["latitude"].doubleValue,
                    row["longitude"].doubleValue,
                ])
            }
        }
        // What an app writes: observe the query, decode each fetched row into its model.
        let observation = ValueObservation.tracking { db in
            Self.convert(
                try GRDB.Row.fetchAll(
                    db,
                    sql:
                        "SELECT id, title, category, latitude, longitude FROM point WHERE category < 90 ORDER BY title, id"
                ))
        }
        var iterator = observation.values(in: queue).makeAsyncIterator()
        var previous = SectionedList(unsectioned: try await iterator.next()!)
        var samples: [Double] = []
        let clock = ContinuousClock()
        for k in 0..<changes {
            let id = Self.changedID(k, rows: rows)
            let title = Self.row(id, version: k + 1)["title"].stringValue!
            let started = clock.now
            try await queue.write { db in
                try db.execute(sql: "UPDATE point SET title = ? WHERE id = ?", arguments: [title, "p\(id)"])
            }
            let next = SectionedList(unsectioned: try await iterator.next()!)
            let changeSet = try ChangeSet.between(old: previous, new: next)
            precondition(!changeSet.isEmpty)
            previous = next
            samples.append((clock.now - started) / .microseconds(1))
        }
        samples.sort()
        return samples[samples.count / 2]
    }

    /// GRDB rows as Meridian rows (what an app's record decoding would do).
    static func convert(_ rows: [GRDB.Row]) -> [MeridianCore.Row] {
        rows.map { row in
            let id: String = row["id"]
            let title: String = row["title"]
            let category: Int64 = row["category"]
            let latitude: Double? = row["latitude"]
            let longitude: Double? = row["longitude"]
            var values: [String: Value] = ["title": .string(title), "category": .int(category)]
            if let latitude { values["latitude"] = .double(latitude) }
            if let longitude { values["longitude"] = .double(longitude) }
            return MeridianCore.Row(id: id, values: values)
        }
    }
}
