// MARK: - The status page: server-rendered HTML and inline SVG, no framework, no external asset

internal import Foundation
internal import MeridianCore
internal import MeridianServer
internal import MeridianStore
internal import Synchronization

/// The seq sampled every few seconds, for the status page's plot (a ring of the last `capacity` samples).
final class SeqHistory: Sendable {
    struct Sample: Sendable {
        var at: ContinuousClock.Instant
        var seq: Int64
    }

    private let capacity: Int
    private let ring = Mutex<[Sample]>([])

    init(capacity: Int) { self.capacity = max(2, capacity) }

    func record(seq: Int64, at instant: ContinuousClock.Instant) {
        self.ring.withLock { ring in
            ring.append(Sample(at: instant, seq: seq))
            if ring.count > self.capacity { ring.removeFirst(ring.count - self.capacity) }
        }
    }

    var samples: [Sample] { self.ring.withLock { $0 } }
}

/// What one rendering of the status page shows.
struct StatusSnapshot {
    var status: ServerStatus
    var log: Store.LogStatistics?
    var history: [SeqHistory.Sample]
    var now: ContinuousClock.Instant

    /// Row changes a second over the last minute of samples (and the seq now), `nil` before two samples.
    var changeRate: Double? {
        let recent = self.history.filter { self.now - $0.at <= .seconds(61) }
        guard let first = recent.first, let last = recent.last, last.at > first.at else { return nil }
        return Double(last.seq - first.seq) / (last.at - first.at).seconds
    }
}

