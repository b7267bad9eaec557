// MARK: - Writes
//
// The context is a transaction: operations are staged (insert, update, upsert, delete), checked against the schema
// as they are staged, and `save()` turns them into one `Apply`. Saved operations are shown at once through the
// overlay (pending), queued (and persisted) until the connection sends them, then confirmed when the applied seq
// reaches the commit's seq, or reverted with a change set and the server's error.

public import MeridianCore
package import MeridianProto

/// A saved transaction: shown at once in controllers (pending), then confirmed or reverted.
public struct PendingTransaction: Sendable, Hashable {
    /// The transaction's local number (0 when the save had nothing to write).
    public let id: Int64
    let context: CacheContext

    /// Waits until the server has committed the transaction and the context has applied its seq (so every
    /// controller shows the confirmed state), and returns that seq.
    ///
    /// - Throws: ``ClientError`` with the server's reason when the transaction was rejected (its changes were
    ///   reverted), or `cancelled`.
    @discardableResult
    public func confirmed() async throws(ClientError) -> Int64 {
        do {
            return try await self.context.waitForTransaction(self.id)
        } catch {
            throw ClientError(calling: error)
        }
    }

    public static func == (lhs: PendingTransaction, rhs: PendingTransaction) -> Bool {
        lhs.id == rhs.id && lhs.context === rhs.context
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(self.id) }
}

/// One pending operation on one row, as the overlay folds it over the server's row.
struct OverlayOperation {
    let transaction: Int64
    let kind: WriteOperation.Kind
    let values: [String: Value]

    /// The row after this operation, given the row before it (`nil`: absent).
    func apply(to row: Row?, id: String, entity: EntitySchema?) -> Row? {
        switch self.kind {
        case .delete:
            return nil
        case .update:
            guard var row else { return nil }
            Self.merge(self.values, into: &row)
            return row
        case .insert, .upsert:
            var result: Row
            if self.kind == .upsert, let row {
                result = row
            } else {
                result = Row(id: id, values: Self.defaults(of: entity))
            }
            Self.merge(self.values, into: &result)
            return result
        }
    }

    private static func merge(_ values: [String: Value], into row: inout Row) {
        for (name, value) in values {
            // Not `value.isNull ? nil : value`: `Value` is expressible by `nil`, which would store `.null`.
            if value.isNull {
                row.values.removeValue(forKey: name)
            } else {
                row.values[name] = value
            }
        }
    }

    private static func defaults(of entity: EntitySchema?) -> [String: Value] {
        var values: [String: Value] = [:]
        for attribute in entity?.attributes ?? [] {
            if let value = attribute.defaultValue, !value.isNull { values[attribute.name] = value }
        }
        return values
    }
}

/// A saved transaction in the queue.
struct TransactionState {
    enum Phase: Equatable {
        case queued
        case sending
        case committed(Int64)
    }

    let id: Int64
    let request: Meridian_V1_ApplyRequest
    var phase: Phase
    let keys: [RowKey]
}

extension CacheContext {
    // MARK: - Staging (typed)

    /// Stages the insert of a model value (every property is written).
    ///
    /// - Throws: ``ClientError`` (`modelMismatch`, `unknownEntity`, `unknownAttribute`, `validation`).
    public func insert<Model: MeridianModel>(_ model: Model) throws(ClientError) {
        let row = try model.row()
        try self.stage(.insert, Model.entityName, id: row.id, values: row.values)
    }

    /// Stages an update of a model value: only the attributes that differ from what the cache shows are written,
    /// with the cached version as the expected version (nothing is staged when nothing changed).
    ///
    /// - Throws: ``ClientError`` (`modelMismatch`, `validation`, …).
    public func update<Model: MeridianModel>(_ model: Model) throws(ClientError) {
        let row = try model.row()
        guard let current = self.currentRow(Model.entityName, row.id) else {
            try self.stage(.update, Model.entityName, id: row.id, values: row.values)
            return
        }
        var changed: [String: Value] = [:]
        for name in row.changedAttributes(from: current) { changed[name] = row[name] }
        guard !changed.isEmpty else { return }
        try self.stage(
            .update, Model.entityName, id: row.id, values: changed,
            expectedVersion: self.rows[Model.entityName]?[row.id]?.version)
    }

