// MARK: - ServerMetrics

internal import CoreMetrics
internal import MeridianProto
internal import Synchronization

internal import struct Foundation.Date

/// The server's metrics, created once per server (bounded dimensions only: never a client or subscription id).
///
/// Named as Prometheus names its metrics (`meridian-server --admin` serves them through swift-prometheus): counters
/// end in `_total`, durations are histograms in seconds. The gauges the admin endpoint adds when it is scraped
/// (clients, queues, the log) are listed in docs/server.md.
///
/// | name | kind | what |
/// |---|---|---|
/// | `meridian_commits_total` | counter | transactions this server committed (Apply and ApplyStream) |
/// | `meridian_row_changes_total` | counter | rows those transactions wrote |
/// | `meridian_apply_transactions_total` | counter, `outcome` = `committed`/`rejected` | transactions asked for |
/// | `meridian_apply_rejections_total` | counter, `code` = the error code (`CONFLICT`, `LIMIT_EXCEEDED`, …) | rejections |
/// | `meridian_commit_duration_seconds` | histogram | the store's commit of one transaction (durable, group commit) |
/// | `meridian_commit_to_send_seconds` | histogram | from a commit (its time in the log) to its batch's write to a stream |
/// | `meridian_fanout_batches_total` | counter | fan-out wake-ups that processed new commits (each ends at a commit) |
/// | `meridian_fanout_inline_runs_total` | counter | fan-out runs on the committing thread (after a lone commit) |
/// | `meridian_fanout_row_changes_total` | counter | row changes the fan-out took from the log |
/// | `meridian_fanout_duration_seconds` | histogram | time to process one batch for every subscription |
/// | `meridian_fanout_failures_total` | counter | fan-out stops on a read or decode error (streams end `UNAVAILABLE`) |
/// | `meridian_streams` | gauge | open `Sync` streams registered with the fan-out |
/// | `meridian_distinct_subscriptions` | gauge | distinct subscriptions the fan-out evaluates |
/// | `meridian_coalesced_row_changes_total` | counter | row changes folded away while a client's stream was busy |
/// | `meridian_client_overflows_total` | counter | client queues dropped for passing their limit |
/// | `meridian_resnapshots_total` | counter | snapshots flagged `resnapshot` (overflow, resume impossible, replace) |
/// | `meridian_resume_reads_total` | counter | reads of the log for resumed subscriptions (one per resuming stream) |
final class ServerMetrics: Sendable {
    let commits: Counter
    let rowChanges: Counter
    let fanoutBatches: Counter
    let fanoutRowChanges: Counter
    let fanoutInlineRuns: Counter
    let streams: Meter
    let distinctSubscriptions: Meter
    let coalesced: Counter
    let overflows: Counter
    let resnapshots: Counter
    let resumeReads: Counter
    let fanoutDuration: Timer
    let fanoutFailures: Counter
    let commitDuration: Timer
    let commitToSend: Timer
    let applyCommitted: Counter
    let applyRejected: Counter
    private let factory: any MetricsFactory
    /// One counter per rejection code, made when the code is first seen (codes are a small closed set).
    private let rejections = Mutex<[String: Counter]>([:])

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        self.commits = Counter(label: "meridian_commits_total", factory: factory)
        self.rowChanges = Counter(label: "meridian_row_changes_total", factory: factory)
        self.fanoutBatches = Counter(label: "meridian_fanout_batches_total", factory: factory)
        self.fanoutRowChanges = Counter(label: "meridian_fanout_row_changes_total", factory: factory)
        self.fanoutInlineRuns = Counter(label: "meridian_fanout_inline_runs_total", factory: factory)
        self.streams = Meter(label: "meridian_streams", factory: factory)
        self.distinctSubscriptions = Meter(label: "meridian_distinct_subscriptions", factory: factory)
        self.coalesced = Counter(label: "meridian_coalesced_row_changes_total", factory: factory)
        self.overflows = Counter(label: "meridian_client_overflows_total", factory: factory)
        self.resnapshots = Counter(label: "meridian_resnapshots_total", factory: factory)
        self.resumeReads = Counter(label: "meridian_resume_reads_total", factory: factory)
        self.fanoutDuration = Timer(label: "meridian_fanout_duration_seconds", factory: factory)
        self.fanoutFailures = Counter(label: "meridian_fanout_failures_total", factory: factory)
        self.commitDuration = Timer(label: "meridian_commit_duration_seconds", factory: factory)
        self.commitToSend = Timer(label: "meridian_commit_to_send_seconds", factory: factory)
        self.applyCommitted = Counter(
            label: "meridian_apply_transactions_total", dimensions: [("outcome", "committed")], factory: factory)
        self.applyRejected = Counter(
            label: "meridian_apply_transactions_total", dimensions: [("outcome", "rejected")], factory: factory)
    }

    /// Counts a rejected transaction under its error code (`Meridian_V1_ErrorCode`'s name, `LIMIT_EXCEEDED`).
    func rejected(code: String) {
        self.applyRejected.increment()
        let counter = self.rejections.withLock { counters in
            if let counter = counters[code] { return counter }
            let counter = Counter(
                label: "meridian_apply_rejections_total", dimensions: [("code", code)], factory: self.factory)
            counters[code] = counter
            return counter
        }
        counter.increment()
    }
}

extension Meridian_V1_ErrorDetail.Code {
    /// The code as a metric label: its protocol name in lower case, without `CODE_` (`limit_exceeded`).
    var metricLabel: String {
        var label = ""
        for character in String(describing: self) {
            if character.isUppercase { label += "_" + character.lowercased() } else { label.append(character) }
        }
        return label
    }
}

/// Microseconds since 1970 on the wall clock (the clock the log's `committed_at` is read from).
func wallClockMicroseconds() -> Int64 {
    Int64((Date().timeIntervalSince1970 * 1_000_000).rounded())
}
