import Dispatch
import Foundation
import MeridianCore
import MeridianStore
import Testing

/// A predicate in the predicate language and the same predicate in Swift, with SQLite's semantics (null compares
/// false).
struct TestPredicate: Sendable {
    var text: String?
    var variables: [String: PredicateVariable] = [:]
    var matches: @Sendable (Row) -> Bool

    /// The predicate bound to `Item`, as the store reads it; `nil` for every row.
    var predicate: RowPredicate? {
        self.text.map {
            try! PredicateExpression.parse($0).bind(
                to: Fixtures.schema().entity(named: "Item")!, variables: self.variables)
        }
    }

    static func random(_ g: inout SplitMix64) -> TestPredicate {
        let n = Int64.random(in: 0...100, using: &g)
        let x = Double.random(in: 0...100, using: &g)
        let letter = ["a", "b", "c", "d"].randomElement(using: &g)!
        switch Int.random(in: 0..<7, using: &g) {
        case 0: return TestPredicate(text: nil) { _ in true }
        case 1: return TestPredicate(text: "qty > $n", variables: ["n": .value(.int(n))]) { $0["qty"] > .int(n) }
        case 2:
            return TestPredicate(text: "price < $x", variables: ["x": .value(.double(x))]) {
                !$0["price"].isNull && $0["price"] < .double(x)
            }
        case 3:
            return TestPredicate(
                text: "title >= $low AND title < $high",
                variables: ["low": .value(.string(letter)), "high": .value(.string(letter + "z"))]
            ) {
                guard let t = $0["title"].stringValue else { return false }
                return t.utf8Compare(letter) >= 0 && t.utf8Compare(letter + "z") < 0
            }
        case 4: return TestPredicate(text: "active == true") { $0["active"] == .bool(true) }
        case 5: return TestPredicate(text: "note == nil") { $0["note"].isNull }
        default:
            return TestPredicate(text: "qty <= $n OR note != nil", variables: ["n": .value(.int(n))]) {
                $0["qty"] <= .int(n) || !$0["note"].isNull
            }
        }
    }
}

/// A sort as the store reads it and the same order in Swift (nulls first ascending, last descending; id last).
struct TestSort: Sendable {
    var keys: [(String, Bool)]
    var order: RowOrder? {
        self.keys.isEmpty ? nil : RowOrder(self.keys.map { SortKey($0.0, ascending: !$0.1) })
    }

    func inOrder(_ a: Row, _ b: Row) -> Bool {
        for (key, descending) in self.keys {
            let c = Value.compare(a[key], b[key])
            if c != 0 { return descending ? c > 0 : c < 0 }
        }
        return a.id.utf8Compare(b.id) < 0
    }

    static func random(_ g: inout SplitMix64) -> TestSort {
        let all = [("price", true), ("title", false), ("qty", false), ("active", true), ("note", false)]
        return TestSort(keys: Array(all.shuffled(using: &g).prefix(Int.random(in: 0...2, using: &g))))
    }
}

/// A snapshot taken while writers ran, with the full-table snapshot taken right after it.
struct Taken: Sendable {
    var predicate: TestPredicate
    var sort: TestSort
    var snapshot: Snapshot
    var full: Snapshot
}

@Suite struct SnapshotTests {
    static func randomValues(_ g: inout SplitMix64) -> [String: Value] {
        var values: [String: Value] = [
            "title": .string(
                ["a", "b", "c", "d"].randomElement(using: &g)! + String(Int.random(in: 0..<50, using: &g))),
            "qty": .int(Int64.random(in: 0...100, using: &g)),
        ]
        if Bool.random(using: &g) { values["price"] = .double(Double.random(in: 0...100, using: &g)) }
        if Bool.random(using: &g) { values["active"] = .bool(Bool.random(using: &g)) }
        if Int.random(in: 0..<3, using: &g) == 0 { values["note"] = .string("n\(Int.random(in: 0..<5, using: &g))") }
        return values
    }

