import GRDB
import MeridianCore
import MeridianStore
import Testing

/// The in-memory evaluator and comparator against SQLite running the compiled WHERE and ORDER BY, on seeded random
/// rows, predicates and sort orders. Replay a failure with `MERIDIAN_SEED=<seed> swift test --filter Differential`.
@Suite struct PredicateDifferentialTests {
    static let entity = EntitySchema(
        name: "Item",
        attributes: [
            Attribute(name: "title", type: .string, isOptional: true),
            Attribute(name: "note", type: .string, isOptional: true),
            Attribute(name: "n", type: .int, isOptional: true),
            Attribute(name: "x", type: .double, isOptional: true),
            Attribute(name: "flag", type: .bool, isOptional: true),
            Attribute(name: "at", type: .timestamp, isOptional: true),
            Attribute(name: "data", type: .bytes, isOptional: true),
        ]
    )

    static let createTable = """
        CREATE TABLE "Item" (
            "id" TEXT PRIMARY KEY NOT NULL, "title" TEXT, "note" TEXT, "n" INTEGER, "x" REAL,
            "flag" INTEGER, "at" INTEGER, "data" BLOB)
        """

    @Test("in-memory filter and order equal SQLite's for 10,000 random cases", .timeLimit(.minutes(5)))
    func differential() throws {
        let seed = SplitMix64.seedFromEnvironment()
        var generator = CaseGenerator(rng: SplitMix64(seed: seed))
        let queue = try DatabaseQueue()
        try queue.inDatabase { db in
            db.registerMeridianFunctions()
            try db.execute(sql: Self.createTable)
        }
        var cases = 0
        var failures = 0
        var selective = 0  // cases where some rows match and some do not
        for batch in 0..<100 {
            let rows = (0..<40).map { generator.row(index: $0) }
            try queue.inDatabase { db in
                try db.execute(sql: #"DELETE FROM "Item""#)
                for row in rows {
                    let names = ["id"] + Self.entity.attributes.map(\.name)
                    let columns = names.map { "\"\($0)\"" }.joined(separator: ", ")
                    let marks = Array(repeating: "?", count: names.count).joined(separator: ", ")
                    try db.execute(
                        sql: #"INSERT INTO "Item" (\#(columns)) VALUES (\#(marks))"#,
                        arguments: statementArguments(names.map { row[$0] })
                    )
                }
            }
            for _ in 0..<100 {
                cases += 1
                let (text, variables) = generator.predicateText()
                let order = generator.sortOrder()
                let predicate: MeridianCore.RowPredicate
                do {
                    predicate = try PredicateExpression.parse(text).bind(to: Self.entity, variables: variables)
                } catch {
                    Issue.record("seed \(seed) batch \(batch): \(text) did not bind: \(error)")
                    failures += 1
                    continue
                }
                let expected = rows.filter(predicate.evaluate).sorted(by: order.areInIncreasingOrder).map { $0.id }
                if !expected.isEmpty, expected.count < rows.count { selective += 1 }
                let fragment = predicate.sql()
                let sql = #"SELECT "id" FROM "Item" WHERE \#(fragment.sql) ORDER BY \#(order.sqlOrderBy())"#
                let actual = try queue.inDatabase { db in
                    try String.fetchAll(db, sql: sql, arguments: statementArguments(fragment.arguments))
                }
                if actual != expected {
                    failures += 1
                    let missing = Set(expected).subtracting(actual).sorted()
                    let extra = Set(actual).subtracting(expected).sorted()
                    Issue.record(
                        """
                        seed \(seed) (MERIDIAN_SEED=\(seed)), batch \(batch)
                        predicate: \(text)  variables: \(variables)
                        sort: \(order)
                        SQL: \(sql) -- \(fragment.arguments)
                        only in memory: \(missing.map { Value.quote($0) })
                        only in SQLite: \(extra.map { Value.quote($0) })
                        memory order: \(expected.map { Value.quote($0) })
                        SQLite order: \(actual.map { Value.quote($0) })
                        rows: \(rows.filter { missing.contains($0.id) || extra.contains($0.id) })
                        """
                    )
                    if failures >= 5 { return }
                }
            }
        }
        #expect(cases == 10_000)
        #expect(selective > 3_000, "too few selective predicates (\(selective)): the generator is too weak")
        #expect(failures == 0, "seed \(seed)")
    }
}
