// MARK: - ServerStatus: what the admin endpoint shows

internal import MeridianCore
public import MeridianStore
internal import Synchronization

/// The server's state at one instant, for the admin endpoint's gauges and status page (``MeridianServer/status()``).
public struct ServerStatus: Sendable {
    /// One open `Sync` stream.
    public struct Stream: Sendable, Hashable {
        /// The `client_name` its Hello gave.
        public var name: String
        /// The peer, as gRPC names it (`ipv4:127.0.0.1:50312`).
        public var peer: String
        /// The authenticated subject, `nil` for an anonymous stream.
        public var subject: String?
        /// The subscriptions it holds (shown and pending).
        public var subscriptions: Int
        /// Row changes waiting in its queue.
        public var queuedRows: Int
        /// About the bytes waiting in its queue (batches and snapshot rows).
        public var queuedBytes: Int
        /// The seq of the last batch written to it.
        public var sentSeq: Int64
        /// How far behind the fan-out it is, in seqs (0 when it has everything the fan-out processed, or nothing
        /// it subscribes to changed since).
        public var lagSeqs: Int64
        /// How long the stream has been open.
        public var age: Duration
    }

    /// One distinct subscription: the clients whose requests are equal share it.
    public struct Subscription: Sendable, Hashable {
        public var entity: String
        /// The bound predicate, as text.
        public var predicate: String
        public var limit: Int?
        /// The subscriptions (over all streams) that share it.
        public var holders: Int
        /// Batches that touched its entity, each evaluated once for every holder.
        public var evaluations: Int
        /// Row changes sent for it, counted once per holder: its cost.
        public var rowsSent: Int
    }

    /// The last seq the fan-out processed.
    public var seq: Int64
    /// Why the server is not ready (the store takes no writes, the fan-out stopped, shutting down); `nil` when ready.
    public var problem: String?
    /// Client connections open now (HTTP/2; 0 for an in-process server).
    public var connections: Int
    /// The open `Sync` streams, oldest first.
    public var streams: [Stream]
    /// The distinct subscriptions, costliest first.
    public var subscriptions: [Subscription]
    /// Subscriptions waiting for their snapshot or resume read.
    public var pendingSubscriptions: Int

    /// Subscriptions held over all streams.
    public var heldSubscriptions: Int { self.streams.reduce(0) { $0 + $1.subscriptions } }
}

extension MeridianServer {
    /// The server's state now: streams, their queues and lag, distinct subscriptions by cost, readiness.
    public func status() -> ServerStatus {
        var status = self.hub.status()
        status.problem = self.health.problem
        status.connections = self.openConnections
        return status
    }

    /// Why the server is not ready to serve — its store takes no writes, its fan-out stopped, or it is shutting
    /// down — or `nil` when it is (what `/readyz` and the gRPC health service say).
    public var readinessProblem: String? { self.health.problem }

    /// The store's log: latest seq, oldest seq held, rows, file size (read from the store).
    public func logStatistics() async throws -> Store.LogStatistics {
        try await self.store.logStatistics()
    }
}

extension Hub {
    /// Streams, queues and distinct subscriptions, read under the registry's lock (a few µs a client).
    func status() -> ServerStatus {
        let now = ContinuousClock.now
        return self.state.withLock { state in
            let streams = state.clients.sorted { $0.key < $1.key }.map { _, client in
                let load = client.outbox.load
                return ServerStatus.Stream(
                    name: client.name, peer: client.peer, subject: client.subject,
                    subscriptions: client.subscriptions.count, queuedRows: load.rows, queuedBytes: load.bytes,
                    sentSeq: load.sentSeq, lagSeqs: load.rows == 0 ? 0 : max(0, state.processedSeq - load.sentSeq),
                    age: now - client.connectedAt)
            }
            let subscriptions = state.distinct.values.map { distinct in
                ServerStatus.Subscription(
                    entity: distinct.request.entity.name, predicate: distinct.request.predicate.description,
                    limit: distinct.request.limit,
                    holders: distinct.holders.values.reduce(0) { $0 + $1.count },
                    evaluations: distinct.evaluations, rowsSent: distinct.rowsSent)
            }.sorted { ($0.rowsSent, $0.holders) > ($1.rowsSent, $1.holders) }
            return ServerStatus(
                seq: state.processedSeq, problem: nil, connections: 0, streams: streams,
                subscriptions: subscriptions, pendingSubscriptions: state.pendings.count)
        }
    }
}