    @Test(
        "a snapshot at S plus the changes after S equals the final state, for random predicates and sorts",
        .timeLimit(.minutes(5)), arguments: StoreVariant.allCases)
    func snapshotPlusChanges(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            var g = SplitMix64(seed: 42)
            try await store.apply((0..<150).map { .insert("Item", id: "seed\($0)", Self.randomValues(&g)) })
            let snapshots = try await withThrowingTaskGroup(of: [Taken].self) { group in
                for writer in 0..<4 {
                    group.addTask {
                        var g = SplitMix64(seed: UInt64(writer) + 100)
                        for t in 0..<60 {
                            var operations: [WriteOperation] = []
                            for o in 0..<Int.random(in: 1...4, using: &g) {
                                let target = "seed\(Int.random(in: 0..<150, using: &g))"
                                switch Int.random(in: 0..<4, using: &g) {
                                case 0:
                                    operations.append(
                                        .insert("Item", id: "w\(writer)-\(t)-\(o)", Self.randomValues(&g)))
                                case 1: operations.append(.delete("Item", id: target))
                                default: operations.append(.upsert("Item", id: target, Self.randomValues(&g)))
                                }
                            }
                            _ = try? await store.apply(operations)
                        }
                        return []
                    }
                }
                group.addTask {
                    var g = SplitMix64(seed: 7)
                    var taken: [Taken] = []
                    for _ in 0..<25 {
                        let predicate = TestPredicate.random(&g)
                        let sort = TestSort.random(&g)
                        let snapshot = try await store.snapshot(
                            entity: "Item", where: predicate.predicate, orderBy: sort.order)
                        let full = try await store.snapshot(entity: "Item")
                        taken.append(Taken(predicate: predicate, sort: sort, snapshot: snapshot, full: full))
                    }
                    return taken
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            let log = try await allChanges(store).changes
            #expect(log.map(\.seq) == Array(1...Int64(log.count)))
            #expect(snapshots.count == 25)
            for taken in snapshots {
                let (predicate, sort, snapshot, full) = (taken.predicate, taken.sort, taken.snapshot, taken.full)
                // The snapshot is in order.
                #expect(zip(snapshot.rows, snapshot.rows.dropFirst()).allSatisfy { sort.inOrder($0, $1) })
                // The full snapshot at S is exactly the log replayed up to S.
                var replayed: [String: Row] = [:]
                for change in log where change.seq <= full.seq { replayed[change.id] = change.after }
                #expect(Dictionary(uniqueKeysWithValues: full.rows.map { ($0.id, $0) }) == replayed)
                // Snapshot at S + changes after S == the final query result, in order.
                var state = Dictionary(uniqueKeysWithValues: snapshot.rows.map { ($0.id, $0) })
                let batch = try await allChanges(store, after: snapshot.seq)
                for change in batch.changes {
                    if let after = change.after, predicate.matches(after) {
                        state[change.id] = after
                    } else {
                        state[change.id] = nil
                    }
                }
                let final = try await store.snapshot(entity: "Item", where: predicate.predicate, orderBy: sort.order)
                #expect(final.seq == batch.throughSeq)
                #expect(
                    final.rows == state.values.sorted(by: sort.inOrder),
                    "predicate \(predicate.text ?? "all") sort \(String(describing: sort.order))")
            }
        }
    }

    @Test("a limit returns the first rows of the order; the seq is the latest commit", arguments: StoreVariant.allCases)
    func limit(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            var g = SplitMix64(seed: 1)
            try await store.apply((0..<40).map { .insert("Item", id: "r\($0)", Self.randomValues(&g)) })
            let sort = TestSort(keys: [("qty", true)])
            let all = try await store.snapshot(entity: "Item", orderBy: sort.order)
            let first = try await store.snapshot(entity: "Item", orderBy: sort.order, limit: 7)
            #expect(first.rows == Array(all.rows.prefix(7)))
            #expect(first.seq == 40 && first.versions == Array(repeating: 1, count: 7))
        }
    }

    @Test(
        "a snapshot read past readTimeout is stopped with timedOut; the change log is not limited",
        arguments: StoreVariant.allCases)
    func readTimeout(variant: StoreVariant) async throws {
        var configuration = Store.Configuration()
        configuration.readTimeout = .milliseconds(1)
        try await withStore(variant, configuration: configuration) { store in
            try await store.apply((0..<20_000).map { .insert("Item", id: "r\($0)", ["title": .string("t\($0)")]) })
            let stopped = await #expect(throws: StoreError.self) { try await store.snapshot(entity: "Item") }
            #expect(stopped?.code == .timedOut)
            #expect(stopped?.message == "the read of Item ran longer than 1 ms, and was stopped")
            guard case .changes(let batch) = try await store.changes(after: 0) else {
                Issue.record("the log was pruned")
                return
            }
            #expect(batch.changes.count == 20_000)
        }
        try await withStore(variant) { store in
            try await store.apply((0..<20_000).map { .insert("Item", id: "r\($0)", ["title": .string("t\($0)")]) })
            #expect(try await store.snapshot(entity: "Item").rows.count == 20_000)
        }
    }

    @Test("an unknown entity, or a predicate or order of another entity's attributes, is a schemaMismatch error")
    func badQueries() async throws {
        try await withStore(.inMemory) { store in
            let unknown = await #expect(throws: StoreError.self) { try await store.snapshot(entity: "Nope") }
            #expect(unknown?.code == .schemaMismatch)
            // Bound to another entity than the one read: the store's SQL names a column `Item` lacks.
            let other = EntitySchema(name: "Other", attributes: [Attribute(name: "colour", type: .int)])
            let colour = try PredicateExpression.parse("colour == 1").bind(to: other)
            let badColumn = await #expect(throws: StoreError.self) {
                try await store.snapshot(entity: "Item", where: colour)
            }
            #expect(badColumn?.code == .schemaMismatch)
            let badOrder = await #expect(throws: StoreError.self) {
                try await store.snapshot(entity: "Item", orderBy: RowOrder(parsing: "colour").checked(against: other))
            }
            #expect(badOrder?.code == .schemaMismatch)
        }
    }
}

