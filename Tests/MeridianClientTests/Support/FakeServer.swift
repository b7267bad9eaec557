// MARK: - FakeServer
//
// A reference server for the tests without a network: it holds the whole table, answers the Sync messages a
// context sends (Hello with its subscriptions, Subscribe, Replace, Unsubscribe, Ack) and turns commits into the
// Batches the real server must send, computed the simplest way (evaluate every subscription before and after, and
// compare). Like the real server, it stages snapshots in chunks and makes them visible with a Batch, answers the
// subscriptions Hello re-adds in one Batch, and puts each subscription's epoch on what it sends about it.

import MeridianClient
import MeridianCore
import MeridianProto
import SwiftProtobuf

final class FakeServer {
    let schema: Schema
    private(set) var rows: [String: [String: Row]] = [:]
    private(set) var versions: [String: Int64] = [:]
    private(set) var seq: Int64 = 0
    /// Subscriptions by id: their bound request.
    private(set) var subscriptions: [String: BoundFetchRequest] = [:]
    /// The Subscribes received per id on the current stream (the epoch of each subscription).
    private(set) var epochs: [String: UInt32] = [:]
    /// Every message received, in order.
    private(set) var received: [Meridian_V1_SyncRequest] = []
    /// Chunk size for snapshots (rows per chunk).
    var chunkSize = 3

    init(schema: Schema) {
        self.schema = schema
    }

    /// The current result of a subscription.
    func result(_ subscription: String) -> [Row] {
        let bound = self.subscriptions[subscription]!
        return bound.evaluate(self.rows[bound.entity.name, default: [:]].values)
    }

    /// The result of any request over the current rows.
    func evaluate(_ request: FetchRequest) throws -> [Row] {
        let bound = try request.bind(to: self.schema)
        return bound.evaluate(self.rows[request.entity, default: [:]].values)
    }

    // MARK: Requests from the client

    /// Answers one client message.
    func handle(_ request: Meridian_V1_SyncRequest) throws -> [Meridian_V1_SyncResponse] {
        self.received.append(request)
        switch request.kind {
        case .hello(let hello):
            // A new stream: nothing of the previous one is held.
            self.subscriptions = [:]
            self.epochs = [:]
            var welcome = Meridian_V1_Welcome()
            welcome.seq = self.seq
            welcome.schemaFingerprint = self.schema.fingerprint
            welcome.heartbeatIntervalMs = 1000
            welcome.resumed = hello.hasResumeFromSeq
            welcome.protocolVersion = ProtocolVersion.current
            var responses: [Meridian_V1_SyncResponse] = [.with { $0.kind = .welcome(welcome) }]
            // Every re-added subscription is answered in one Batch, after the chunks of those that get snapshots.
            var batch = Meridian_V1_Batch()
            batch.seq = self.seq
            for subscribe in hello.subscriptions {
                let (chunks, delta) = try self.register(subscribe)
                responses += chunks
                batch.deltas.append(delta)
            }
            if !batch.deltas.isEmpty { responses.append(.with { $0.kind = .batch(batch) }) }
            return responses
        case .subscribe(let subscribe):
            let (chunks, delta) = try self.register(subscribe)
            var batch = Meridian_V1_Batch()
            batch.seq = self.seq
            batch.deltas = [delta]
            return chunks + [.with { $0.kind = .batch(batch) }]
        case .replace(let replace):
            let before = self.result(replace.subscriptionID)
            self.subscriptions[replace.subscriptionID] = try self.fetchRequest(replace.fetch).bind(to: self.schema)
            var delta = self.delta(replace.subscriptionID, before: before, after: self.result(replace.subscriptionID))
            delta.replaced = true
            var batch = Meridian_V1_Batch()
            batch.seq = self.seq
            batch.deltas = [delta]
            return [.with { $0.kind = .batch(batch) }]
        case .unsubscribe(let unsubscribe):
            self.subscriptions[unsubscribe.subscriptionID] = nil
            return []
        case .ack, .refresh, nil:
            return []
        }
    }

    /// Adds a subscription: the chunks of its snapshot and the delta (for the Batch) that makes it visible; for a
    /// resumed one, what it missed (the fake keeps no history, so nothing) as an empty delta with its id.
    private func register(
        _ subscribe: Meridian_V1_Subscribe
    ) throws -> (chunks: [Meridian_V1_SyncResponse], delta: Meridian_V1_SubscriptionDelta) {
        let id = subscribe.subscriptionID
        self.epochs[id, default: 0] += 1
        self.subscriptions[id] = try self.fetchRequest(subscribe.fetch).bind(to: self.schema)
        var delta = Meridian_V1_SubscriptionDelta()
        delta.subscriptionID = id
        delta.epoch = self.epochs[id]!
        if subscribe.resume { return ([], delta) }
        delta.snapshot = true
        return (self.chunks(id, resnapshot: false), delta)
    }

    /// The snapshot of a subscription: its chunks, then the Batch that makes it visible.
    func snapshot(_ id: String, resnapshot: Bool) -> [Meridian_V1_SyncResponse] {
        var ready = Meridian_V1_SubscriptionDelta()
        ready.subscriptionID = id
        ready.epoch = self.epochs[id] ?? 0
        ready.snapshot = true
        var batch = Meridian_V1_Batch()
        batch.seq = self.seq
        batch.deltas = [ready]
        return self.chunks(id, resnapshot: resnapshot) + [.with { $0.kind = .batch(batch) }]
    }

