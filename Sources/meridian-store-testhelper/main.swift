// A child process for MeridianStoreTests.
//
//   meridian-store-testhelper crash-writer PATH RUN   apply transactions through a Store forever, printing
//                                                     "committed SEQ" after each; the test kills it with kill -9
//   meridian-store-testhelper raw-sql PATH SQL        run SQL through a plain GRDB connection (no Store, no
//                                                     Meridian SQL functions), as another program would
//   meridian-store-testhelper memory-statistics PATH [raw-first]
//                                                     open a Store at PATH (after a plain GRDB connection with
//                                                     raw-first) as the process's first SQLite use; print to
//                                                     standard error whether SQLite counts its memory ("on"/"off")

import Foundation
import GRDB
import MeridianCore
import MeridianStore

/// The schema the crash test uses; Tests/MeridianStoreTests/CrashTests.swift declares the same one.
func crashSchema() throws -> Schema {
    try Schema(
        version: 1,
        entities: [
            EntitySchema(
                name: "Tagged",
                attributes: [
                    Attribute(name: "tag", type: .int),
                    Attribute(name: "n", type: .int),
                    Attribute(name: "payload", type: .string),
                    Attribute(name: "score", type: .double, isOptional: true),
                ],
                indexes: [Index(attributes: ["tag"])],
                idPolicy: .client
            )
        ])
}

/// Rows per transaction: every tag has 0 or this many rows.
let rowsPerTransaction = 4

func crashWriter(path: String, run: Int) async throws {
    let store = try Store.open(path: path, schema: try crashSchema())
    let out = FileHandle.standardOutput
    try await withThrowingTaskGroup(of: Void.self) { group in
        for writer in 0..<4 {
            group.addTask {
                let base = Int64(run) * 10_000_000 + Int64(writer) * 1_000_000
                var k: Int64 = 0
                while true {
                    k += 1
                    let tag = base + k
                    var operations: [WriteOperation] = (0..<rowsPerTransaction).map { i in
                        .insert(
                            "Tagged", id: "\(tag)-\(i)",
                            [
                                "tag": .int(tag), "n": .int(Int64(i)),
                                "payload": .string(String(repeating: "x", count: 200)),
                            ])
                    }
                    if k > 1, k % 3 == 0 {
                        operations += (0..<rowsPerTransaction).map { i in
                            .update("Tagged", id: "\(tag - 1)-\(i)", ["score": .double(Double(k) / 3)])
                        }
                    }
                    if k > 2, k % 5 == 0 {
                        operations += (0..<rowsPerTransaction).map { i in .delete("Tagged", id: "\(tag - 2)-\(i)") }
                    }
                    let result = try await store.apply(operations)
                    out.write("committed \(result.seq)\n".data(using: .utf8)!)
                }
            }
        }
        try await group.waitForAll()
    }
}

func rawSQL(path: String, sql: String) throws {
    var configuration = Configuration()
    configuration.busyMode = .timeout(5)
    let queue = try DatabaseQueue(path: path, configuration: configuration)
    try queue.write { db in try db.execute(sql: sql) }
}

func memoryStatistics(path: String, rawFirst: Bool) throws {
    let raw = rawFirst ? try DatabaseQueue(path: path + ".raw") : nil
    let store = try Store.open(path: path, schema: try crashSchema())
    FileHandle.standardError.write("memory statistics \(Store.sqliteCountsMemory ? "on" : "off")\n".data(using: .utf8)!)
    try store.close()
    try raw?.close()
}

let arguments = CommandLine.arguments
do {
    switch arguments.dropFirst().first {
    case "crash-writer" where arguments.count == 4:
        try await crashWriter(path: arguments[2], run: Int(arguments[3]) ?? 0)
    case "raw-sql" where arguments.count == 4:
        try rawSQL(path: arguments[2], sql: arguments[3])
    case "memory-statistics" where arguments.count == 3 || (arguments.count == 4 && arguments[3] == "raw-first"):
        try memoryStatistics(path: arguments[2], rawFirst: arguments.count == 4)
    default:
        FileHandle.standardError.write(
            "usage: meridian-store-testhelper crash-writer PATH RUN | raw-sql PATH SQL | memory-statistics PATH [raw-first]\n"
                .data(using: .utf8)!)
        exit(2)
    }
} catch {
    FileHandle.standardError.write("error: \(error)\n".data(using: .utf8)!)
    exit(1)
}
