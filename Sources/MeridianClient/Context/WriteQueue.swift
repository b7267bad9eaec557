// MARK: - WriteQueue
//
// The client's writes as a value, on Core types: operations staged (checked against the schema as they are staged),
// saved transactions queued in save order and sent in that order (pipelined on the connection's one ApplyStream),
// and the overlay — the pending operations by row — that controllers show on top of the server's rows until each
// transaction is confirmed (its commit seq applied) or rejected (reverted). The context's actor owns one; the wire
// form of a transaction is made only when it is sent or persisted (`QueuedTransaction+Wire.swift`).

internal import MeridianCore

/// The staged operations, the queue of saved transactions and their overlay.
struct WriteQueue: Sendable {
    /// Operations staged since the last save or rollback.
    private(set) var staged: [WriteOperation] = []
    /// Saved transactions not yet confirmed or rejected, oldest first.
    private(set) var transactions: [QueuedTransaction] = []
    /// Pending operations by row, in save order: what the controllers show on top of the server's rows.
    private(set) var overlay: [RowKey: [OverlayOperation]] = [:]
    /// The next transaction's local number.
    private(set) var nextTransactionID: Int64 = 1
    /// Makes this queue's idempotency keys (`IDENTITY:N`) unique: random per context, so numbers restarting after a
    /// restart never repeat a key the server remembers. Restored transactions keep the keys they were saved with.
    let identity: UInt64
    /// Transactions saved, changed (nil: removed) since the last ``takeChanges()``, for the cache file.
    private(set) var changes: [Int64: QueuedTransaction?] = [:]

    /// An empty queue.
    ///
    /// - Parameter identity: The prefix of its idempotency keys.
    init(identity: UInt64 = .random(in: .min ... .max)) {
        self.identity = identity
    }

    // MARK: - Staging

    /// Checks an operation against the schema (when known), with the rules the store applies (MeridianCore's one
    /// validation: a write shown is never one the store refuses for its shape), and stages it.
    ///
    /// - Throws: ``ClientError`` with the code and message the server would give.
    mutating func stage(_ operation: WriteOperation, schema: Schema?) throws(ClientError) {
        var operation = operation
        // Shown as the store will hold it (a double −0.0 is 0.0), so that the writer sees what every reader sees.
        operation.values = operation.values.mapValues(\.stored)
        if let schema {
            do {
                _ = try schema.validate(operation, index: self.staged.count)
            } catch {
                throw ClientError(error)
            }
        }
        self.staged.append(operation)
    }

    /// Whether operations are staged and not yet saved.
    var hasStaged: Bool { !self.staged.isEmpty }

    /// Drops the staged operations.
    mutating func rollback() {
        self.staged = []
    }

    /// Saves the staged operations as one queued transaction, shown through the overlay.
    ///
    /// - Returns: The transaction, or `nil` when nothing was staged.
    mutating func save(policy: ConflictPolicy) -> QueuedTransaction? {
        guard !self.staged.isEmpty else { return nil }
        let id = self.nextTransactionID
        // A retry after a lost answer (the connection dropped mid-call) is then answered, not applied twice.
        let key = String(self.identity, radix: 16) + ":" + String(id)
        let transaction = QueuedTransaction(
            id: id, operations: self.staged, policy: policy, idempotencyKey: key, phase: .queued)
        self.staged = []
        self.enqueue(transaction)
        return transaction
    }

    /// Adds a transaction to the queue and its operations to the overlay (a saved one, or one restored from the
    /// cache file).
    mutating func enqueue(_ transaction: QueuedTransaction) {
        for operation in transaction.operations {
            self.overlay[operation.key, default: []].append(
                OverlayOperation(transaction: transaction.id, kind: operation.kind, values: operation.values))
        }
        self.transactions.append(transaction)
        self.nextTransactionID = max(self.nextTransactionID, transaction.id + 1)
        self.changes[transaction.id] = transaction
    }

    // MARK: - Sending

    /// The oldest queued transaction, marked as being sent, or `nil` when none is queued or `inFlightLimit` are in
    /// flight (transactions are sent in save order, pipelined on one `ApplyStream`, whose transactions the server
    /// commits in the order they were sent).
    mutating func nextToSend(inFlightLimit: Int = 1) -> QueuedTransaction? {
        guard self.transactions.lazy.filter({ $0.phase == .sending }).count < inFlightLimit,
            let i = self.transactions.firstIndex(where: { $0.phase == .queued })
        else { return nil }
        self.transactions[i].phase = .sending
        return self.transactions[i]
    }

    /// Puts a transaction whose sending failed (transiently) back in the queue.
    mutating func requeue(_ id: Int64) {
        guard let i = self.transactions.firstIndex(where: { $0.id == id }) else { return }
        self.transactions[i].phase = .queued
    }