/// A snapshot read hands its rows to a reader inside its transaction, which may block; the store's readers are
/// bounded, and a read waits for one at most the read timeout.
@Suite("Streamed snapshot reads", .timeLimit(.minutes(2)))
struct StreamedSnapshotReadTests {
    @Test("rows come one by one at one seq; a reader may stop the read; every reader busy: a read waits, then fails")
    func streamAndGate() async throws {
        var configuration = Store.Configuration()
        configuration.maximumReaderCount = 1
        configuration.readTimeout = .milliseconds(300)
        try await withStore(.file, configuration: configuration) { store in
            let first = try await store.apply((0..<50).map { .insert("Item", ["title": .string("t\($0)")]) }).seq
            let seen = Counter()
            let seq = try await store.streamSnapshot(entity: "Item", orderBy: RowOrder([SortKey("title")])) {
                _, event in
                if case .row = event { seen.add() }
                return seen.value < 10
            }
            #expect(seq == first)
            #expect(seen.value == 10)
            // The one reader is held by a read whose reader waits (as for a client that does not read): another
            // read waits for it, and gives up after the read timeout without taking a thread.
            let release = DispatchSemaphore(value: 0)
            let holding = Task {
                try await store.streamSnapshot(entity: "Item") { _, _ in
                    release.wait()
                    return false
                }
            }
            try await Task.sleep(for: .milliseconds(100))
            do {
                _ = try await store.latestSeq()
                Issue.record("a read ran while the only reader was held")
            } catch let error as StoreError {
                #expect(error.code == .timedOut)
                #expect(error.message.contains("every one of the store's 1 readers stayed busy for 300 ms"))
            }
            release.signal()
            _ = try await holding.value
            #expect(try await store.latestSeq() == first)
        }
    }
}

/// The read's time limit counts SQLite's work: a reader's waits for its consumer are left out when it says so.
@Suite("Streamed reads' time limit", .timeLimit(.minutes(2)))
struct StreamedReadTimeLimitTests {
    /// Reads 3,000 rows with a 1 s limit, the reader sleeping 300 ms at four rows (1.2 s in all), marking its sleeps
    /// as waits or not; the rows it saw, or the error. (The limit leaves SQLite's own work most of a second: with
    /// 300 ms, that work alone passed it now and then while the whole suite loaded both cores.)
    static func read(columns: Bool, markWaits: Bool) async throws -> Result<Int, StoreError> {
        var configuration = Store.Configuration()
        configuration.readTimeout = .seconds(1)
        return try await withStore(.file, configuration: configuration) { store in
            try await store.apply((0..<3_000).map { .insert("Item", ["title": .string("t\($0)")]) })
            let seen = Counter()
            @Sendable func sleepAtSome() {
                seen.add()
                if seen.value % 700 == 0 { Thread.sleep(forTimeInterval: 0.3) }
            }
            do {
                if columns {
                    _ = try await store.streamSnapshotColumns(entity: "Item") { _, row in
                        guard let row else { return true }
                        if markWaits { row.pausingTimeLimit(sleepAtSome) } else { sleepAtSome() }
                        return true
                    }
                } else {
                    _ = try await store.streamSnapshot(entity: "Item", readerWaits: markWaits) { _, event in
                        if case .row = event { sleepAtSome() }
                        return true
                    }
                }
                return .success(seen.value)
            } catch let error as StoreError {
                return .failure(error)
            }
        }
    }

    @Test(
        "a reader's marked waits are left out of the read's time limit; unmarked, they count and stop the read",
        arguments: [false, true])
    func waitsLeftOut(columns: Bool) async throws {
        guard case .success(let seen) = try await Self.read(columns: columns, markWaits: true) else {
            Issue.record("a reader's marked waits must not stop the read")
            return
        }
        #expect(seen == 3_000)
        guard case .failure(let error) = try await Self.read(columns: columns, markWaits: false) else {
            Issue.record("1.2 s of a reader's sleeps counted against a 1 s limit must stop the read")
            return
        }
        #expect(error.code == .timedOut)
    }
}

/// A count shared with a reader closure.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { self.lock.withLock { self.count } }
    func add() { self.lock.withLock { self.count += 1 } }
}
