// MARK: - ServerMetrics

internal import CoreMetrics

/// The server's metrics, created once per server (bounded dimensions only: never a client or subscription id).
///
/// | name | kind | what |
/// |---|---|---|
/// | `meridian.commits` | counter | fan-out wake-ups that processed new commits (each one batch ending at a commit boundary) |
/// | `meridian.changes` | counter | row changes read from the log by the fan-out |
/// | `meridian.subscribers` | meter | connected `Sync` streams |
/// | `meridian.subscriptions.distinct` | meter | distinct subscriptions the fan-out evaluates |
/// | `meridian.coalesced` | counter | row changes folded away while a client's stream was busy |
/// | `meridian.overflows` | counter | client queues dropped for passing their limit |
/// | `meridian.resnapshots` | counter | snapshots flagged `resnapshot` (overflow, resume impossible, replace) |
/// | `meridian.resume.reads` | counter | reads of the log for resumed subscriptions (one per resuming stream) |
/// | `meridian.fanout.duration` | timer | time to process one batch for every subscription |
/// | `meridian.fanout.failures` | counter | fan-out stops on a read or decode error (every stream then ends `UNAVAILABLE`) |
/// | `meridian.apply` | counter, dimension `outcome` = `committed`/`rejected` | transactions |
struct ServerMetrics: Sendable {
    let commits: Counter
    let changes: Counter
    let subscribers: Meter
    let distinctSubscriptions: Meter
    let coalesced: Counter
    let overflows: Counter
    let resnapshots: Counter
    let resumeReads: Counter
    let fanoutDuration: Timer
    let fanoutFailures: Counter
    let applyCommitted: Counter
    let applyRejected: Counter

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.commits = Counter(label: "meridian.commits", factory: factory)
        self.changes = Counter(label: "meridian.changes", factory: factory)
        self.subscribers = Meter(label: "meridian.subscribers", factory: factory)
        self.distinctSubscriptions = Meter(label: "meridian.subscriptions.distinct", factory: factory)
        self.coalesced = Counter(label: "meridian.coalesced", factory: factory)
        self.overflows = Counter(label: "meridian.overflows", factory: factory)
        self.resnapshots = Counter(label: "meridian.resnapshots", factory: factory)
        self.resumeReads = Counter(label: "meridian.resume.reads", factory: factory)
        self.fanoutDuration = Timer(label: "meridian.fanout.duration", factory: factory)
        self.fanoutFailures = Counter(label: "meridian.fanout.failures", factory: factory)
        self.applyCommitted = Counter(label: "meridian.apply", dimensions: [("outcome", "committed")], factory: factory)
        self.applyRejected = Counter(label: "meridian.apply", dimensions: [("outcome", "rejected")], factory: factory)
    }
}
