// MARK: - MetricsExporter: the Prometheus text of /metrics

internal import MeridianServer
internal import MeridianStore
internal import Prometheus

/// Writes `/metrics`: what the server counted through swift-metrics (counters, histograms and the stream gauges,
/// which swift-prometheus keeps in the registry), and gauges read from the server and its store when scraped.
///
/// | gauge | what |
/// |---|---|
/// | `meridian_ready` | 1 when `/readyz` says ready, else 0 |
/// | `meridian_connections` | client connections open (HTTP/2) |
/// | `meridian_subscriptions` | subscriptions held over all streams |
/// | `meridian_pending_subscriptions` | subscriptions waiting for their snapshot or resume read |
/// | `meridian_client_queue_bytes` / `…_max` | bytes waiting in client queues: the sum, and the largest one |
/// | `meridian_client_queue_rows` | row changes waiting in client queues, summed |
/// | `meridian_client_lag_seqs_max` | the furthest a stream is behind the fan-out, in seqs |
/// | `meridian_fanout_seq` | the last seq the fan-out processed |
/// | `meridian_store_seq` | the store's latest seq |
/// | `meridian_store_oldest_seq` | the oldest seq the change log holds (`meridian_store_seq + 1` when it holds none) |
/// | `meridian_log_rows` | changes the log holds |
/// | `meridian_store_file_bytes` | the store file and its write-ahead log |
final class MetricsExporter: Sendable {
    let registry: PrometheusCollectorRegistry
    private let ready: Gauge
    private let connections: Gauge
    private let subscriptions: Gauge
    private let pending: Gauge
    private let queueBytes: Gauge
    private let queueBytesMax: Gauge
    private let queueRows: Gauge
    private let lagMax: Gauge
    private let fanoutSeq: Gauge
    private let storeSeq: Gauge
    private let oldestSeq: Gauge
    private let logRows: Gauge
    private let fileBytes: Gauge

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        func gauge(_ name: String, _ help: String) -> Gauge {
            registry.makeGauge(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help))
        }
        self.ready = gauge("meridian_ready", "1 when the store takes writes and the fan-out runs, else 0")
        self.connections = gauge("meridian_connections", "Client connections open")
        self.subscriptions = gauge("meridian_subscriptions", "Subscriptions held over all Sync streams")
        self.pending = gauge("meridian_pending_subscriptions", "Subscriptions waiting for their snapshot or resume")
        self.queueBytes = gauge("meridian_client_queue_bytes", "Bytes waiting in client queues, summed")
        self.queueBytesMax = gauge("meridian_client_queue_bytes_max", "Bytes waiting in the largest client queue")
        self.queueRows = gauge("meridian_client_queue_rows", "Row changes waiting in client queues, summed")
        self.lagMax = gauge("meridian_client_lag_seqs_max", "The furthest a stream is behind the fan-out, in seqs")
        self.fanoutSeq = gauge("meridian_fanout_seq", "The last seq the fan-out processed")
        self.storeSeq = gauge("meridian_store_seq", "The store's latest committed seq")
        self.oldestSeq = gauge("meridian_store_oldest_seq", "The oldest seq the change log holds")
        self.logRows = gauge("meridian_log_rows", "Changes the change log holds")
        self.fileBytes = gauge("meridian_store_file_bytes", "The store file and its write-ahead log, in bytes")
    }

    /// Sets the gauges from the server now, and writes the registry.
    func scrape(_ server: MeridianServer) async -> String {
        let status = server.status()
        self.set(status)
        if let log = try? await server.logStatistics() { self.set(log) }
        return self.registry.emitToString()
    }

    func set(_ status: ServerStatus) {
        self.ready.set(to: status.problem == nil ? 1 : 0)
        self.connections.set(to: Double(status.connections))
        self.subscriptions.set(to: Double(status.heldSubscriptions))
        self.pending.set(to: Double(status.pendingSubscriptions))
        self.queueBytes.set(to: Double(status.streams.reduce(0) { $0 + $1.queuedBytes }))
        self.queueBytesMax.set(to: Double(status.streams.map(\.queuedBytes).max() ?? 0))
        self.queueRows.set(to: Double(status.streams.reduce(0) { $0 + $1.queuedRows }))
        self.lagMax.set(to: Double(status.streams.map(\.lagSeqs).max() ?? 0))
        self.fanoutSeq.set(to: Double(status.seq))
    }

    func set(_ log: Store.LogStatistics) {
        self.storeSeq.set(to: Double(log.latestSeq))
        self.oldestSeq.set(to: Double(log.oldestSeq))
        self.logRows.set(to: Double(log.rows))
        self.fileBytes.set(to: Double(log.fileBytes))
    }
}
