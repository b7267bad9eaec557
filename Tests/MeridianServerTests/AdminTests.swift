// The admin endpoint (`meridian-server --admin`): exact metrics after a known workload, /healthz and /readyz, the
// bearer token, the status page in headless Chromium, and the Grafana dashboard's queries against /metrics.

import Foundation
import GRPCCore
import MeridianAdmin
import MeridianCore
import MeridianProcessIO
import MeridianProto
import MeridianServer
import MeridianStore
import MeridianTestSupport
import Prometheus
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP GET: status, body and headers (no redirects followed, nothing cached).
func httpGet(_ url: String, token: String? = nil) async throws -> (status: Int, body: String) {
    var request = URLRequest(url: URL(string: url)!, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 30)
    if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
    return try await withCheckedThrowingContinuation { continuation in
        URLSession.shared.dataTask(with: request) { data, response, error in
            if let error { return continuation.resume(throwing: error) }
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            continuation.resume(returning: (status, String(decoding: data ?? Data(), as: UTF8.self)))
        }.resume()
    }
}

/// The samples of a Prometheus text exposition: `name{labels}` → value (`# HELP`/`# TYPE` lines skipped).
func prometheusSamples(_ text: String) -> [String: Double] {
    var samples: [String: Double] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
            continue
        }
        samples[String(line[..<space])] = value
    }
    return samples
}

/// Runs an admin endpoint for `server` on 127.0.0.1:0 for the duration of `body`, which gets its base URL.
func withAdmin<Result: Sendable>(
    _ server: MeridianServer, registry: PrometheusCollectorRegistry, token: String? = nil,
    _ body: (String) async throws -> Result
) async throws -> Result {
    var configuration = AdminConfiguration(host: "127.0.0.1", port: 0, bearerToken: token)
    configuration.sampleInterval = .milliseconds(200)
    let admin = AdminServer(server: server, registry: registry, configuration: configuration)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await admin.run() }
        defer { group.cancelAll() }
        let (_, port) = try await admin.listeningAddress
        return try await body("http://127.0.0.1:\(port)")
    }
}

@Suite("Admin endpoint", .timeLimit(.minutes(5)))
struct AdminTests {
    /// A server with its metrics in `registry`, one subscribed client, and a known workload: 2 transactions of 3 and
    /// 2 inserts committed, 1 refused as a duplicate insert, 1 refused for too many operations. Calls `body` with the
    /// admin endpoint's base URL once the client has every change.
    func withWorkload(
        token: String? = nil, _ body: (String, MeridianServer) async throws -> Void
    ) async throws {
        let store = try Fixtures.store()
        let registry = PrometheusCollectorRegistry()
        let configuration = Fixtures.configuration { $0.maxOperationsPerTransaction = 10 }
        try await withTestServer(
            store: store, configuration: configuration, metricsFactory: PrometheusMetricsFactory(registry: registry)
        ) { server, port in
            try await withAdmin(server, registry: registry, token: token) { base in
                try await withHTTP2Client(port: port) { client in
                    let meridian = Meridian_V1_Meridian.Client(wrapping: client)
                    try await withSyncStream(meridian) { stream in
                        var mirror = try await Mirror.subscribed(
                            stream, "all", Fixtures.fetch("Point", "category == 0"))
                        func apply(_ ids: [String]) async throws -> Meridian_V1_ApplyResponse {
                            try await meridian.apply(
                                Meridian_V1_ApplyRequest(ids.map { .insert("Point", id: $0, Fixtures.point($0)) }))
                        }
                        #expect(try await apply(["a", "b", "c"]).result.seq == 3)
                        let last = try await apply(["d", "e"])
                        #expect(last.result.seq == 5)
                        #expect(try await apply(["a"]).error.code == .alreadyExists)
                        #expect(try await apply((0..<11).map { "x\($0)" }).error.code == .limitExceeded)
                        try await mirror.catchUp(stream, to: last.result.seq)
                        #expect(mirror.results["all"]?.count == 5)
                        try await body(base, server)
                    }
                }
            }
        }
    }

    @Test("/metrics counts a known workload exactly: commits, rows, rejections by code, histograms, gauges")
    func metricsAfterWorkload() async throws {
        try await self.withWorkload { base, _ in
            let (status, text) = try await httpGet(base + "/metrics")
            #expect(status == 200)
            let samples = prometheusSamples(text)
            let expected: [String: Double] = [
                "meridian_commits_total": 2,
                "meridian_row_changes_total": 5,
                "meridian_apply_transactions_total{outcome=\"committed\"}": 2,
                "meridian_apply_transactions_total{outcome=\"rejected\"}": 2,
                "meridian_apply_rejections_total{code=\"already_exists\"}": 1,
                "meridian_apply_rejections_total{code=\"limit_exceeded\"}": 1,
                "meridian_commit_duration_seconds_count": 2,
                "meridian_fanout_row_changes_total": 5,
                "meridian_streams": 1,
                "meridian_subscriptions": 1,
                "meridian_distinct_subscriptions": 1,
                "meridian_connections": 1,
                "meridian_store_seq": 5,
                "meridian_fanout_seq": 5,
                "meridian_store_oldest_seq": 1,
                "meridian_log_rows": 5,
                "meridian_client_queue_rows": 0,
                "meridian_ready": 1,
                "meridian_client_overflows_total": 0,
                "meridian_fanout_failures_total": 0,
            ]
            for (name, value) in expected.sorted(by: { $0.key < $1.key }) {
                #expect(samples[name] == value, "\(name)")
            }
            // The client's batches: one or two (the two commits may reach it in one batch), each sent once.
            let sent = samples["meridian_commit_to_send_seconds_count"] ?? 0
            #expect((1...2).contains(sent), "meridian_commit_to_send_seconds_count \(sent)")
            #expect((samples["meridian_store_file_bytes"] ?? 0) > 0)
            #expect(text.contains("# TYPE meridian_commit_duration_seconds histogram"))
            #expect(text.contains("# TYPE meridian_commits_total counter"))
            #expect(text.contains("# TYPE meridian_store_seq gauge"))
        }
    }

