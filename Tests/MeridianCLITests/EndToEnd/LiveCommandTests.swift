#if canImport(MeridianClient)
    // MARK: - watch and map against a real server, with real processes

    import Foundation
    import MeridianCore
    import Testing

    @testable import MeridianCLI

    @Suite(.timeLimit(.minutes(5)))
    struct LiveCommandTests {
        /// Reads a watcher's lines into a replay until it has applied `seq` (or fails after a timeout).
        static func follow(_ watcher: ChildProcess, _ replay: inout WatchReplay, until seq: Int64) async throws {
            while replay.seq < seq {
                guard let line = await watcher.nextLine(timeout: .seconds(60)) else {
                    Issue.record("the watcher stopped at seq \(replay.seq) before \(seq): \(watcher.errorOutput)")
                    return
                }
                try replay.apply(line: line)
            }
        }

        @Test("two watchers and a writer: the replayed JSON lines equal query at the same seq")
        func watchersReplayToQuery() async throws {
            try await withTestServer { server in
                let s = server.address
                var random = SplitMix(seed: 42)
                var seed = ""
                for i in 0..<30 {
                    seed +=
                        #"{"op":"insert","entity":"Point","id":"p\#(i)","values":{"title":"t\#(random.next(12))","#
                        + #""category":\#(random.next(4)),"latitude":38.\#(700 + random.next(40))}}"# + "\n"
                }
                var r = try await runMeridian(["apply", "-"], server: s, stdin: seed)
                #expect(r.status == 0, "\(r)")

                let queries: [[String]] = [
                    ["Point", "--sort", "category,title", "--section", "category"],
                    ["Point", "--where", "category >= 2", "--sort", "-latitude"],
                ]
                var watchers: [ChildProcess] = []
                var replays: [WatchReplay] = []
                for query in queries {
                    let watcher = try ChildProcess(
                        product("meridian"), ["watch"] + query + ["--format", "jsonl", "--server", s])
                    var replay = WatchReplay()
                    let first = try #require(await watcher.nextLine(timeout: .seconds(60)), "\(watcher.errorOutput)")
                    #expect(first.hasPrefix(#"{"event":"snapshot","seq":30,"sections":["#), "\(first)")
                    try replay.apply(line: first)
                    watchers.append(watcher)
                    replays.append(replay)
                }
                #expect(replays[0].sections.map(\.name) == ["0", "1", "2", "3"])

                // The writer: 60 transactions of 1–3 operations (inserts, moves, renames, category changes, deletes).
                var ids = (0..<30).map { "p\($0)" }
                var next = 30
                for _ in 0..<60 {
                    var tx = ""
                    for _ in 0..<(1 + random.next(3)) {
                        switch random.next(10) {
                        case 0...2:
                            tx +=
                                #"{"op":"insert","entity":"Point","id":"p\#(next)","values":{"title":"t\#(random.next(12))","#
                                + #""category":\#(random.next(4)),"latitude":38.\#(700 + random.next(40))}}"# + "\n"
                            ids.append("p\(next)")
                            next += 1
                        case 3...4:
                            tx +=
                                #"{"op":"update","entity":"Point","id":"\#(ids[random.next(ids.count)])","values":{"title":"t\#(random.next(12))"}}"#
                                + "\n"
                        case 5...6:
                            tx +=
                                #"{"op":"update","entity":"Point","id":"\#(ids[random.next(ids.count)])","values":{"category":\#(random.next(4))}}"#
                                + "\n"
                        case 7...8:
                            tx +=
                                #"{"op":"update","entity":"Point","id":"\#(ids[random.next(ids.count)])","values":{"latitude":38.\#(700 + random.next(40))}}"#
                                + "\n"
                        default:
                            guard ids.count > 5 else { continue }
                            let id = ids.remove(at: random.next(ids.count))
                            tx += #"{"op":"delete","entity":"Point","id":"\#(id)"}"# + "\n"
                        }
                    }
                    guard !tx.isEmpty else { continue }
                    r = try await runMeridian(["apply", "-"], server: s, stdin: tx)
                    #expect(r.status == 0, "\(r)\n\(tx)")
                }
                // A last write that both queries see, so both streams must reach its seq.
                r = try await runMeridian(
                    ["upsert", "Point", "last", "title=zz", "category=3", "latitude=38.9"], server: s)
                let lastSeq = try #require(Int64(r.stdout.trimmingTrailingNewlines), "\(r)")

                for (i, query) in queries.enumerated() {
                    try await Self.follow(watchers[i], &replays[i], until: lastSeq)
                    #expect(replays[i].seq == lastSeq)
                    #expect(replays[i].events > 2)
                    var arguments = ["query", query[0]]
                    var k = 1
                    while k < query.count {
                        if query[k] == "--section" {
                            k += 2
                            continue
                        }
                        arguments += [query[k], query[k + 1]]
                        k += 2
                    }
                    let expected = try await runMeridian(arguments + ["--format", "jsonl"], server: s)
                    #expect(replays[i].queryLines == expected.stdout, "watch \(query)")
                }
                // SIGTERM and SIGINT both end a watcher with status 0.
                watchers[0].signal(SIGTERM)
                watchers[1].signal(SIGINT)
                #expect(await watchers[0].waitForExit(timeout: .seconds(20)) == 0)
                #expect(await watchers[1].waitForExit(timeout: .seconds(20)) == 0)
            }
        }

        @Test("map --format jsonl: add, move, retitle, remove, and nothing for an unrelated attribute")
        func mapEvents() async throws {
            try await withTestServer { server in
                let s = server.address
                _ = try await runMeridian(
                    ["insert", "Point", "id=a", "title=Café Aurora", "latitude=38.71", "longitude=-9.14"], server: s)
                _ = try await runMeridian(["insert", "Point", "id=b", "title=Bica"], server: s)
                let map = try ChildProcess(
                    product("meridian"),
                    [
                        "map", "Point", "--lat", "latitude", "--lon", "longitude", "--title", "title", "--format",
                        "jsonl",
                        "--server", s,
                    ])
                defer { map.signal(SIGKILL) }
                #expect(
                    await map.nextLine(timeout: .seconds(60))
                        == #"{"event":"snapshot","seq":2,"annotations":[{"id":"a","lat":38.71,"lon":-9.14,"title":"Café Aurora"}]}"#,
                    "\(map.errorOutput)")

                func write(_ arguments: [String]) async throws -> Int64 {
                    let r = try await runMeridian(arguments, server: s)
                    return try #require(Int64(r.stdout.trimmingTrailingNewlines), "\(r)")
                }
                _ = try await write(["update", "Point", "a", "category=3"])  // neither coordinate nor title: nothing
                var seq = try await write(["update", "Point", "a", "latitude=38.72"])
                #expect(
                    await map.nextLine()
                        == #"{"event":"move","id":"a","lat":38.72,"lon":-9.14,"title":"Café Aurora","seq":\#(seq)}"#)
                seq = try await write(["update", "Point", "a", "title=Café Aurora II"])
                #expect(
                    await map.nextLine()
                        == #"{"event":"retitle","id":"a","lat":38.72,"lon":-9.14,"title":"Café Aurora II","seq":\#(seq)}"#
                )
                seq = try await write(["update", "Point", "b", "latitude=38.7", "longitude=-9.15"])
                #expect(
                    await map.nextLine()
                        == #"{"event":"add","id":"b","lat":38.7,"lon":-9.15,"title":"Bica","seq":\#(seq)}"#)
                seq = try await write(["delete", "Point", "a"])
                #expect(
                    await map.nextLine()
                        == #"{"event":"remove","id":"a","lat":38.72,"lon":-9.14,"title":"Café Aurora II","seq":\#(seq)}"#
                )
                seq = try await write(["update", "Point", "b", "longitude="])
                #expect(
                    await map.nextLine()
                        == #"{"event":"remove","id":"b","lat":38.7,"lon":-9.15,"title":"Bica","seq":\#(seq)}"#)
                map.signal(SIGTERM)
                #expect(await map.waitForExit(timeout: .seconds(20)) == 0)
            }
        }

        @Test("map --region: only annotations inside the box; moving out is a remove")
        func mapRegion() async throws {
            try await withTestServer { server in
                let s = server.address
                _ = try await runMeridian(
                    ["insert", "Point", "id=in", "title=In", "latitude=38.71", "longitude=-9.14"], server: s)
                _ = try await runMeridian(
                    ["insert", "Point", "id=out", "title=Out", "latitude=38.80", "longitude=-9.14"], server: s)
                let map = try ChildProcess(
                    product("meridian"),
                    [
                        "map", "Point", "--lat", "latitude", "--lon", "longitude", "--region",
                        "38.70,-9.15,38.72,-9.13",
                        "--format", "jsonl", "--server", s,
                    ])
                defer { map.signal(SIGKILL) }
                #expect(
                    await map.nextLine(timeout: .seconds(60))
                        == #"{"event":"snapshot","seq":2,"annotations":[{"id":"in","lat":38.71,"lon":-9.14,"title":null}]}"#,
                    "\(map.errorOutput)")
                var r = try await runMeridian(["update", "Point", "in", "latitude=38.75"], server: s)
                #expect(
                    await map.nextLine()
                        == #"{"event":"remove","id":"in","lat":38.71,"lon":-9.14,"title":null,"seq":\#(r.stdout.trimmingTrailingNewlines)}"#
                )
                r = try await runMeridian(["update", "Point", "out", "latitude=38.715"], server: s)
                #expect(
                    await map.nextLine()
                        == #"{"event":"add","id":"out","lat":38.715,"lon":-9.14,"title":null,"seq":\#(r.stdout.trimmingTrailingNewlines)}"#
                )
                map.signal(SIGINT)
                #expect(await map.waitForExit(timeout: .seconds(20)) == 0)
            }
        }

        @Test("watch and map report bad input (exit 2) and an unreachable server (exit 3) before showing anything")
        func errors() async throws {
            var r = try await runMeridian(["watch", "Point", "--format", "jsonl"], server: "127.0.0.1:1")
            #expect(r.status == 3, "\(r)")
            try await withTestServer { server in
                r = try await runMeridian(
                    ["watch", "Point", "--where", "title >", "--format", "jsonl"], server: server.address)
                #expect(r.status == 2 && r.stderr.hasSuffix("\ntitle >\n       ^\n"), "\(r)")
                r = try await runMeridian(
                    ["watch", "Point", "--sort", "title", "--section", "category"], server: server.address)
                #expect(r.status == 2, "\(r)")
                r = try await runMeridian(
                    ["map", "Point", "--lat", "title", "--lon", "longitude"], server: server.address)
                #expect(
                    r.status == 2 && r.stderr == "error: --lat: 'title' is string, not a number of degrees\n", "\(r)")
                r = try await runMeridian(
                    ["map", "Point", "--lat", "latitude", "--lon", "longitude", "--region", "1,2,3"],
                    server: server.address)
                #expect(r.status == 2, "\(r)")
                #expect(
                    r.stderr.hasPrefix("Error: --region: expected LAT1,LON1,LAT2,LON2 (four numbers), not '1,2,3'"),
                    "\(r)")
            }
        }
    }
#endif
