// MARK: - CacheContext
//
// The one owner of a client's replicated state. It is a thin coordinator of parts that each read and test alone:
// - SyncEvent (+Wire): the Sync stream decoded into domain events, outside the actor;
// - ReplicaState (+Stream): the subscriptions, their rows, the applied seq and the epochs, as a value;
// - WriteQueue: staged operations, queued transactions and their overlay, on Core types;
// - ViewStore: what the controllers read, behind one lock.
// The actor feeds events and writes to the values, moves every results controller from one state to the next in one
// critical section per commit, sends what the stream needs (SyncOutbound) and wakes whoever waits. Split by concern:
// - CacheContext.swift: state, schema and controllers;
// - CacheContext+Commit.swift: the commit step every change goes through;
// - CacheContext+Stream.swift: the connection's stream (Hello, Subscribe, events in, Ack);
// - CacheContext+Writes.swift: the transaction API (insert, update, delete, save), confirmation and revert;
// - CacheContext+Persistence.swift: restoring from and recording into the cache file.

package import Logging
package import MeridianCore

/// The cache context: the replicated rows of one client, its subscriptions, and a transaction of local writes.
///
/// A context is an actor: it applies the server's stream in order, one commit at a time, so every results controller
/// moves from the state at one seq to the state at the next, never through a state that never existed. You get it
/// from a ``MeridianContainer`` (``MeridianContainer/context``) and use it to write:
///
/// ```swift
/// let context = container.context
/// try await context.insert(Point(id: "p1", title: "Café", category: 1))
/// let transaction = try await context.save()     // controllers show the row at once, pending
/// let seq = try await transaction.confirmed()     // the server committed it at `seq`
/// ```
public actor CacheContext {
    // MARK: Configuration

    let logger: Logger
    /// What the controllers read, behind one lock.
    let view = ViewStore()
    /// The persisted cache file, if the cache is persisted.
    let file: CacheFile?
    /// Whether each change set is checked against the controller's section counts before delivery.
    let validatesChangeSets: Bool
    /// Validation failures seen (empty unless something is badly wrong); for tests.
    package internal(set) var changeSetValidationFailures: [String] = []

    // MARK: Schema

    /// The schema controllers bind to (from the configuration, the cache file, or the server).
    package internal(set) var schema: Schema?
    var schemaWaiters: [CheckedContinuation<Schema, any Error>] = []
    /// Whether the schema changed since the last flush.
    var schemaChanged = false

    // MARK: State

    /// The subscriptions, their rows and the applied seq.
    var replica: ReplicaState
    /// Staged operations, queued transactions and their overlay.
    var writes = WriteQueue()
    /// The results controllers, by id.
    var controllers: [UInt64: ControllerRecord] = [:]
    var nextControllerID: UInt64 = 1

    // MARK: Stream

    /// The open stream's outgoing side.
    var outbound: SyncOutbound?
    /// The last seq acknowledged on the open stream.
    var ackedSeq: Int64 = 0
    /// The server's schema fingerprint from the last Welcome.
    package internal(set) var serverFingerprint: String?
    /// The server's fingerprint of this client's read rules from the last Welcome (empty without rules), echoed in
    /// the next Hello that resumes. Not kept in the cache file: after a restart a server with rules re-snapshots.
    package internal(set) var accessFingerprint: String?

    // MARK: Waiters

    /// Tasks waiting for the server's answer to a Replace, by subscription id.
    var replaceWaiters: [String: [CheckedContinuation<Void, any Error>]] = [:]
    /// Wakes the connection's writer when a transaction is queued.
    var writeSignal: AsyncStream<Void>.Continuation?
    /// Tasks waiting for a transaction's outcome.
    var transactionWaiters: [Int64: [CheckedContinuation<Int64, any Error>]] = [:]
    /// Tasks waiting for the applied seq to reach a value, each under a key of its own (to be resumed on cancellation).
    var seqWaiters: [(key: UInt64, seq: Int64, continuation: CheckedContinuation<Void, Never>)] = []
    /// The key of the next seq waiter.
    var nextSeqWaiter: UInt64 = 0
    /// Outcomes of recent transactions, for waiters that come late.
    var outcomes: [Int64: Result<Int64, ClientError>] = [:]

    /// Creates a context.
    ///
    /// - Parameters:
    ///   - schema: The schema, if the app knows it; otherwise the cache file's, or the server's once connected.
    ///   - file: The persisted cache, or `nil` for memory only.
    ///   - validatesChangeSets: Check every change set before delivery (cheap: O(changes + sections)).
    ///   - logger: Where the context logs.
    init(schema: Schema?, file: CacheFile?, validatesChangeSets: Bool, logger: Logger) async throws(ClientError) {
        self.schema = schema
        self.file = file
        self.validatesChangeSets = validatesChangeSets
        self.logger = logger
        self.replica = ReplicaState(recordsChanges: file != nil)
        if let file { try self.restore(from: file.load()) }
    }

    /// An in-memory context for tests and tools, fed protocol messages directly.
    ///
    /// - Parameters:
    ///   - schema: The schema.
    ///   - cachePath: A cache file to persist into, or `nil`.
    package static func make(
        schema: Schema?,
        cachePath: String? = nil,
        logger: Logger = Logger(label: "meridian.client")
    ) async throws(ClientError) -> CacheContext {
        let file = try cachePath.map { path throws(ClientError) in try CacheFile(path: path, logger: logger) }
        return try await CacheContext(schema: schema, file: file, validatesChangeSets: true, logger: logger)
    }

    /// The last seq applied (a Batch, a completed snapshot or a Heartbeat).
    package var appliedSeq: Int64 { self.replica.appliedSeq }

    /// The seq every controller of this context is at.
    public var seq: Int64 { self.replica.appliedSeq }

    /// Waits until the context has applied `seq` (every controller then shows the server's state at `seq` or
    /// later): for example the seq of a ``PendingTransaction`` confirmed elsewhere, or of a query. Returns early when
    /// the waiting task is cancelled (check ``seq`` afterwards when that matters).
    public func waitUntilApplied(_ seq: Int64) async {
        guard seq > self.replica.appliedSeq else { return }
        let key = self.nextSeqWaiter
        self.nextSeqWaiter += 1
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume()
                } else {
                    self.seqWaiters.append((key, seq, continuation))
                }
            }
        } onCancel: {
            Task { await self.stopWaiting(key) }
        }
    }

    /// Resumes a cancelled seq waiter (if it is still waiting).
    private func stopWaiting(_ key: UInt64) {
        guard let i = self.seqWaiters.firstIndex(where: { $0.key == key }) else { return }
        self.seqWaiters.remove(at: i).continuation.resume()
    }

    /// Resumes the tasks waiting for a seq that has been applied.
    func resumeSeqWaiters() {
        guard !self.seqWaiters.isEmpty else { return }
        let applied = self.replica.appliedSeq
        let ready = self.seqWaiters.filter { $0.seq <= applied }
        self.seqWaiters.removeAll { $0.seq <= applied }
        for waiter in ready { waiter.continuation.resume() }
    }

    // MARK: - Schema

    /// The schema, waiting for the server's when neither the app nor the cache gave one.
    func requireSchema() async throws -> Schema {
        if let schema { return schema }
        return try await withCheckedThrowingContinuation { self.schemaWaiters.append($0) }
    }

    /// Records the schema (from GetSchema) and wakes controllers waiting for it.
    package func setSchema(_ schema: Schema) {
        let known = self.schema
        self.schema = schema
        if known != schema { self.schemaChanged = true }
        for waiter in self.schemaWaiters { waiter.resume(returning: schema) }
        self.schemaWaiters = []
        self.flush()
    }

    // MARK: - Controllers

    /// Registers a results controller for `request`: a subscription of its own (shared with equal requests), or a
    /// local narrowing of the subscription behind `parent`. The controller shows the cached rows at once.
    ///
    /// - Parameter observation: The controller's Observation registrar, told of every change it shows.
    /// - Returns: The controller's id in the view store.
    /// - Throws: ``ClientError`` for a request that does not bind to the schema, or a closed parent.
    func registerController(
        request: FetchRequest,
        narrowing parent: UInt64?,
        privateSubscription: Bool,
        observation: ResultsObservation
    ) async throws(ClientError) -> UInt64 {
        let schema: Schema
        do {
            schema = try await self.requireSchema()
        } catch {
            throw ClientError(calling: error)
        }
        let bound: BoundFetchRequest
        do {
            bound = try request.bind(to: schema)
        } catch {
            throw ClientError(binding: error, request: request)
        }
        let subscriptionID: String
        if let parent {
            guard let record = self.controllers[parent] else {
                throw ClientError(.notSubscribed, "the controller to narrow is closed")
            }
            guard self.replica.subscriptions[record.subscriptionID]?.entity == request.entity else {
                throw ClientError(
                    .malformedRequest, "a narrowing controller must read the same entity as the one it narrows")
            }
            subscriptionID = record.subscriptionID
        } else if privateSubscription {
            subscriptionID = self.replica.makePrivateSubscriptionID(key: request.subscriptionKey)
            self.addSubscription(id: subscriptionID, request: request, bound: bound, shareable: false)
        } else {
            subscriptionID = request.subscriptionKey
            if self.replica.subscriptions[subscriptionID] == nil {
                self.addSubscription(id: subscriptionID, request: request, bound: bound, shareable: true)
            }
        }
        self.replica.retain(subscriptionID)
        guard let subscription = self.replica.subscriptions[subscriptionID] else {
            throw ClientError(.notSubscribed, "the subscription to show is closed")
        }

        let id = self.nextControllerID
        self.nextControllerID += 1
        self.controllers[id] = ControllerRecord(
            subscriptionID: subscriptionID, bound: bound, follows: parent == nil, entity: request.entity)
        var results: LiveResults
        do {
            results = try LiveResults(bound)
        } catch {
            throw ClientError(binding: error, request: request)
        }
        results.replace(uniqueRows: self.effectiveRows(of: subscription))
        let box = EngineBox(
            results: results, entity: request.entity, isLoaded: subscription.hasData, observation: observation)
        if case .failed(let error) = subscription.phase { box.error = error }
        box.pendingIDs = self.pendingIDs(shownBy: box)
        self.view.withLock { $0.engines[id] = box }
        self.flush()
        return id
    }

    /// Removes a controller; the last controller of a subscription unsubscribes it and drops its rows.
    func unregisterController(_ id: UInt64) {
        guard let record = self.controllers.removeValue(forKey: id) else { return }
        // Finish outside the lock: a stream's termination handler takes the lock to unregister itself.
        let box = self.view.withLock { state in state.engines.removeValue(forKey: id) }
        box?.finish(throwing: nil)
        box?.observation.contentDidChange()  // a closed controller shows nothing
        guard let remaining = self.replica.release(record.subscriptionID) else { return }
        if remaining <= 0 {
            self.removeSubscription(record.subscriptionID)
        }
        self.flush()
    }

    /// Adds a subscription and, when a stream is open, subscribes on it.
    private func addSubscription(id: String, request: FetchRequest, bound: BoundFetchRequest, shareable: Bool) {
        self.replica.add(SubscriptionState(id: id, request: request, bound: bound, shareable: shareable))
        if self.outbound != nil { self.sendSubscribe(id, resume: false) }
    }

    /// Unsubscribes and forgets a subscription and its rows.
    private func removeSubscription(_ id: String) {
        guard let subscription = self.replica.remove(id) else { return }
        if let outbound, subscription.phase != .idle, subscription.epoch != nil { outbound.unsubscribe(id) }
        for waiter in self.replaceWaiters.removeValue(forKey: id) ?? [] {
            waiter.resume(throwing: ClientError(.closed, "the subscription was closed"))
        }
    }

    /// Changes a subscription's fetch request (a map region moving). Connected: sends `Replace` and returns once
    /// the server answered (the controllers then show only what entered and left). Offline: the new request is
    /// subscribed afresh on the next connection, and its snapshot is diffed against what the controllers show.
    ///
    /// - Throws: ``ClientError`` when the request does not bind or the server rejects it (the old one stays).
    func replaceRequest(of controller: UInt64, with request: FetchRequest) async throws(ClientError) {
        // The phase only, not a copy of the subscription: a copy held while members are dropped would copy them.
        guard let record = self.controllers[controller],
            let phase = self.replica.subscriptions[record.subscriptionID]?.phase
        else { throw ClientError(.closed, "the controller is closed") }
        guard let schema else { throw ClientError(.notSubscribed, "the schema is not known yet") }
        let bound: BoundFetchRequest
        do {
            bound = try request.bind(to: schema)
        } catch {
            throw ClientError(binding: error, request: request)
        }
        let id = record.subscriptionID
        let replace = PendingReplace(request: request, bound: bound)
        guard let outbound = self.outbound, phase == .live else {
            // Offline (or not yet subscribed): adopt now, keep the cached rows the new request still selects, and
            // diff the next snapshot against what is shown.
            self.logger.debug(
                "request replaced before the server can answer",
                metadata: ["meridian.subscription.id": "\(id)", "meridian.phase": "\(phase)"])
            var work = CommitWork()
            self.replica.adoptOffline(id, replace, work: &work)
            if let outbound, phase != .idle {
                // Subscribed but its snapshot has not completed: subscribe again under the new request (a new epoch:
                // the old request's snapshot may be on its way).
                if self.replica.unsubscribe(id) { outbound.unsubscribe(id) }
                self.sendSubscribe(id, resume: false)
            }
            self.commit(work, cause: .replaced)
            self.flush()
            return
        }
        self.replica.replaceSent(id, replace)
        outbound.replace(id, with: request)
        do {
            try await withCheckedThrowingContinuation { continuation in
                self.replaceWaiters[id, default: []].append(continuation)
            }
        } catch {
            throw ClientError(calling: error)
        }
    }

    /// Waits until the controller shows complete data (a snapshot, or rows restored from the cache file).
    func waitUntilLoaded(_ controller: UInt64) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            self.view.withLock { state in
                guard let box = state.engines[controller] else {
                    continuation.resume(throwing: ClientError(.closed, "the controller is closed"))
                    return
                }
                if let error = box.error {
                    continuation.resume(throwing: error)
                } else if box.isLoaded {
                    continuation.resume()
                } else {
                    box.loadWaiters.append(continuation)
                }
            }
        }
    }

    // MARK: - Inspection (tests, benchmarks)

    /// The number of cached rows across all entities.
    package var cachedRowCount: Int { self.replica.rowCount }

    /// The ids of the subscriptions the context holds.
    package var subscriptionIDs: [String] { self.replica.subscriptions.keys.sorted() }

    /// Every cached server row of an entity (no pending writes).
    package func cachedRows(of entity: String) -> [Row] {
        self.replica.rows[entity].map { $0.map { $0.value.row($0.key) } } ?? []
    }
}

/// A controller as the context sees it.
struct ControllerRecord {
    let subscriptionID: String
    /// The request its engine evaluates.
    var bound: BoundFetchRequest
    /// Whether it shows its subscription's own request (and follows a Replace), rather than narrowing it.
    let follows: Bool
    let entity: String
}
