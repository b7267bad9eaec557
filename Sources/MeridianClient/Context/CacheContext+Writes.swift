// MARK: - CacheContext: writes
//
// The context is a transaction: operations are staged (insert, update, upsert, delete), checked against the schema
// as they are staged, and `save()` turns them into one queued transaction (WriteQueue). Saved operations are shown at
// once through the overlay (pending), queued (and persisted) until the connection sends them as one `Apply`, then
// confirmed when the applied seq reaches the commit's seq, or reverted with a change set and the server's error.

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
            expectedVersion: self.replica.version(Model.entityName, row.id))
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
            .delete, Model.entityName, id: id, values: [:], expectedVersion: self.replica.version(Model.entityName, id))
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
            expectedVersion: self.replica.version(Model.entityName, id))
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
    public var hasChanges: Bool { self.writes.hasStaged }

    /// Drops the staged operations.
    public func rollback() {
        self.writes.rollback()
    }

    /// The version of a cached row (the one an update expects), or `nil` when the row is not cached.
    public func version(of entity: String, id: String) -> Int64? {
        self.replica.version(entity, id)
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
        guard let transaction = self.writes.save(policy: policy) else {
            return PendingTransaction(id: 0, context: self)
        }
        self.show(transaction)
        self.flush()
        self.writeSignal?.yield()
        return PendingTransaction(id: transaction.id, context: self)
    }

    /// Commits the optimistic change of a transaction just queued: controllers show its rows, pending.
    private func show(_ transaction: QueuedTransaction) {
        var work = CommitWork()
        for key in Set(transaction.operations.map(\.key)) { self.replica.touch(key.entity, key.id, work: &work) }
        self.commit(work, cause: .localWrite)
    }

    // MARK: - The connection's side

    /// The oldest queued transaction, marked as being sent, or `nil` when none is queued or `inFlightLimit` are in
    /// flight (transactions are sent in save order).
    package func nextTransactionToSend(inFlightLimit: Int = 1) -> (id: Int64, request: Meridian_V1_ApplyRequest)? {
        self.writes.nextToSend(inFlightLimit: inFlightLimit).map { ($0.id, Meridian_V1_ApplyRequest($0)) }
    }

    /// Whether a saved transaction waits to be sent.
    var hasTransactionToSend: Bool { self.writes.transactions.contains { $0.phase == .queued } }

    /// Installs the signal the connection's writer waits on.
    func setWriteSignal(_ signal: AsyncStream<Void>.Continuation?) {
        self.writeSignal = signal
        signal?.yield()
    }

    /// The server answered an `Apply` (for tests and tools; the connection decodes the answer outside the actor).
    package func transactionAnswered(_ id: Int64, response: Meridian_V1_ApplyResponse) {
        self.transactionAnswered(id, outcome: ApplyOutcome(response))
    }

    /// The server answered an `Apply`: committed (confirmed once its seq is applied) or rejected (reverted now).
    func transactionAnswered(_ id: Int64, outcome: ApplyOutcome) {
        guard self.writes.contains(id) else { return }
        switch outcome {
        case .committed(let seq):
            self.writes.committed(id, at: seq)
            if seq <= self.replica.appliedSeq {
                self.finishStep(CommitWork(), moved: false, cause: .confirmed)
            } else {
                self.flush()
            }
        case .rejected(let error):
            self.reject(id, with: error)
        }
        self.writeSignal?.yield()
    }

    /// Sending an `Apply` failed: transient failures (server unreachable) requeue it; others reject it.
    package func transactionFailed(_ id: Int64, error: ClientError) {
        guard self.writes.contains(id) else { return }
        if error.isTransient || error.code == .cancelled {
            self.writes.requeue(id)
        } else {
            self.reject(id, with: error)
        }
    }

    /// Waits for a transaction's outcome.
    func waitForTransaction(_ id: Int64) async throws -> Int64 {
        if id == 0 { return self.replica.appliedSeq }
        if let outcome = self.outcomes[id] { return try outcome.get() }
        return try await withCheckedThrowingContinuation { continuation in
            self.transactionWaiters[id, default: []].append(continuation)
        }
    }

    /// The number of transactions not yet confirmed or rejected.
    public var pendingTransactionCount: Int { self.writes.transactions.count }

    // MARK: - Revert

    /// Reverts a rejected transaction: its operations leave the overlay and controllers get the change set.
    func reject(_ id: Int64, with error: ClientError) {
        guard let rows = self.writes.reject(id) else { return }
        var work = CommitWork()
        for key in rows { self.replica.touch(key.entity, key.id, work: &work) }
        self.commit(work, cause: .reverted, error: error)
        self.flush()
        self.resolveWaiters(id, with: .failure(error))
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

    /// Checks an operation against the schema (when known) and stages it (see ``WriteQueue/stage(_:schema:)``).
    private func stage(
        _ kind: WriteOperation.Kind,
        _ entity: String,
        id: String,
        values: [String: Value],
        expectedVersion: Int64? = nil
    ) throws(ClientError) {
        try self.writes.stage(
            WriteOperation(kind: kind, entity: entity, id: id, values: values, expectedVersion: expectedVersion),
            schema: self.schema)
    }

    /// A new row id: a time-ordered UUID (version 7), as the store generates (`RandomID`), so that rows a client
    /// creates also append to the primary key's B-tree on the server.
    static func generateID() -> String {
        RandomID.uuidString()
    }
}