    /// Stages the upsert of a model value (inserted if absent, else every property written).
    public func upsert<Model: MeridianModel>(_ model: Model) throws(ClientError) {
        let row = try model.row()
        try self.stage(.upsert, Model.entityName, id: row.id, values: row.values)
    }

    /// Stages the delete of a model value's row.
    public func delete<Model: MeridianModel>(_ model: Model) throws(ClientError) {
        try self.delete(Model.self, id: model.id)
    }

    /// Stages the delete of a row by id.
    public func delete<Model: MeridianModel>(_ type: Model.Type, id: String) throws(ClientError) {
        try self.stage(
            .delete, Model.entityName, id: id, values: [:], expectedVersion: self.rows[Model.entityName]?[id]?.version)
    }

    /// Stages an update of one attribute of a row, named by a typed reference.
    ///
    /// ```swift
    /// try await context.update(Point.self, id: "p1", set: Point.Attr.title, to: "Café de Flore")
    /// ```
    public func update<Model: MeridianModel, T>(
        _ type: Model.Type,
        id: String,
        set attribute: AttributeRef<Model, T>,
        to value: T
    ) throws(ClientError) {
        let converted = attributeValue(value) ?? value.predicateValue
        try self.stage(
            .update, Model.entityName, id: id, values: [attribute.name: converted],
            expectedVersion: self.rows[Model.entityName]?[id]?.version)
    }

    // MARK: - Staging (untyped)

    /// Stages an insert; without an id, the context generates one (a time-ordered UUID), so the row shows at once
    /// under its final id.
    ///
    /// - Returns: The row's id.
    @discardableResult
    public func insert(into entity: String, id: String? = nil, values: [String: Value]) throws(ClientError) -> String {
        let id = id ?? Self.generateID()
        try self.stage(.insert, entity, id: id, values: values)
        return id
    }

    /// Stages an update of the given attributes (an explicit `.null` clears one).
    public func update(
        _ entity: String,
        id: String,
        values: [String: Value],
        expectedVersion: Int64? = nil
    ) throws(ClientError) {
        try self.stage(.update, entity, id: id, values: values, expectedVersion: expectedVersion)
    }

    /// Stages an upsert.
    public func upsert(_ entity: String, id: String, values: [String: Value]) throws(ClientError) {
        try self.stage(.upsert, entity, id: id, values: values)
    }

    /// Stages a delete.
    public func delete(_ entity: String, id: String, expectedVersion: Int64? = nil) throws(ClientError) {
        try self.stage(.delete, entity, id: id, values: [:], expectedVersion: expectedVersion)
    }

    /// Whether operations are staged and not yet saved.
    public var hasChanges: Bool { !self.staged.isEmpty }

    /// Drops the staged operations.
    public func rollback() {
        self.staged = []
    }

    /// The version of a cached row (the one an update expects), or `nil` when the row is not cached.
    public func version(of entity: String, id: String) -> Int64? {
        self.rows[entity]?[id]?.version
    }

    // MARK: - Save