    @Test("/healthz and /readyz answer; a token guards /metrics and the status page but not the probes")
    func probesAndToken() async throws {
        let token = "s3cret-admin-token-0123456789"
        try await self.withWorkload(token: token) { base, _ in
            #expect(try await httpGet(base + "/healthz") == (200, "ok\n"))
            #expect(try await httpGet(base + "/readyz") == (200, "{\"ready\":true}\n"))
            #expect(try await httpGet(base + "/metrics").status == 401)
            #expect(try await httpGet(base + "/metrics", token: "wrong-token").status == 401)
            #expect(try await httpGet(base + "/metrics", token: token + "x").status == 401)
            #expect(try await httpGet(base + "/", token: String(token.dropLast())).status == 401)
            #expect(try await httpGet(base + "/metrics", token: token).status == 200)
            let page = try await httpGet(base + "/", token: token)
            #expect(page.status == 200)
            #expect(page.body.contains("Meridian status"))
            let json = try await httpGet(base + "/status.json", token: token)
            let object = try JSONSerialization.jsonObject(with: Data(json.body.utf8)) as? [String: Any]
            #expect(object?["storeSeq"] as? Int == 5)
            #expect((object?["streams"] as? [Any])?.count == 1)
        }
    }

    @Test("every metric the Grafana dashboard (deploy/grafana/meridian.json) queries is in /metrics")
    func grafanaQueries() async throws {
        let dashboard = try Data(contentsOf: URL(fileURLWithPath: Fixtures.root + "/deploy/grafana/meridian.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: dashboard) as? [String: Any])
        let panels = try #require(object["panels"] as? [[String: Any]])
        var expressions: [String] = []
        for panel in panels {
            for target in panel["targets"] as? [[String: Any]] ?? [] {
                if let expr = target["expr"] as? String { expressions.append(expr) }
            }
        }
        #expect(expressions.count >= 10, "the dashboard queries \(expressions.count) expressions")
        let names = Set(
            expressions.flatMap { expr in
                expr.matches(of: /meridian_[a-z_]+/).map { String($0.output) }
            })
        try await self.withWorkload { base, _ in
            let text = try await httpGet(base + "/metrics").body
            let exposed = Set(prometheusSamples(text).keys.map { String($0.prefix { $0 != "{" }) })
            for name in names.sorted() {
                #expect(exposed.contains(name), "the dashboard queries \(name), which /metrics does not have")
            }
        }
    }

    @Test("the status page renders in headless Chromium with the numbers /metrics reports (screenshot saved)")
    func statusPageInChromium() async throws {
        let chromium = try #require(
            ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
                FileManager.default.isExecutableFile(atPath: $0)
            },
            "chromium is not installed: ./meridian.sh setup installs it")
        try await self.withWorkload { base, _ in
            // Two samples for the plot.
            try await Task.sleep(for: .milliseconds(500))
            let samples = prometheusSamples(try await httpGet(base + "/metrics").body)
            let output = Fixtures.root + "/.build/test-output"
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
            let profile = try ProcessTests.temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: profile) }
            let common = [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--user-data-dir=\(profile)", "--hide-scrollbars",
            ]
            let dom = try await runChromium(chromium, common + ["--dump-dom", base + "/"])
            let screenshot = output + "/status-page.png"
            try? FileManager.default.removeItem(atPath: screenshot)
            _ = try await runChromium(
                chromium, common + ["--screenshot=\(screenshot)", "--window-size=1280,1000", base + "/"])
            #expect(FileManager.default.fileExists(atPath: screenshot), "no screenshot at \(screenshot)")
            print("status page screenshot: \(screenshot)")

            // Every number the page marks with its metric is the one /metrics reports (nothing was written between
            // the two reads; the page is read after /metrics).
            var shown: [String: Double] = [:]
            for match in dom.matches(of: /data-metric="([a-z_]+)" data-value="(-?[0-9]+)"/) {
                shown[String(match.output.1)] = Double(match.output.2)
            }
            for name in [
                "meridian_store_seq", "meridian_fanout_seq", "meridian_connections", "meridian_streams",
                "meridian_subscriptions", "meridian_distinct_subscriptions", "meridian_store_oldest_seq",
                "meridian_log_rows", "meridian_ready",
            ] {
                #expect(shown[name] != nil, "the page does not show \(name)")
                #expect(
                    shown[name] == samples[name], "\(name): page \(shown[name] ?? -1), /metrics \(samples[name] ?? -1)")
            }
            #expect(dom.contains("<svg id=\"plot\""), "the page has no plot")
            #expect(dom.contains("<polyline"), "the plot has no line")
            #expect(dom.contains("<table id=\"clients\""))
            #expect(dom.contains("category == 0"), "the subscription's predicate is not listed")
        }
    }

    /// Runs headless Chromium to completion; returns its standard output.
    func runChromium(_ path: String, _ arguments: [String]) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        let handle = stdout.fileHandleForReading
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let data = handle.remainingData()
                process.waitUntilExit()
                continuation.resume(returning: String(decoding: data, as: UTF8.self))
            }
        }
    }
}

/// The base URL in an `admin on http://127.0.0.1:PORT/` line.
func adminBase(_ line: String) -> String? {
    guard line.hasPrefix("admin on http://127.0.0.1:"), line.hasSuffix("/") else { return nil }
    return String(line.dropFirst("admin on ".count))
}