    /// The chunks of a subscription's snapshot (staged by the client until a Batch names it).
    func chunks(_ id: String, resnapshot: Bool) -> [Meridian_V1_SyncResponse] {
        let rows = self.result(id)
        var chunks: [Meridian_V1_SyncResponse] = []
        var index: UInt32 = 0
        var start = 0
        repeat {
            let end = min(rows.count, start + self.chunkSize)
            var chunk = Meridian_V1_SnapshotChunk()
            chunk.subscriptionID = id
            chunk.epoch = self.epochs[id] ?? 0
            chunk.seq = self.seq
            chunk.rows = rows[start..<end].map { Meridian_V1_Row($0, version: self.versions[$0.id] ?? 1) }
            chunk.chunkIndex = index
            chunk.last = end == rows.count
            chunk.resnapshot = resnapshot
            chunks.append(.with { $0.kind = .snapshotChunk(chunk) })
            index += 1
            start = end
        } while start < rows.count
        return chunks
    }

    // MARK: Commits

    /// Commits mutations to one entity and returns the Batch every subscription's delta goes in (nil when no
    /// subscription is affected).
    @discardableResult
    func commit(_ entity: String, _ mutations: [RowMutation]) -> Meridian_V1_SyncResponse? {
        let affected = self.subscriptions.filter { $0.value.entity.name == entity }.keys.sorted()
        let before = Dictionary(uniqueKeysWithValues: affected.map { ($0, self.result($0)) })
        self.seq += 1
        for mutation in mutations {
            switch mutation {
            case .upsert(let row):
                var clean = row
                clean.values = clean.values.filter { !$0.value.isNull }
                self.rows[entity, default: [:]][row.id] = clean
                self.versions[row.id, default: 0] += 1
            case .delete(let id):
                self.rows[entity]?[id] = nil
            }
        }
        var batch = Meridian_V1_Batch()
        batch.seq = self.seq
        for id in affected {
            let delta = self.delta(id, before: before[id]!, after: self.result(id))
            if !delta.entered.isEmpty || !delta.left.isEmpty || !delta.updated.isEmpty { batch.deltas.append(delta) }
        }
        return batch.deltas.isEmpty ? nil : .with { $0.kind = .batch(batch) }
    }

    /// Applies an Apply request like the store would (no conflicts checked) and returns the response and batch.
    func apply(_ request: Meridian_V1_ApplyRequest) -> (Meridian_V1_ApplyResponse, Meridian_V1_SyncResponse?) {
        var mutations: [String: [RowMutation]] = [:]
        for operation in request.operations {
            let values = (try? [String: Value](operation.values)) ?? [:]
            let current = self.rows[operation.entity]?[operation.id]
            switch operation.kind {
            case .delete:
                mutations[operation.entity, default: []].append(.delete(id: operation.id))
            case .insert:
                mutations[operation.entity, default: []].append(.upsert(Row(id: operation.id, values: values)))
            default:
                var row = current ?? Row(id: operation.id)
                for (k, v) in values { row.values[k] = v }
                mutations[operation.entity, default: []].append(.upsert(row))
            }
        }
        var batch: Meridian_V1_SyncResponse?
        for (entity, list) in mutations { batch = self.commit(entity, list) ?? batch }
        if batch == nil { self.seq += 0 }
        var response = Meridian_V1_ApplyResponse()
        var result = Meridian_V1_ApplyResult()
        result.seq = self.seq
        response.outcome = .result(result)
        return (response, batch)
    }

    /// A heartbeat at the current seq.
    func heartbeat() -> Meridian_V1_SyncResponse {
        var heartbeat = Meridian_V1_Heartbeat()
        heartbeat.seq = self.seq
        return .with { $0.kind = .heartbeat(heartbeat) }
    }

    /// Replaces the table without telling anyone (to test resnapshots).
    func silentlySet(_ entity: String, _ row: Row) {
        self.seq += 1
        self.rows[entity, default: [:]][row.id] = row
        self.versions[row.id, default: 0] += 1
    }

    private func delta(_ id: String, before: [Row], after: [Row]) -> Meridian_V1_SubscriptionDelta {
        var delta = Meridian_V1_SubscriptionDelta()
        delta.subscriptionID = id
        delta.epoch = self.epochs[id] ?? 0
        let old = Dictionary(uniqueKeysWithValues: before.map { ($0.id, $0) })
        let new = Dictionary(uniqueKeysWithValues: after.map { ($0.id, $0) })
        for row in before where new[row.id] == nil { delta.left.append(row.id) }
        for row in after {
            if let previous = old[row.id] {
                if previous != row {
                    delta.updated.append(
                        Meridian_V1_RowUpdate(
                            row, version: self.versions[row.id] ?? 1, changed: row.changedAttributes(from: previous)))
                }
            } else {
                delta.entered.append(Meridian_V1_Row(row, version: self.versions[row.id] ?? 1))
            }
        }
        return delta
    }

    private func fetchRequest(_ wire: Meridian_V1_FetchRequest) throws -> FetchRequest {
        let variables = try wire.decodedVariables().mapValues { variable -> PredicateVariable in
            switch variable {
            case .value(let value): .value(value)
            case .list(let values): .list(values)
            }
        }
        return try FetchRequest(
            entity: wire.entity,
            where: wire.predicate,
            variables: variables,
            sortedBy: wire.sortKeys.map { ($0.ascending ? "" : "-") + $0.attribute }.joined(separator: ","),
            sectionKey: wire.sectionKeyIfPresent,
            limit: try wire.limitIfPresent().map(Int.init)
        )
    }
}