    /// Saves the staged operations as one transaction: controllers show them at once, marked pending; the
    /// connection sends one `Apply` (now, or when it reconnects: the queue is persisted with the cache).
    ///
    /// ```swift
    /// try await context.insert(point)
    /// let transaction = try await context.save()
    /// try await transaction.confirmed()
    /// ```
    ///
    /// - Parameter policy: How conflicts with concurrent changes are settled.
    /// - Returns: The pending transaction (`id` 0 when nothing was staged).
    @discardableResult
    public func save(policy: ConflictPolicy = .storeWins) -> PendingTransaction {
        guard !self.staged.isEmpty else { return PendingTransaction(id: 0, context: self) }
        let id = self.nextTransactionID
        self.nextTransactionID += 1
        var request = Meridian_V1_ApplyRequest()
        request.operations = self.staged
        request.conflictPolicy = Meridian_V1_ConflictPolicy(policy)
        request.clientTag = String(id)
        // A retry after a lost answer (the connection dropped mid-call) is then answered, not applied twice.
        request.idempotencyKey = String(self.transactionKeyPrefix, radix: 16) + ":" + String(id)
        self.staged = []
        self.enqueue(TransactionState(id: id, request: request, phase: .queued, keys: []), showing: true)
        self.flush()
        self.writeSignal?.yield()
        return PendingTransaction(id: id, context: self)
    }

    /// Adds a transaction to the queue and its operations to the overlay, committing the optimistic change.
    func enqueue(_ transaction: TransactionState, showing: Bool) {
        var keys: [RowKey] = []
        for operation in transaction.request.operations {
            let key = RowKey(entity: operation.entity, id: operation.id)
            keys.append(key)
            let kind = (try? WriteOperation.Kind(operation.kind)) ?? .update
            let values = (try? [String: Value](operation.values)) ?? [:]
            self.overlay[key, default: []].append(
                OverlayOperation(transaction: transaction.id, kind: kind, values: values))
        }
        let state = TransactionState(
            id: transaction.id, request: transaction.request, phase: transaction.phase, keys: keys)
        self.transactions.append(state)
        self.nextTransactionID = max(self.nextTransactionID, transaction.id + 1)
        self.recordTransaction(state)
        guard showing else { return }
        var work = CommitWork()
        for key in Set(keys) { self.touch(key.entity, key.id, work: &work) }
        self.commit(work, cause: .localWrite)
    }

    // MARK: - The connection's side

    /// The oldest queued transaction, marked as being sent, or `nil` when none is queued or one is in flight
    /// (transactions are sent one at a time, in save order).
    package func nextTransactionToSend() -> (id: Int64, request: Meridian_V1_ApplyRequest)? {
        guard !self.transactions.contains(where: { $0.phase == .sending }),
            let i = self.transactions.firstIndex(where: { $0.phase == .queued })
        else { return nil }
        self.transactions[i].phase = .sending
        return (self.transactions[i].id, self.transactions[i].request)
    }

    /// Installs the signal the connection's writer waits on.
    func setWriteSignal(_ signal: AsyncStream<Void>.Continuation?) {
        self.writeSignal = signal
        signal?.yield()
    }

    /// The server answered an `Apply`: committed (confirmed once its seq is applied) or rejected (reverted now).
    package func transactionAnswered(_ id: Int64, response: Meridian_V1_ApplyResponse) {
        guard let i = self.transactions.firstIndex(where: { $0.id == id }) else { return }
        switch response.outcome {
        case .result(let result)?:
            self.transactions[i].phase = .committed(result.seq)
            self.recordTransaction(self.transactions[i])
            if result.seq <= self.appliedSeq {
                self.advance(to: self.appliedSeq, work: CommitWork(), cause: .confirmed)
            } else {
                self.flush()
            }
        case .error(let detail)?:
            self.reject(id, with: ClientError(detail))
        case nil:
            self.reject(
                id, with: ClientError(.internal, "the server answered Apply with neither a result nor an error"))
        }
        self.writeSignal?.yield()
    }

    /// Sending an `Apply` failed: transient failures (server unreachable) requeue it; others reject it.
    package func transactionFailed(_ id: Int64, error: ClientError) {
        guard let i = self.transactions.firstIndex(where: { $0.id == id }) else { return }
        if error.isTransient || error.code == .cancelled {
            self.transactions[i].phase = .queued
        } else {
            self.reject(id, with: error)
        }
    }

