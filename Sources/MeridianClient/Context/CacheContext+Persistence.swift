// MARK: - CacheContext: persistence
//
// A persisted context restores everything at start-up (controllers created afterwards show the cached rows at
// once). The replica state and the write queue record what each step changed, in Core terms; `flush()` encodes it
// into one `CacheDelta` and hands it to the cache file as one SQLite transaction, in commit order.

internal import Logging
internal import MeridianCore
internal import MeridianProto
internal import SwiftProtobuf

extension CacheContext {
    /// Rebuilds the context from a persisted cache.
    func restore(from cache: PersistedCache) throws(ClientError) {
        self.replica.restore(seq: cache.seq)
        if self.schema == nil, let bytes = cache.schema, !bytes.isEmpty {
            do {
                self.schema = try Schema(Meridian_V1_Schema(serializedBytes: bytes))
            } catch {
                throw ClientError(.cacheFailure, "the cached schema does not decode: \(error)", cause: error)
            }
        }
        var rows: [RowKey: VersionedRow] = [:]
        for (entity, id, bytes) in cache.rows {
            guard let proto = try? Meridian_V1_Row(serializedBytes: bytes), let row = try? VersionedRow(proto) else {
                self.logger.warning(
                    "skipping a cached row that does not decode", metadata: ["meridian.row.id": "\(id)"])
                continue
            }
            rows[RowKey(entity: entity, id: id)] = row
        }
        var members: [String: [String]] = [:]
        var unheld: [String] = []
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
                self.replica.forget(persisted.id)
                continue
            }
            var subscription = SubscriptionState(
                id: persisted.id, request: request, bound: bound, shareable: persisted.shareable)
            subscription.hasData = persisted.hasData
            self.replica.restore(subscription, members: members[persisted.id] ?? [], rows: rows)
            if !persisted.shareable { unheld.append(persisted.id) }
        }
        // A private subscription (a map model's own region) belonged to a controller of an earlier process: no
        // controller can ever hold it again (each gets a new id), so it is dropped with the rows only it held,
        // instead of being re-added on every connection (one more per incarnation, until TOO_MANY_SUBSCRIPTIONS;
        // found by meridian-check).
        for id in unheld { self.replica.remove(id) }
        for persisted in cache.transactions {
            do {
                let request = try Meridian_V1_ApplyRequest(serializedBytes: persisted.request)
                self.writes.enqueue(
                    try QueuedTransaction(id: persisted.localID, request: request, commitSeq: persisted.commitSeq))
            } catch {
                self.logger.warning(
                    "skipping a cached transaction that does not decode",
                    metadata: ["meridian.transaction.id": "\(persisted.localID)", "meridian.error": "\(error)"])
            }
        }
        self.writes.discardChanges()
        self.view.withLock { $0.seq = cache.seq }
        self.flush()
    }

    /// Hands what changed since the last flush to the cache file (one SQLite transaction, written in order off the
    /// actor).
    func flush() {
        let replicaChanges = self.replica.takeChanges()
        let transactionChanges = self.writes.takeChanges()
        let schemaChanged = self.schemaChanged
        self.schemaChanged = false
        guard let file else { return }
        var delta = CacheDelta()
        delta.seq = replicaChanges.seq
        if schemaChanged, let schema { delta.schema = Meridian_V1_Schema(schema).serializedBytesOrEmpty }
        for (key, row) in replicaChanges.rows {
            delta.rows[key] = .some(row.map { Meridian_V1_Row($0.row, version: $0.version).serializedBytesOrEmpty })
        }
        delta.memberships = replicaChanges.memberships
        for (id, record) in replicaChanges.subscriptions {
            delta.subscriptions[id] = .some(
                record.map { record in
                    PersistedSubscription(
                        id: id, request: Meridian_V1_FetchRequest(record.request).serializedBytesOrEmpty,
                        hasData: record.hasData, shareable: record.shareable)
                })
        }
        for (id, transaction) in transactionChanges {
            delta.transactions[id] = .some(
                transaction.map { transaction in
                    var commitSeq: Int64?
                    if case .committed(let seq) = transaction.phase { commitSeq = seq }
                    return PersistedTransaction(
                        localID: id, request: Meridian_V1_ApplyRequest(transaction).serializedBytesOrEmpty,
                        commitSeq: commitSeq)
                })
        }
        guard !delta.isEmpty else { return }
        file.write(delta)
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