enum StatusPage {
    /// The page: refreshes itself every two seconds (a `<meta>` refresh: no script).
    static func html(_ snapshot: StatusSnapshot) -> String {
        let status = snapshot.status
        var page = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Meridian status</title>
            <style>
            body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;background:#f7f8fa}
            h1{font-size:20px;margin:0 0 12px}h2{font-size:15px;margin:24px 0 8px}
            .cards{display:flex;flex-wrap:wrap;gap:10px}.card{background:#fff;border:1px solid #dde1e8;border-radius:6px;
            padding:8px 12px;min-width:110px}.card b{display:block;font-size:20px;font-variant-numeric:tabular-nums}
            .card span{color:#5b6475;font-size:12px}.ok{color:#137333}.bad{color:#b3261e}
            table{border-collapse:collapse;background:#fff;border:1px solid #dde1e8;font-variant-numeric:tabular-nums}
            th,td{padding:4px 10px;border-bottom:1px solid #eef0f4;text-align:left}td.n{text-align:right}
            th{font-weight:600;color:#5b6475;font-size:12px}code{font-size:12px}svg{background:#fff;border:1px solid #dde1e8}
            .muted{color:#5b6475}
            </style></head><body>
            <h1>Meridian status</h1>

            """
        if let problem = status.problem {
            page +=
                "<p class=\"bad\" data-metric=\"meridian_ready\" data-value=\"0\">Not ready: \(escape(problem))</p>\n"
        } else {
            page +=
                "<p class=\"ok\" data-metric=\"meridian_ready\" data-value=\"1\">Ready: the store takes writes and the fan-out runs.</p>\n"
        }
        page += "<div class=\"cards\">\n"
        func card(_ label: String, _ metric: String?, _ value: Int64, _ shown: String? = nil) {
            let attribute = metric.map { " data-metric=\"\($0)\" data-value=\"\(value)\"" } ?? ""
            page += "<div class=\"card\"><b\(attribute)>\(shown ?? grouped(value))</b><span>\(label)</span></div>\n"
        }
        if let log = snapshot.log {
            card("store seq", "meridian_store_seq", log.latestSeq)
        }
        card("fan-out seq", "meridian_fanout_seq", status.seq)
        let rate = snapshot.changeRate
        page +=
            "<div class=\"card\"><b data-rate>\(rate.map { String(format: "%.1f", $0) } ?? "–")</b>"
            + "<span>row changes/s (last minute)</span></div>\n"
        card("connections", "meridian_connections", Int64(status.connections))
        card("Sync streams", "meridian_streams", Int64(status.streams.count))
        card("subscriptions", "meridian_subscriptions", Int64(status.heldSubscriptions))
        card("distinct subscriptions", "meridian_distinct_subscriptions", Int64(status.subscriptions.count))
        let queued = status.streams.reduce(0) { $0 + $1.queuedBytes }
        card("queued bytes", "meridian_client_queue_bytes", Int64(queued), bytes(Int64(queued)))
        if let log = snapshot.log {
            card("oldest seq in the log", "meridian_store_oldest_seq", log.oldestSeq)
            card("changes in the log", "meridian_log_rows", Int64(log.rows))
            card("store file", "meridian_store_file_bytes", log.fileBytes, bytes(log.fileBytes))
        }
        page += "</div>\n<h2>Seq and change rate, last \(historyMinutes(snapshot)) min</h2>\n"
        page += plot(snapshot)

        page += "<h2>Clients (\(status.streams.count))</h2>\n"
        if status.streams.isEmpty {
            page += "<p class=\"muted\">No client is connected.</p>\n"
        } else {
            page +=
                "<table id=\"clients\"><tr><th>name</th><th>subject</th><th>address</th><th>subscriptions</th>"
                + "<th>queued rows</th><th>queued bytes</th><th>lag (seqs)</th><th>connected</th></tr>\n"
            for stream in status.streams {
                page +=
                    "<tr><td>\(escape(stream.name.isEmpty ? "–" : stream.name))</td>"
                    + "<td>\(escape(stream.subject ?? "–"))</td><td><code>\(escape(stream.peer))</code></td>"
                    + "<td class=\"n\">\(stream.subscriptions)</td><td class=\"n\">\(grouped(Int64(stream.queuedRows)))</td>"
                    + "<td class=\"n\">\(bytes(Int64(stream.queuedBytes)))</td><td class=\"n\">\(grouped(stream.lagSeqs))</td>"
                    + "<td class=\"n\">\(spoken(stream.age))</td></tr>\n"
            }
            page += "</table>\n"
        }

        let top = status.subscriptions.prefix(10)
        page += "<h2>Costliest subscriptions (\(top.count) of \(status.subscriptions.count))</h2>\n"
        if top.isEmpty {
            page += "<p class=\"muted\">No subscription.</p>\n"
        } else {
            page +=
                "<table id=\"subscriptions\"><tr><th>entity</th><th>predicate</th><th>limit</th><th>holders</th>"
                + "<th>batches evaluated</th><th>row changes sent</th></tr>\n"
            for subscription in top {
                page +=
                    "<tr><td>\(escape(subscription.entity))</td><td><code>\(escape(subscription.predicate))</code></td>"
                    + "<td class=\"n\">\(subscription.limit.map(String.init) ?? "–")</td>"
                    + "<td class=\"n\">\(subscription.holders)</td><td class=\"n\">\(grouped(Int64(subscription.evaluations)))</td>"
                    + "<td class=\"n\">\(grouped(Int64(subscription.rowsSent)))</td></tr>\n"
            }
            page += "</table>\n"
        }
        page +=
            "<p class=\"muted\">Metrics for Prometheus: <a href=\"metrics\">/metrics</a> · "
            + "<a href=\"status.json\">status.json</a> · <a href=\"readyz\">/readyz</a></p>\n</body></html>\n"
        return page
    }

    /// The seq (a line) and the change rate between samples (bars), over the samples kept.
    static func plot(_ snapshot: StatusSnapshot) -> String {
        let (width, height, left, bottom) = (720.0, 180.0, 64.0, 22.0)
        let samples = snapshot.history
        var svg =
            "<svg id=\"plot\" role=\"img\" aria-label=\"seq and change rate\" width=\"\(Int(width))\" "
            + "height=\"\(Int(height))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" xmlns=\"http://www.w3.org/2000/svg\">\n"
        guard samples.count >= 2, let first = samples.first, let last = samples.last, last.at > first.at else {
            svg += "<text x=\"\(Int(left))\" y=\"90\" fill=\"#5b6475\">Collecting samples…</text></svg>\n"
            return svg
        }
        let span = (last.at - first.at).seconds
        let plotWidth = width - left - 8
        let plotHeight = height - bottom - 10
        func x(_ instant: ContinuousClock.Instant) -> Double { left + (instant - first.at).seconds / span * plotWidth }
        // Rates between consecutive samples, as bars under the line.
        var rates: [(ContinuousClock.Instant, ContinuousClock.Instant, Double)] = []
        for (a, b) in zip(samples, samples.dropFirst()) where b.at > a.at {
            rates.append((a.at, b.at, Double(b.seq - a.seq) / (b.at - a.at).seconds))
        }
        let maxRate = max(1, rates.map(\.2).max() ?? 1)
        for (from, to, rate) in rates where rate > 0 {
            let barHeight = rate / maxRate * plotHeight
            svg += String(
                format: "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#c6dafc\"/>\n",
                x(from), 10 + plotHeight - barHeight, max(0.5, x(to) - x(from) - 0.5), barHeight)
        }
        let minSeq = samples.map(\.seq).min()!
        let maxSeq = max(minSeq + 1, samples.map(\.seq).max()!)
        let points = samples.map { sample in
            String(
                format: "%.1f,%.1f", x(sample.at),
                10 + plotHeight - Double(sample.seq - minSeq) / Double(maxSeq - minSeq) * plotHeight)
        }
        svg +=
            "<polyline fill=\"none\" stroke=\"#1a56db\" stroke-width=\"2\" points=\"\(points.joined(separator: " "))\"/>\n"
        svg +=
            "<line x1=\"\(Int(left))\" y1=\"\(Int(10 + plotHeight))\" x2=\"\(Int(width - 8))\" y2=\"\(Int(10 + plotHeight))\" stroke=\"#8a93a6\"/>\n"
        svg += "<text x=\"4\" y=\"20\" font-size=\"11\" fill=\"#1a56db\">seq \(maxSeq)</text>\n"
        svg += "<text x=\"4\" y=\"\(Int(10 + plotHeight))\" font-size=\"11\" fill=\"#1a56db\">seq \(minSeq)</text>\n"
        svg += "<text x=\"4\" y=\"36\" font-size=\"11\" fill=\"#4a78c2\">\(String(format: "%.0f", maxRate))/s</text>\n"
        svg +=
            "<text x=\"\(Int(left))\" y=\"\(Int(height - 5))\" font-size=\"11\" fill=\"#5b6475\">−\(spoken(last.at - first.at))</text>\n"
        svg += "<text x=\"\(Int(width - 40))\" y=\"\(Int(height - 5))\" font-size=\"11\" fill=\"#5b6475\">now</text>\n"
        svg += "</svg>\n"
        return svg
    }

    /// The same content as JSON (`/status.json`).
    static func json(_ snapshot: StatusSnapshot) -> String {
        let status = snapshot.status
        let q = JSONText.quoted
        var text = "{\"ready\":\(status.problem == nil),\"problem\":\(status.problem.map(q) ?? "null"),"
        text += "\"fanoutSeq\":\(status.seq),\"connections\":\(status.connections),"
        if let log = snapshot.log {
            text +=
                "\"storeSeq\":\(log.latestSeq),\"oldestSeq\":\(log.oldestSeq),\"logRows\":\(log.rows),"
                + "\"fileBytes\":\(log.fileBytes),"
        }
        text += "\"changeRate\":\(snapshot.changeRate.map { String(format: "%.3f", $0) } ?? "null"),\"streams\":["
        text += status.streams.map { stream in
            "{\"name\":\(q(stream.name)),\"subject\":\(stream.subject.map(q) ?? "null"),\"peer\":\(q(stream.peer)),"
                + "\"subscriptions\":\(stream.subscriptions),\"queuedRows\":\(stream.queuedRows),"
                + "\"queuedBytes\":\(stream.queuedBytes),\"sentSeq\":\(stream.sentSeq),\"lagSeqs\":\(stream.lagSeqs),"
                + "\"ageSeconds\":\(String(format: "%.3f", stream.age.seconds))}"
        }.joined(separator: ",")
        text += "],\"subscriptions\":["
        text += status.subscriptions.map { subscription in
            "{\"entity\":\(q(subscription.entity)),\"predicate\":\(q(subscription.predicate)),"
                + "\"limit\":\(subscription.limit.map(String.init) ?? "null"),\"holders\":\(subscription.holders),"
                + "\"evaluations\":\(subscription.evaluations),\"rowsSent\":\(subscription.rowsSent)}"
        }.joined(separator: ",")
        text += "]}\n"
        return text
    }

    static func historyMinutes(_ snapshot: StatusSnapshot) -> Int {
        guard let first = snapshot.history.first else { return 0 }
        return max(1, Int(((snapshot.now - first.at).seconds / 60).rounded(.up)))
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    /// 1234567 → `1 234 567` (thin spaces: no locale's separator is mistaken for a decimal point).
    static func grouped(_ value: Int64) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (i, digit) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out += "\u{2009}" }
            out.append(digit)
        }
        return value < 0 ? "-" + out : out
    }

    static func bytes(_ value: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var amount = Double(value)
        var unit = 0
        while amount >= 1024, unit < units.count - 1 {
            amount /= 1024
            unit += 1
        }
        return unit == 0 ? "\(value) B" : String(format: "%.1f", amount) + " " + units[unit]
    }

    static func spoken(_ duration: Duration) -> String {
        let seconds = Int(duration.seconds)
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3600 { return "\(seconds / 60) min \(seconds % 60) s" }
        return "\(seconds / 3600) h \(seconds % 3600 / 60) min"
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let parts = self.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
