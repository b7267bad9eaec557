// Meridian's benchmarks, one subcommand per part. Build and run in release:
//
//   swift build -c release --product meridian-bench && .build/release/meridian-bench store [--json]
//   .build/release/meridian-bench results
//   .build/release/meridian-bench server [--json]
//   .build/release/meridian-bench server --case regions [--clients 1000] [--rate 100] [--seconds 5] [--auth] [--json]
//   .build/release/meridian-bench bounds
//   .build/release/meridian-bench bulk [--rows 20000] [--runs 3] [--import-rows 1000000] [--json]
//     (bulk, server and all need meridian-server and meridian built beside meridian-bench)
//   .build/release/meridian-bench sync [--rows 200000] [--json]
//   .build/release/meridian-bench all [--json] [--output FILE]   (store, server, bulk and sync: one Markdown table)

import Foundation
import MeridianCore
import MeridianStore

let benchmarks: [String: @Sendable () async throws -> Void] = [
    "store": { try await StoreBenchmark.run(arguments: Array(CommandLine.arguments.dropFirst(2))) },
    "results": {
        // One remote change applied to an incremental results engine, against re-running the query and diffing.
        for rows in [10_000, 100_000, 1_000_000] {
            print(LiveResultsBenchmark.run(rows: rows))
        }
    },
    "server": { try await ServerBenchmark.run(arguments: Array(CommandLine.arguments.dropFirst(2))) },
    "bounds": { try await BoundsBenchmark.run() },
    "client": { try await runClientBenchmark(arguments: Array(CommandLine.arguments.dropFirst(2))) },
    "bulk": { try await BulkBenchmark.run(arguments: Array(CommandLine.arguments.dropFirst(2))) },
    "all": { try await AllBenchmarks.run(arguments: Array(CommandLine.arguments.dropFirst(2))) },
    "sync": { try await SyncBenchmark.run(arguments: Array(CommandLine.arguments.dropFirst(2))) },
    // The raw gRPC service alone, for the regions case's memory floor (not a benchmark of its own).
    "raw-server": { try await RegionsBenchmark.serveRaw() },
]

let name = CommandLine.arguments.dropFirst().first ?? ""
guard let benchmark = benchmarks[name] else {
    print("usage: meridian-bench \(benchmarks.keys.sorted().joined(separator: " | "))")
    exit(2)
}
// SQLite as a store sets it up for its process, before anything opens a connection: the plain SQLite ceilings and
// the cases that run after them in one process run under the same setting as the store (else the first connection,
// a ceiling's, would decide it for the whole run).
Store.prepareSQLite()
try await benchmark()
