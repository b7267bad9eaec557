// MARK: - CacheContext
//
// The one owner of a client's replicated state: it applies the Sync stream in order, holds the union of its
// subscriptions' rows, overlays pending local writes on them, and moves every results controller from one state to
// the next in one critical section per commit (see ViewStore). Split by concern:
// - CacheContext.swift: state, controllers, and the commit step every change goes through;
// - CacheContext+Stream.swift: the protocol messages (Welcome, SnapshotChunk, Batch, Heartbeat, errors);
// - CacheContext+Writes.swift: the transaction API (insert, update, delete, save), the optimistic overlay, and
//   confirmation or revert;
// - CacheContext+Persistence.swift: restoring from and recording into the cache file.

package import Logging
package import MeridianCore
internal import MeridianProto

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
    package private(set) var changeSetValidationFailures: [String] = []

    // MARK: Schema

    /// The schema controllers bind to (from the configuration, the cache file, or the server).
    package internal(set) var schema: Schema?
    var schemaWaiters: [CheckedContinuation<Schema, any Error>] = []

    // MARK: Stream

    /// The last seq applied (a Batch, a completed snapshot or a Heartbeat).
    package internal(set) var appliedSeq: Int64 = 0
    /// Where outgoing Sync messages go while a stream is open.
    var outbound: AsyncStream<Meridian_V1_SyncRequest>.Continuation?
    /// The last seq acknowledged on the open stream.
    var ackedSeq: Int64 = 0
    /// The heartbeat interval the server announced (milliseconds; 0 before Welcome).
    package internal(set) var heartbeatIntervalMilliseconds: UInt32 = 0
    /// The server's schema fingerprint from the last Welcome.
    package internal(set) var serverFingerprint: String?
    /// The number of Subscribes sent per id on the open stream: the epoch the server puts on every message about
    /// the subscription (a subscription subscribed again under the same id — a region moved before its snapshot
    /// arrived, a shared request closed and reopened — drops what was sent for the old one by its epoch).
    var epochs: [String: UInt32] = [:]

    // MARK: Rows and subscriptions

    /// The union of every subscription's rows: entity → id → row.
    var rows: [String: [String: CachedRow]] = [:]
    /// The subscriptions, by id.
    var subscriptions: [String: SubscriptionState] = [:]
    /// The results controllers, by id.
    var controllers: [UInt64: ControllerRecord] = [:]
    var nextControllerID: UInt64 = 1
    var nextPrivateSubscription = 1

    // MARK: Writes

    /// Operations staged since the last save or rollback.
    var staged: [Meridian_V1_Operation] = []
    /// Saved transactions not yet confirmed or rejected, oldest first.
    var transactions: [TransactionState] = []
    /// Pending operations by row, in save order: what the controllers show on top of the server's rows.
    var overlay: [RowKey: [OverlayOperation]] = [:]
    var nextTransactionID: Int64 = 1
    /// Makes this context's idempotency keys (`IDENTITY:N`) unique: random per context, so numbers restarting
    /// after a restart never repeat a key the server remembers. Restored transactions keep the keys they were
    /// saved with.
    let transactionKeyPrefix = UInt64.random(in: .min ... .max)
    /// Wakes the connection's writer when a transaction is queued.
    var writeSignal: AsyncStream<Void>.Continuation?
    /// Tasks waiting for a transaction's outcome.
    var transactionWaiters: [Int64: [CheckedContinuation<Int64, any Error>]] = [:]
    /// Tasks waiting for the applied seq to reach a value.
    var seqWaiters: [(seq: Int64, continuation: CheckedContinuation<Void, Never>)] = []
    /// Outcomes of recent transactions, for waiters that come late.
    var outcomes: [Int64: Result<Int64, ClientError>] = [:]

    // MARK: Persistence

    /// Changes not yet handed to the cache file.
    var delta = CacheDelta()

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

    /// The seq every controller of this context is at.
    public var seq: Int64 { self.appliedSeq }

    /// Waits until the context has applied `seq` (every controller then shows the server's state at `seq` or
    /// later): for example the seq of a ``PendingTransaction`` confirmed elsewhere, or of a query.
    public func waitUntilApplied(_ seq: Int64) async {
        guard seq > self.appliedSeq else { return }
        await withCheckedContinuation { self.seqWaiters.append((seq, $0)) }
    }

    /// Resumes the tasks waiting for a seq that has been applied.
    func resumeSeqWaiters() {
        guard !self.seqWaiters.isEmpty else { return }
        let applied = self.appliedSeq
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
        if known != schema { self.delta.schema = Meridian_V1_Schema(schema).serializedBytesOrEmpty }
        for waiter in self.schemaWaiters { waiter.resume(returning: schema) }
        self.schemaWaiters = []
        self.flush()
    }

    // MARK: - Controllers

    /// Registers a results controller for `request`: a subscription of its own (shared with equal requests), or a
    /// local narrowing of the subscription behind `parent`. The controller shows the cached rows at once.
    ///
    /// - Returns: The controller's id in the view store.
    /// - Throws: ``ClientError`` for a request that does not bind to the schema, or a closed parent.
    func registerController(
        request: FetchRequest,
        narrowing parent: UInt64?,
        privateSubscription: Bool
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
            guard self.subscriptions[record.subscriptionID]?.entity == request.entity else {
                throw ClientError(
                    .malformedRequest, "a narrowing controller must read the same entity as the one it narrows")
            }
            subscriptionID = record.subscriptionID
        } else if privateSubscription {
            subscriptionID = "m-\(self.nextPrivateSubscription)-\(request.subscriptionKey.dropFirst(2))"
            self.nextPrivateSubscription += 1
            self.addSubscription(id: subscriptionID, request: request, bound: bound, shareable: false)
        } else {
            subscriptionID = request.subscriptionKey
            if self.subscriptions[subscriptionID] == nil {
                self.addSubscription(id: subscriptionID, request: request, bound: bound, shareable: true)
            }
        }
        self.subscriptions[subscriptionID]!.controllerCount += 1
        let subscription = self.subscriptions[subscriptionID]!

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
        results.reset(rows: self.effectiveRows(of: subscription))
        let box = EngineBox(results: results, entity: request.entity, isLoaded: subscription.hasData)
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
        guard var subscription = self.subscriptions[record.subscriptionID] else { return }
        subscription.controllerCount -= 1
        self.subscriptions[record.subscriptionID] = subscription
        if subscription.controllerCount <= 0 {
            self.removeSubscription(record.subscriptionID)
        }
        self.flush()
    }

    /// Adds a subscription and, when a stream is open, subscribes on it.
    func addSubscription(id: String, request: FetchRequest, bound: BoundFetchRequest, shareable: Bool) {
        self.subscriptions[id] = SubscriptionState(id: id, request: request, bound: bound, shareable: shareable)
        self.recordSubscription(id)
        if self.outbound != nil { self.sendSubscribe(id, resume: false) }
    }

    /// Unsubscribes and forgets a subscription and its rows.
    func removeSubscription(_ id: String) {
        guard let subscription = self.subscriptions.removeValue(forKey: id) else { return }
        if self.outbound != nil, subscription.phase != .idle { self.sendUnsubscribe(subscription) }
        for rowID in subscription.members { self.releaseRow(subscription.entity, rowID) }
        for waiter in subscription.replaceWaiters {
            waiter.resume(throwing: ClientError(.closed, "the subscription was closed"))
        }
        self.delta.subscriptions[id] = .some(nil)
    }

    /// Changes a subscription's fetch request (a map region moving). Connected: sends `Replace` and returns once
    /// the server answered (the controllers then show only what entered and left). Offline: the new request is
    /// subscribed afresh on the next connection, and its snapshot is diffed against what the controllers show.
    ///
    /// - Throws: ``ClientError`` when the request does not bind or the server rejects it (the old one stays).
    func replaceRequest(of controller: UInt64, with request: FetchRequest) async throws(ClientError) {
        guard let record = self.controllers[controller], var subscription = self.subscriptions[record.subscriptionID]
        else { throw ClientError(.closed, "the controller is closed") }
        guard let schema else { throw ClientError(.notSubscribed, "the schema is not known yet") }
        let bound: BoundFetchRequest
        do {
            bound = try request.bind(to: schema)
        } catch {
            throw ClientError(binding: error, request: request)
        }
        guard self.outbound != nil, subscription.phase == .live else {
            // Offline (or not yet subscribed): adopt now, keep the cached rows the new request still selects, and
            // diff the next snapshot against what is shown.
            let id = record.subscriptionID
            self.logger.debug(
                "request replaced before the server can answer",
                metadata: ["meridian.subscription.id": "\(id)", "meridian.phase": "\(subscription.phase)"])
            let entity = subscription.entity
            let wasSubscribed = subscription.phase != .idle
            let old = subscription
            subscription.request = request
            subscription.bound = bound
            subscription.hasData = false
            subscription.pendingReplace = nil
            self.subscriptions[id] = subscription
            subscription = SubscriptionState(id: id, request: request, bound: bound, shareable: false)  // release
            var work = CommitWork()
            self.dropMembers(of: id, where: { !bound.matches($0) }, entity: entity, work: &work)
            self.recordSubscription(id)
            if self.outbound != nil, wasSubscribed {
                // Subscribed but its snapshot has not completed: subscribe again under the new request (a new epoch:
                // the old request's snapshot may be on its way).
                self.sendUnsubscribe(old)
                self.subscriptions[id]?.snapshot = nil
                self.sendSubscribe(id, resume: false)
            }
            self.commit(work, cause: .replaced)
            self.flush()
            return
        }
        subscription.pendingReplace = PendingReplace(request: request, bound: bound)
        self.subscriptions[record.subscriptionID] = subscription
        var replace = Meridian_V1_Replace()
        replace.subscriptionID = record.subscriptionID
        replace.fetch = Meridian_V1_FetchRequest(request)
        self.send(.replace(replace))
        do {
            try await withCheckedThrowingContinuation { continuation in
                self.subscriptions[record.subscriptionID]?.replaceWaiters.append(continuation)
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

    // MARK: - Rows

    /// The server's row for an id, if any subscription holds it.
    func serverRow(_ entity: String, _ id: String) -> Row? {
        self.rows[entity]?[id]?.row
    }

    /// The row as `subscription` shows it: the server's row with pending writes on top; a pending write makes a row
    /// part of the subscription while it matches the subscription's predicate.
    func effectiveRow(_ id: String, in subscription: SubscriptionState) -> Row? {
        let isMember = subscription.members.contains(id)
        guard let operations = self.overlay[RowKey(entity: subscription.entity, id: id)], !operations.isEmpty else {
            return isMember ? self.serverRow(subscription.entity, id) : nil
        }
        var row = self.serverRow(subscription.entity, id)
        let entity = self.schema?.entity(named: subscription.entity)
        for operation in operations { row = operation.apply(to: row, id: id, entity: entity) }
        guard let row, subscription.bound.matches(row) else { return nil }
        return row
    }

    /// Every row `subscription` shows (server rows and pending ones).
    func effectiveRows(of subscription: SubscriptionState) -> [Row] {
        var result: [Row] = []
        result.reserveCapacity(subscription.members.count)
        for id in subscription.members {
            if let row = self.effectiveRow(id, in: subscription) { result.append(row) }
        }
        for key in self.overlay.keys where key.entity == subscription.entity && !subscription.members.contains(key.id) {
            if let row = self.effectiveRow(key.id, in: subscription) { result.append(row) }
        }
        return result
    }

    /// Adds (or refreshes) a server row as a member of a subscription.
    ///
    /// - Note: Members are mutated in place (`subscriptions[id]!.members`): a local copy of the subscription held
    ///   across this call would make every insert copy the whole set.
    func storeRow(_ row: Row, version: Int64, in subscriptionID: String, work: inout CommitWork) {
        guard let entity = self.subscriptions[subscriptionID]?.entity else { return }
        var row = row
        if row.values.values.contains(where: \.isNull) {
            // An explicit null reads like an absent value; store one form so equal rows compare equal.
            row.values = row.values.filter { !$0.value.isNull }
        }
        let isNewMember = self.subscriptions[subscriptionID]!.members.insert(row.id).inserted
        if isNewMember {
            self.delta.memberships[MembershipKey(subscription: subscriptionID, id: row.id)] = true
        }
        var cached = self.rows[entity]?[row.id] ?? CachedRow(row: row, version: version, references: 0)
        let changed = cached.row != row || cached.version != version || isNewMember && cached.references == 0
        cached.row = row
        cached.version = version
        if isNewMember { cached.references += 1 }
        self.rows[entity, default: [:]][row.id] = cached
        if changed { self.recordRow(entity, row.id) }
        if isNewMember {
            work.affected[subscriptionID, default: []].insert(row.id)
        }
        if changed { self.touch(entity, row.id, work: &work) }
    }

    /// Removes a row from a subscription's members.
    func dropMember(_ id: String, from subscriptionID: String, work: inout CommitWork) {
        guard let entity = self.subscriptions[subscriptionID]?.entity,
            self.subscriptions[subscriptionID]!.members.remove(id) != nil
        else { return }
        self.delta.memberships[MembershipKey(subscription: subscriptionID, id: id)] = false
        self.releaseRow(entity, id)
        work.affected[subscriptionID, default: []].insert(id)
    }

    /// Drops the members of a subscription whose row fails `test` (or is not cached).
    func dropMembers(of subscriptionID: String, where test: (Row) -> Bool, entity: String, work: inout CommitWork) {
        let stale = (self.subscriptions[subscriptionID]?.members ?? []).filter { id in
            self.serverRow(entity, id).map(test) ?? true
        }
        for id in stale { self.dropMember(id, from: subscriptionID, work: &work) }
    }

    /// Drops one subscription's reference to a cached row, forgetting the row when none is left.
    func releaseRow(_ entity: String, _ id: String) {
        guard var cached = self.rows[entity]?[id] else { return }
        cached.references -= 1
        if cached.references <= 0 {
            self.rows[entity]?[id] = nil
        } else {
            self.rows[entity]?[id] = cached
        }
        self.recordRow(entity, id)
    }

    /// Marks a row as changed for every subscription of its entity.
    func touch(_ entity: String, _ id: String, work: inout CommitWork) {
        for (subscriptionID, subscription) in self.subscriptions where subscription.entity == entity {
            work.affected[subscriptionID, default: []].insert(id)
        }
    }

    // MARK: - Commit

    /// Moves every controller to the current state in one critical section and delivers each one's change set.
    ///
    /// - Parameters:
    ///   - work: The rows that may have changed, by subscription, and the subscriptions to re-read entirely.
    ///   - cause: Why.
    ///   - error: For a revert, the server's reason.
    func commit(_ work: CommitWork, cause: ResultsChangeCause, error: ClientError? = nil) {
        enum Action {
            case apply([RowMutation])
            case reset([Row])
            case rebuild(BoundFetchRequest, [Row])
        }
        var actions: [UInt64: Action] = [:]
        for (id, record) in self.controllers {
            guard let subscription = self.subscriptions[record.subscriptionID] else { continue }
            if record.follows && record.bound != subscription.bound {
                actions[id] = .rebuild(subscription.bound, self.effectiveRows(of: subscription))
                self.controllers[id]!.bound = subscription.bound
            } else if work.resets.contains(record.subscriptionID) {
                actions[id] = .reset(self.effectiveRows(of: subscription))
            } else if let ids = work.affected[record.subscriptionID], !ids.isEmpty {
                actions[id] = .apply(
                    ids.map { id in self.effectiveRow(id, in: subscription).map(RowMutation.upsert) ?? .delete(id: id) }
                )
            }
        }
        let seq = self.appliedSeq
        let loaded = Set(self.subscriptions.values.filter(\.hasData).map(\.id))
        var failures: [String] = []
        self.view.withLock { state in
            state.seq = seq
            for (id, box) in state.engines {
                guard let record = self.controllers[id] else { continue }
                let oldCounts = self.validatesChangeSets ? box.results.sections.map(\.count) : []
                var changeSet = ChangeSet<Row>()
                switch actions[id] {
                case .apply(let mutations)?:
                    changeSet = box.results.apply(mutations)
                case .reset(let rows)?:
                    changeSet = box.results.reset(rows: rows)
                case .rebuild(let bound, let rows)?:
                    let before = box.results.snapshot
                    if var results = try? LiveResults(bound) {
                        results.reset(rows: rows)
                        box.results = results
                        changeSet = (try? ChangeSet.between(old: before, new: results.snapshot)) ?? ChangeSet()
                    }
                case nil:
                    break
                }
                if self.validatesChangeSets, !changeSet.isEmpty {
                    do {
                        try changeSet.validate(
                            oldSectionCounts: oldCounts, newSectionCounts: box.results.sections.map(\.count))
                    } catch {
                        failures.append("controller \(id) (\(record.bound.request)): \(error)")
                    }
                }
                let pending = self.pendingIDs(shownBy: box)
                let pendingChanged = pending != box.pendingIDs
                box.pendingIDs = pending
                let complete = loaded.contains(record.subscriptionID)
                // Said when it flips for a controller that showed complete data before (a first load is its own
                // change already).
                let completenessChanged = complete != box.isComplete && box.isLoaded
                box.isComplete = complete
                if !box.isLoaded, loaded.contains(record.subscriptionID) {
                    box.isLoaded = true
                    for waiter in box.loadWaiters { waiter.resume() }
                    box.loadWaiters = []
                }
                if !changeSet.isEmpty || pendingChanged || completenessChanged || cause == .reverted {
                    box.deliver(
                        RawChange(
                            seq: seq, changeSet: changeSet, cause: cause, error: error, pendingIDs: pending,
                            provisional: !complete))
                }
            }
        }
        if !failures.isEmpty {
            for failure in failures {
                self.logger.error("change set failed validation", metadata: ["meridian.failure": "\(failure)"])
            }
            self.changeSetValidationFailures += failures
        }
    }

    /// The pending ids a controller shows.
    func pendingIDs(shownBy box: EngineBox) -> Set<String> {
        var result: Set<String> = []
        for key in self.overlay.keys where key.entity == box.entity && box.results.row(id: key.id) != nil {
            result.insert(key.id)
        }
        return result
    }

    /// Ends a subscription's controllers with an error (its Subscribe was rejected).
    func failControllers(of subscriptionID: String, with error: ClientError) {
        let ids = self.controllers.filter { $0.value.subscriptionID == subscriptionID }.map(\.key)
        let sinks = self.view.withLock { state in
            var sinks: [AsyncThrowingStream<RawChange, any Error>.Continuation] = []
            for id in ids {
                guard let box = state.engines[id] else { continue }
                box.error = error
                sinks += box.sinks.values
                box.sinks = [:]
                for waiter in box.loadWaiters { waiter.resume(throwing: error) }
                box.loadWaiters = []
            }
            return sinks
        }
        // Finish outside the lock: a stream's termination handler takes the lock to unregister itself.
        for sink in sinks { sink.finish(throwing: error) }
    }

    // MARK: - Inspection (tests, benchmarks)

    /// The number of cached rows across all entities.
    package var cachedRowCount: Int { self.rows.values.reduce(0) { $0 + $1.count } }

    /// The ids of the subscriptions the context holds.
    package var subscriptionIDs: [String] { self.subscriptions.keys.sorted() }

    /// Every cached server row of an entity (no pending writes).
    package func cachedRows(of entity: String) -> [Row] {
        self.rows[entity].map { Array($0.values.map(\.row)) } ?? []
    }
}

// MARK: - Internal state types

/// A cached server row: its latest image, its version, and how many subscriptions hold it.
struct CachedRow {
    var row: Row
    var version: Int64
    var references: Int32
}

/// Where a subscription stands on the current stream.
enum SubscriptionPhase: Equatable {
    /// Not subscribed on the current stream (offline, or not sent yet).
    case idle
    /// Subscribed; no Batch has applied its snapshot yet.
    case awaitingSnapshot
    /// Receiving deltas.
    case live
    /// The server rejected it.
    case failed(ClientError)

    static func == (lhs: SubscriptionPhase, rhs: SubscriptionPhase) -> Bool {
        switch (lhs, rhs) {
        case (.idle, .idle), (.awaitingSnapshot, .awaitingSnapshot), (.live, .live), (.failed, .failed): true
        default: false
        }
    }
}

/// A Replace sent and not yet answered.
struct PendingReplace {
    var request: FetchRequest
    var bound: BoundFetchRequest
}

/// A snapshot being received, staged until a Batch makes it the subscription's result.
struct SnapshotBuffer {
    var seq: Int64
    var resnapshot: Bool
    var rows: [(row: Row, version: Int64)] = []
    /// Whether its last chunk arrived.
    var isComplete = false
}

/// One subscription: its request, its members, and where it stands.
struct SubscriptionState {
    let id: String
    var request: FetchRequest
    var bound: BoundFetchRequest
    let shareable: Bool
    var members: Set<String> = []
    /// Whether `members` is the complete result at the applied seq (so it may resume).
    var hasData = false
    var phase = SubscriptionPhase.idle
    var snapshot: SnapshotBuffer?
    var pendingReplace: PendingReplace?
    /// The epoch of its Subscribe on the open stream (see `CacheContext.epochs`); nil when not subscribed.
    var epoch: UInt32?
    var replaceWaiters: [CheckedContinuation<Void, any Error>] = []
    var controllerCount = 0

    var entity: String { self.request.entity }

    init(id: String, request: FetchRequest, bound: BoundFetchRequest, shareable: Bool) {
        self.id = id
        self.request = request
        self.bound = bound
        self.shareable = shareable
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

/// What one commit touched: rows by subscription, and subscriptions to re-read entirely.
struct CommitWork {
    var affected: [String: Set<String>] = [:]
    var resets: Set<String> = []

    var isEmpty: Bool { self.affected.isEmpty && self.resets.isEmpty }

    /// Adds another commit's work to this one.
    mutating func merge(_ other: CommitWork) {
        for (id, rows) in other.affected { self.affected[id, default: []].formUnion(rows) }
        self.resets.formUnion(other.resets)
    }
}
