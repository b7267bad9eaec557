// MARK: - Persistence
//
// A persisted context restores everything at start-up (controllers created afterwards show the cached rows at
// once) and records what each commit changed into `delta`, which `flush()` hands to the cache file as one SQLite
// transaction, in commit order.

internal import Logging
internal import MeridianCore
internal import MeridianProto
internal import SwiftProtobuf

extension CacheContext {
    /// Rebuilds the context from a persisted cache.
    func restore(from cache: PersistedCache) throws(ClientError) {
        self.appliedSeq = cache.seq
        if self.schema == nil, let bytes = cache.schema, !bytes.isEmpty {
            do {
                self.schema = try Schema(Meridian_V1_Schema(serializedBytes: bytes))
            } catch {
                throw ClientError(.cacheFailure, "the cached schema does not decode: \(error)", cause: error)
            }
        }
        var rows: [RowKey: (row: Row, version: Int64)] = [:]
        for (entity, id, bytes) in cache.rows {
            guard let proto = try? Meridian_V1_Row(serializedBytes: bytes), let row = try? Row(proto) else {
                self.logger.warning(
                    "skipping a cached row that does not decode", metadata: ["meridian.row.id": "\(id)"])
                continue
            }
            rows[RowKey(entity: entity, id: id)] = (row, proto.version)
        }
        var members: [String: [String]] = [:]
        for (subscription, id) in cache.memberships { members[subscription, default: []].append(id) }
        for persisted in cache.subscriptions {
            guard let wire = try? Meridian_V1_FetchRequest(serializedBytes: persisted.request),
                let request = try? FetchRequest(wire: wire),
                let schema = self.schema,
                let bound = try? request.bind(to: schema)
            else {
                self.logger.warning(
                    "dropping a cached subscription that no longer binds",
                    metadata: ["meridian.subscription.id": "\(persisted.id)"])
                self.delta.subscriptions[persisted.id] = .some(nil)
                continue
            }
            var subscription = SubscriptionState(
                id: persisted.id, request: request, bound: bound, shareable: persisted.shareable)
            subscription.hasData = persisted.hasData
            for id in members[persisted.id] ?? [] {
                guard let (row, version) = rows[RowKey(entity: request.entity, id: id)] else { continue }
                subscription.members.insert(id)
                var cached = self.rows[request.entity]?[id] ?? CachedRow(row: row, version: version, references: 0)
                cached.references += 1
                self.rows[request.entity, default: [:]][id] = cached
            }
            self.subscriptions[persisted.id] = subscription
            if !persisted.shareable {
                self.nextPrivateSubscription = max(
                    self.nextPrivateSubscription,
                    (Int(persisted.id.dropFirst(2).prefix { $0 != "-" }) ?? 0) + 1)
            }
        }
        for persisted in cache.transactions {
            guard let request = try? Meridian_V1_ApplyRequest(serializedBytes: persisted.request) else { continue }
            let phase: TransactionState.Phase = persisted.commitSeq.map { .committed($0) } ?? .queued
            self.enqueue(
                TransactionState(id: persisted.localID, request: request, phase: phase, keys: []), showing: false)
        }
        self.delta.transactions = [:]
        self.view.withLock { $0.seq = cache.seq }
    }

    /// Records a cached row's current state (or its removal) for the next flush.
    func recordRow(_ entity: String, _ id: String) {
        guard self.file != nil else { return }
        let key = RowKey(entity: entity, id: id)
        if let cached = self.rows[entity]?[id] {
            self.delta.rows[key] = .some(Meridian_V1_Row(cached.row, version: cached.version).serializedBytesOrEmpty)
        } else {
            self.delta.rows[key] = .some(nil)
        }
    }

    /// Records a subscription's current state for the next flush.
    func recordSubscription(_ id: String) {
        guard self.file != nil, let subscription = self.subscriptions[id] else { return }
        self.delta.subscriptions[id] = PersistedSubscription(
            id: id,
            request: Meridian_V1_FetchRequest(subscription.request).serializedBytesOrEmpty,
            hasData: subscription.hasData,
            shareable: subscription.shareable)
    }

    /// Records a queued transaction for the next flush.
    func recordTransaction(_ transaction: TransactionState) {
        guard self.file != nil else { return }
        var commitSeq: Int64?
        if case .committed(let seq) = transaction.phase { commitSeq = seq }
        self.delta.transactions[transaction.id] = PersistedTransaction(
            localID: transaction.id, request: transaction.request.serializedBytesOrEmpty, commitSeq: commitSeq)
    }

    /// Hands the recorded changes to the cache file (one SQLite transaction, written in order off the actor).
    func flush() {
        guard let file else {
            self.delta = CacheDelta()
            return
        }
        guard !self.delta.isEmpty else { return }
        file.write(self.delta)
        self.delta = CacheDelta()
    }

    /// Waits until everything recorded so far is on disk.
    package func flushToDisk() async {
        self.flush()
        await self.file?.flush()
    }
}

extension SwiftProtobuf.Message {
    /// The message's bytes (empty if it cannot be serialized, which never happens for our messages).
    var serializedBytesOrEmpty: [UInt8] {
        (try? self.serializedBytes()) ?? []
    }
}
