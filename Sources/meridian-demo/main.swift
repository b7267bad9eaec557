// The demo behind `./meridian.sh demo`, until the server and the `meridian` CLI take it over.
//
// It opens a store on an embedded SQLite file in ./data, loads a few thousand Points over central Lisbon, runs a
// writer that moves, renames, adds and deletes points a few times a second, and follows the store's change log with
// an incremental results engine, printing each commit's exact change set. Writes made by another process (the
// `sqlite3` shell) show up too. Ctrl-C stops it.

import Foundation
import Logging
import MeridianCore
import MeridianStore

struct Options {
    var data = "data"
    var schema = "Schemas/demo.yaml"
    var points = 3000
    var rate = 4.0
    var duration: Double? = nil
    var predicate = "category == 3"
    var sort = "title"

    static let usage = """
        usage: meridian-demo [--data DIR] [--schema FILE] [--points N] [--rate WRITES_PER_SECOND]
                             [--duration SECONDS] [--where PREDICATE] [--sort KEYS]
        """

    init(_ arguments: [String]) throws {
        var i = 0
        func value() throws -> String {
            i += 1
            guard i < arguments.count else { throw DemoError("\(arguments[i - 1]) needs a value") }
            return arguments[i]
        }
        func number(_ text: String, _ flag: String) throws -> Double {
            guard let n = Double(text), n.isFinite, n >= 0 else {
                throw DemoError("\(flag): '\(text)' is not a number")
            }
            return n
        }
        while i < arguments.count {
            switch arguments[i] {
            case "--data": self.data = try value()
            case "--schema": self.schema = try value()
            case "--points": self.points = Int(try number(try value(), "--points"))
            case "--rate": self.rate = try number(try value(), "--rate")
            case "--duration": self.duration = try number(try value(), "--duration")
            case "--where": self.predicate = try value()
            case "--sort": self.sort = try value()
            case "-h", "--help":
                print(Self.usage)
                exit(0)
            default: throw DemoError("unknown option '\(arguments[i])'")
            }
            i += 1
        }
    }
}

struct DemoError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Demo data

enum DemoData {
    static let kinds = ["Café", "Miradouro", "Livraria", "Padaria", "Tasca", "Jardim", "Museu", "Galeria"]
    static let names = [
        "Aurora", "Estrela", "Alfama", "Chiado", "Tejo", "Graça", "Bica", "Sé", "Rossio", "Lapa", "Ribeira",
        "Príncipe Real", "Santos", "Belém", "Mouraria", "Saudade",
    ]

    static func title(_ rng: inout SplitMix64) -> String {
        "\(self.kinds.randomElement(using: &rng)!) \(self.names.randomElement(using: &rng)!)"
    }

    /// A point in central Lisbon.
    static func position(_ rng: inout SplitMix64) -> (Double, Double) {
        (Double.random(in: 38.700...38.780, using: &rng), Double.random(in: -9.200 ... -9.100, using: &rng))
    }

    static func point(_ rng: inout SplitMix64) -> [String: Value] {
        let (lat, lon) = self.position(&rng)
        return [
            "title": .string(self.title(&rng)),
            "category": .int(Int64.random(in: 0..<8, using: &rng)),
            "latitude": .double((lat * 1e5).rounded() / 1e5),
            "longitude": .double((lon * 1e5).rounded() / 1e5),
            "updatedAt": .timestamp(Timestamp(secondsSince1970: Date().timeIntervalSince1970)),
        ]
    }
}

// MARK: - Printing change sets

func render(_ changes: ChangeSet<Row>, seq: Int64) -> String {
    var parts: [String] = []
    for index in changes.deletedSections { parts.append("-section \(index)") }
    for insertion in changes.insertedSections { parts.append("+section \(insertion.index) \"\(insertion.name)\"") }
    for change in changes.rowChanges {
        switch change {
        case .delete(let id, let from):
            parts.append("delete \(id) \(from)")
        case .insert(_, let to, let row):
            parts.append("insert \(to) \(Value.quote(row["title"].displayText))")
        case .move(_, let from, let to, let row, _):
            parts.append("move \(from)->\(to) \(Value.quote(row["title"].displayText))")
        case .update(_, let from, let to, let row, let changed):
            parts.append(
                "update \(from)->\(to) \(Value.quote(row["title"].displayText)) [\(changed.joined(separator: ","))]")
        }
    }
    return "seq \(seq): " + parts.joined(separator: "; ")
}

// MARK: - Main

let options: Options
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("meridian-demo: \(error)\n\(Options.usage)\n".utf8))
    exit(2)
}

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = .warning
    return handler
}