    /// The connection ended: the transaction in flight goes back to the queue (sent again with its key).
    mutating func requeueInFlight() {
        for i in self.transactions.indices where self.transactions[i].phase == .sending {
            self.transactions[i].phase = .queued
        }
    }

    /// The server committed a transaction at `seq`; it stays pending until that seq is applied.
    ///
    /// - Returns: Whether the queue holds the transaction.
    @discardableResult
    mutating func committed(_ id: Int64, at seq: Int64) -> Bool {
        guard let i = self.transactions.firstIndex(where: { $0.id == id }) else { return false }
        self.transactions[i].phase = .committed(seq)
        self.changes[id] = self.transactions[i]
        return true
    }

    /// Whether the queue holds a transaction.
    func contains(_ id: Int64) -> Bool {
        self.transactions.contains { $0.id == id }
    }

    // MARK: - Confirm and revert

    /// Removes the transactions committed at or before `seq` from the queue and the overlay.
    ///
    /// - Returns: The confirmed transactions (with their commit seqs) and the rows they leave.
    mutating func confirm(upTo seq: Int64) -> (confirmed: [(id: Int64, seq: Int64)], rows: Set<RowKey>) {
        var confirmed: [(id: Int64, seq: Int64)] = []
        var rows: Set<RowKey> = []
        for transaction in self.transactions {
            guard case .committed(let commitSeq) = transaction.phase, commitSeq <= seq else { continue }
            confirmed.append((transaction.id, commitSeq))
            rows.formUnion(self.removeFromOverlay(transaction))
        }
        if !confirmed.isEmpty {
            let ids = Set(confirmed.map { $0.id })
            self.transactions.removeAll { ids.contains($0.id) }
        }
        return (confirmed, rows)
    }

    /// Removes a rejected transaction from the queue and the overlay.
    ///
    /// - Returns: The rows it leaves, or `nil` when the queue does not hold it.
    mutating func reject(_ id: Int64) -> Set<RowKey>? {
        guard let i = self.transactions.firstIndex(where: { $0.id == id }) else { return nil }
        return self.removeFromOverlay(self.transactions.remove(at: i))
    }

    private mutating func removeFromOverlay(_ transaction: QueuedTransaction) -> Set<RowKey> {
        let keys = Set(transaction.operations.map(\.key))
        for key in keys {
            self.overlay[key]?.removeAll { $0.transaction == transaction.id }
            if self.overlay[key]?.isEmpty == true { self.overlay[key] = nil }
        }
        self.changes[transaction.id] = .some(nil)
        return keys
    }

    // MARK: - Reading

    /// A row with the pending operations on it folded over the server's image.
    ///
    /// - Parameters:
    ///   - server: The server's row, or `nil` when it has none (or none cached).
    ///   - entity: The entity's schema, for the defaults of an insert.
    /// - Returns: The row as the pending writes leave it (`nil`: absent).
    func pendingRow(_ key: RowKey, over server: Row?, entity: EntitySchema?) -> Row? {
        var row = server
        for operation in self.overlay[key] ?? [] { row = operation.apply(to: row, id: key.id, entity: entity) }
        return row
    }

    /// Whether a row has pending operations.
    func isPending(_ key: RowKey) -> Bool {
        self.overlay[key].map { !$0.isEmpty } ?? false
    }

    /// Returns the transactions changed since the last call, and forgets them.
    mutating func takeChanges() -> [Int64: QueuedTransaction?] {
        defer { self.changes = [:] }
        return self.changes
    }

    /// Forgets the recorded changes (they are what the cache file already holds).
    mutating func discardChanges() {
        self.changes = [:]
    }
}

/// A saved transaction in the queue.
struct QueuedTransaction: Sendable {
    enum Phase: Sendable, Equatable {
        case queued
        case sending
        case committed(Int64)
    }

    /// The local number (also the Apply's client tag).
    let id: Int64
    let operations: [WriteOperation]
    let policy: ConflictPolicy
    /// Sent with every attempt, so the server applies the transaction at most once.
    let idempotencyKey: String
    var phase: Phase
}

/// One pending operation on one row, as the overlay folds it over the server's row.
struct OverlayOperation: Sendable {
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
        // A null removes the attribute (Row drops it).
        for (name, value) in values { row.values[name] = value }
    }

    private static func defaults(of entity: EntitySchema?) -> [String: Value] {
        var values: [String: Value] = [:]
        for attribute in entity?.attributes ?? [] {
            if let value = attribute.defaultValue, !value.isNull { values[attribute.name] = value.stored }
        }
        return values
    }
}

extension WriteOperation {
    /// The row the operation writes (an insert without an id has none yet; the client always names one).
    var key: RowKey { RowKey(entity: self.entity, id: self.id ?? "") }
}

/// The server's answer to a transaction's `Apply`.
enum ApplyOutcome: Sendable {
    /// Committed at `seq` (confirmed once the context has applied it).
    case committed(seq: Int64)
    /// Rejected: nothing was written.
    case rejected(ClientError)
}