    /// Waits for a transaction's outcome.
    func waitForTransaction(_ id: Int64) async throws -> Int64 {
        if id == 0 { return self.appliedSeq }
        if let outcome = self.outcomes[id] { return try outcome.get() }
        return try await withCheckedThrowingContinuation { continuation in
            self.transactionWaiters[id, default: []].append(continuation)
        }
    }

    /// The number of transactions not yet confirmed or rejected.
    public var pendingTransactionCount: Int { self.transactions.count }

    // MARK: - Confirm and revert

    /// Removes the transactions committed at or before `seq` from the queue and the overlay.
    ///
    /// - Returns: The confirmed transactions' ids and commit seqs.
    func confirmTransactions(upTo seq: Int64, work: inout CommitWork) -> [(Int64, Int64)] {
        var confirmed: [(Int64, Int64)] = []
        for transaction in self.transactions {
            guard case .committed(let commitSeq) = transaction.phase, commitSeq <= seq else { continue }
            confirmed.append((transaction.id, commitSeq))
            self.removeFromOverlay(transaction, work: &work)
        }
        if !confirmed.isEmpty {
            let ids = Set(confirmed.map(\.0))
            self.transactions.removeAll { ids.contains($0.id) }
        }
        return confirmed
    }

    /// Reverts a rejected transaction: its operations leave the overlay and controllers get the change set.
    func reject(_ id: Int64, with error: ClientError) {
        guard let i = self.transactions.firstIndex(where: { $0.id == id }) else { return }
        let transaction = self.transactions.remove(at: i)
        var work = CommitWork()
        self.removeFromOverlay(transaction, work: &work)
        self.commit(work, cause: .reverted, error: error)
        self.flush()
        self.resolveWaiters(id, with: .failure(error))
    }

    private func removeFromOverlay(_ transaction: TransactionState, work: inout CommitWork) {
        for key in Set(transaction.keys) {
            self.overlay[key]?.removeAll { $0.transaction == transaction.id }
            if self.overlay[key]?.isEmpty == true { self.overlay[key] = nil }
            self.touch(key.entity, key.id, work: &work)
        }
        self.delta.transactions[transaction.id] = .some(nil)
    }

    /// Resumes the tasks waiting for a transaction, and remembers the outcome for later waiters.
    func resolveWaiters(_ id: Int64, with outcome: Result<Int64, ClientError>) {
        self.outcomes[id] = outcome
        if self.outcomes.count > 4096, let oldest = self.outcomes.keys.min() { self.outcomes[oldest] = nil }
        for waiter in self.transactionWaiters.removeValue(forKey: id) ?? [] {
            waiter.resume(with: outcome.mapError { $0 as any Error })
        }
    }

    // MARK: - Helpers

    /// The row as the context currently shows it: the server's, with pending and staged operations on top.
    func currentRow(_ entity: String, _ id: String) -> Row? {
        let schemaEntity = self.schema?.entity(named: entity)
        var row = self.serverRow(entity, id)
        for operation in self.overlay[RowKey(entity: entity, id: id)] ?? [] {
            row = operation.apply(to: row, id: id, entity: schemaEntity)
        }
        return row
    }

    /// Checks an operation against the schema (when known), with the rules the store applies (MeridianCore's one
    /// validation: a write shown here is never one the store refuses for its shape), and stages it.
    private func stage(
        _ kind: WriteOperation.Kind,
        _ entity: String,
        id: String,
        values: [String: Value],
        expectedVersion: Int64? = nil
    ) throws(ClientError) {
        let operation = WriteOperation(
            kind: kind, entity: entity, id: id, values: values, expectedVersion: expectedVersion)
        if let schema {
            do {
                _ = try schema.validate(operation, index: self.staged.count)
            } catch {
                throw ClientError(error)
            }
        }
        self.staged.append(Meridian_V1_Operation(operation))
    }

    /// A new row id: a time-ordered UUID (version 7), as the store generates (`RandomID`), so that rows a client
    /// creates also append to the primary key's B-tree on the server.
    static func generateID() -> String {
        RandomID.uuidString()
    }
}