let schema: Schema
let request: BoundFetchRequest
do {
    schema = try Schema.load(contentsOf: options.schema)
    let fetch = try FetchRequest(entity: "Point", where: options.predicate, sortedBy: options.sort)
    request = try fetch.bind(to: schema)
} catch let error as QueryError {
    FileHandle.standardError.write(
        Data("meridian-demo: \(error)\n\(error.caretDiagram(for: options.predicate))\n".utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("meridian-demo: \(error)\n".utf8))
    exit(2)
}

try FileManager.default.createDirectory(atPath: options.data, withIntermediateDirectories: true)
let path = options.data + "/demo.sqlite"
let store = try Store.open(path: path, schema: schema)

// Seed once.
var rng = SplitMix64(seed: 2026)
let existing = try await store.snapshot(entity: "Point", limit: 1)
if existing.rows.isEmpty {
    var loaded = 0
    while loaded < options.points {
        let chunk = min(500, options.points - loaded)
        try await store.apply((0..<chunk).map { _ in .insert("Point", DemoData.point(&rng)) })
        loaded += chunk
    }
    print("loaded \(loaded) points over central Lisbon into \(path)")
}

let snapshot = try await store.snapshot(request)
let results = try { () throws -> LiveResults in
    var results = try LiveResults(request)
    results.reset(rows: snapshot.rows)
    return results
}()
print(
    "watching Point where \(request.request.predicateText), sorted by \(request.order): \(results.count) rows at seq \(snapshot.seq)"
)
print("try, in another terminal (a raw SQLite write; the store captures it too):")
print(
    "  sqlite3 \(path) \"UPDATE Point SET category = 3 WHERE id = (SELECT id FROM Point WHERE category != 3 LIMIT 1)\"")
print("stop with Ctrl-C")

// SIGINT and SIGTERM end the demo cleanly.
signal(SIGINT, SIG_IGN)
signal(SIGTERM, SIG_IGN)
let (stopSignals, stopContinuation) = AsyncStream<Void>.makeStream()
let sources = [SIGINT, SIGTERM].map { signalNumber in
    let source = DispatchSource.makeSignalSource(signal: signalNumber)
    source.setEventHandler { stopContinuation.yield() }
    source.resume()
    return source
}

await withTaskGroup(of: Void.self) { group in
    // The writer: a few transactions a second.
    group.addTask {
        var rng = SplitMix64(seed: UInt64(Date().timeIntervalSince1970))
        let interval = options.rate > 0 ? 1.0 / options.rate : 3600
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(interval))
            guard let sample = try? await store.snapshot(entity: "Point", limit: 400), !sample.rows.isEmpty else {
                continue
            }
            let row = sample.rows.randomElement(using: &rng)!
            let operation: WriteOperation
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<4:
                let (lat, lon) = DemoData.position(&rng)
                operation = .update("Point", id: row.id, ["latitude": .double(lat), "longitude": .double(lon)])
            case 4..<6: operation = .update("Point", id: row.id, ["title": .string(DemoData.title(&rng))])
            case 6..<8:
                operation = .update("Point", id: row.id, ["category": .int(Int64.random(in: 0..<8, using: &rng))])
            case 8: operation = .insert("Point", DemoData.point(&rng))
            default: operation = .delete("Point", id: row.id)
            }
            _ = try? await store.apply([operation])
        }
    }
    // The follower: every commit's changes, applied to the results engine in O(log n) each.
    group.addTask {
        var applied = snapshot.seq
        var live = results
        for await _ in store.commits(pollInterval: .milliseconds(20)) {
            guard case .changes(let batch) = try? await store.changes(after: applied, entities: ["Point"]) else {
                continue
            }
            let mutations = batch.changes.map { change -> RowMutation in
                change.after.map { .upsert($0) } ?? .delete(id: change.id)
            }
            applied = batch.throughSeq
            let changeSet = live.apply(mutations)
            if !changeSet.isEmpty { print(render(changeSet, seq: batch.throughSeq)) }
        }
    }
    // The stop: a signal, or the duration running out.
    group.addTask {
        if let duration = options.duration {
            _ = await withTaskGroup(of: Void.self) { inner in
                inner.addTask { try? await Task.sleep(for: .seconds(duration)) }
                inner.addTask { for await _ in stopSignals { return } }
                await inner.next()
                inner.cancelAll()
            }
        } else {
            for await _ in stopSignals { break }
        }
    }
    await group.next()
    group.cancelAll()
}
_ = sources
try store.close()
print("stopped")
