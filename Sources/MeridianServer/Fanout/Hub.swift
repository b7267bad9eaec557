// MARK: - Hub: the fan-out
//
// One task follows the store's commits (`run()`): on every wake-up it reads the change log once from the last seq it
// processed to the latest commit (so a batch always ends at a commit boundary), groups the changes by entity and row,
// evaluates each DISTINCT subscription once — clients whose fetch requests are equal (entity, bound predicate, order,
// limit) share one — encodes each distinct delta once, and queues one batch per affected client (the shared bytes
// plus the client's subscription ids). Queuing never waits: a slow client only grows (and coalesces, and at worst
// drops) its own queue (ClientOutbox).
//
// The hub runs on a thread of its own (FanoutThread, a one-thread NIO event loop) and reads the log on a database
// connection of its own (ChangeFeed), so neither a slow snapshot or Query nor a busy cooperative pool delays deltas.
// After a lone commit (one transaction, none waiting) whose fan-out is cheap, it runs on the committing thread
// instead, saving that thread's wake-up; the runs never overlap.
//
// The registry — clients, subscriptions, pending registrations, distinct subscriptions — lives in one Mutex: the
// queuing of one batch, and every registration, are atomic with respect to each other, so "the hub has processed
// seq H" means every client's queue holds exactly the batches up to H. The costly part of a batch, evaluating the
// unlimited distinct subscriptions it touches, runs outside the lock (it depends on the batch and the requests
// alone); limited ones, whose windows are state, are evaluated under it. Encoding happens in each stream's writer.
//
// ## New subscriptions, resumes and replaces (Hub+Registration.swift)
//
// A subscription that needs data from the store is first registered as *pending* at the hub's current seq H: from
// then on the hub appends every change of its entity to the pending's buffer, but sends it no deltas. The session
// then reads its base from the store outside the lock — a snapshot of every matching row at some seq S0 >= H, or for
// a resume the log's changes after the client's seq R up to some T >= H. The pending is *released* in line with the
// hub, under the lock, as soon as the hub has processed a seq X >= S0 (immediately if it already has; otherwise right
// after the batch that reaches S0): the base is advanced to X with the buffered changes after S0 (nothing between the
// snapshot and the first delta is lost or repeated), queued for the client after every batch <= X and before any
// batch > X, and the subscription joins its distinct subscription, so its deltas start with the batch after X. Thus
// `seq` never decreases along a stream, and every message leaves the client at a state the store had.
//
// ## The client's one rule: a Batch changes what it shows, a SnapshotChunk never does
//
// A released snapshot is queued as chunks the client stages, followed by a batch part flagged `snapshot` at X that
// makes it visible. Subscriptions the client already shows — re-added with Hello after a reconnection, or
// re-snapshotted after an overflow — are a *group*: while any of them is pending, the client's outbox holds its
// batches (merging them into one), and the release of the last one sends that one batch, which brings every
// subscription of the stream to its seq. A client therefore stays consistent by applying each Batch as it arrives.
// Every message about a subscription carries the epoch of the Subscribe that made it (counted by the session), so
// that a client reusing an id can drop what was sent for the old subscription.

internal import CoreMetrics
internal import GRPCCore
internal import Logging
internal import MeridianCore
internal import MeridianProto
internal import MeridianStore
internal import Synchronization

/// The key that makes subscriptions equal for fan-out: entity, bound predicate, order and limit (not the section key,
/// which only groups rows on the client).
///
/// Its hash is computed once: the hub looks keys up for every commit, and hashing walks the whole predicate tree
/// (with 1,000 distinct subscriptions, the hashing was a good part of each commit's fan-out).
struct SubscriptionKey: Hashable, Sendable {
    let entity: String
    let predicate: RowPredicate
    let order: RowOrder
    let limit: Int?
    private let hashCode: Int

    init(_ request: BoundFetchRequest) {
        self.entity = request.entity.name
        self.predicate = request.predicate
        self.order = request.order
        self.limit = request.limit
        var hasher = Hasher()
        hasher.combine(self.entity)
        hasher.combine(self.predicate)
        hasher.combine(self.order)
        hasher.combine(self.limit)
        self.hashCode = hasher.finalize()
    }

    static func == (a: SubscriptionKey, b: SubscriptionKey) -> Bool {
        a.hashCode == b.hashCode && a.entity == b.entity && a.limit == b.limit && a.order == b.order
            && a.predicate == b.predicate
    }

    func hash(into hasher: inout Hasher) { hasher.combine(self.hashCode) }
}

/// The fan-out: distinct subscriptions, connected clients and pending registrations, driven by the store's commits.
final class Hub: Sendable {
    /// A distinct subscription and every client subscription that holds it.
    struct Distinct {
        let request: BoundFetchRequest
        /// client id → the client's subscriptions with this key (id → epoch).
        var holders: [Int: [String: UInt32]] = [:]
        /// For a limited subscription: the first matching rows in order, at the hub's seq — its window and a
        /// margin (``BoundFetchRequest/heldRows``), not every matching row; refilled from the store when the margin
        /// runs out.
        var live: LiveResults? {
            get { self.limitedLive?.live }
            set { self.limitedLive = newValue.map(LiveBox.init) }
        }
        /// `live` in a box: most distinct subscriptions are unlimited, and a `LiveResults?` inline took 320 bytes
        /// in every bucket of the hub's table of them.
        var limitedLive: LiveBox?
        /// For a limited subscription: whether `live` holds every matching row (else the rows not held all sort
        /// after the last one held).
        var complete = true
        /// For a limited subscription: the version of every row `live` holds.
        var versions: [String: Int64] = [:]
        /// Batches that touched its entity, and the row changes it sent to all its holders (the status page's cost).
        var evaluations = 0
        var rowsSent = 0
    }

    /// A limited distinct subscription's `LiveResults` (see ``Distinct/live``).
    final class LiveBox: Sendable {
        let live: LiveResults
        init(_ live: LiveResults) { self.live = live }
    }

    /// One connected `Sync` stream.
    struct Client {
        let outbox: ClientOutbox
        /// Pending registrations whose base the session must read (`read(_:)`).
        let jobs: ReadJobs
        let name: String
        /// The peer (`ipv4:127.0.0.1:50312`), the authenticated subject and when the stream opened: the status page's.
        var peer = ""
        var subject: String?
        var connectedAt = ContinuousClock.now
        /// The most bytes of one snapshot chunk the client takes (a streamed snapshot is read in pieces of this).
        let chunkBytes: Int
        var subscriptions: [String: ClientSubscription] = [:]
        /// The client's resume point, when `Welcome.resumed` was true.
        var resumeFrom: Int64?
        /// The pending registrations of subscriptions the client already shows; while there are any, the outbox
        /// holds the client's batches (see "The client's one rule" above).
        var group: Set<Int> = []
        /// The log's changes the group's resumed subscriptions missed, read once for all of them.
        var resumeRead: ResumeRead?
    }

    /// The changes a resuming client missed, of the entities its resumed subscriptions read.
    struct ResumeRead {
        let from: Int64
        let entities: Set<String>
        /// The changes after `from` through `seq`, or `nil` when a snapshot is cheaper (past
        /// `--max-resume-changes`, or the log no longer reaches back to `from`).
        let changes: [Change]?
        let seq: Int64
    }

    /// One subscription of one client.
    struct ClientSubscription {
        /// The epoch of the Subscribe that made it (see meridian.proto, Subscribe).
        let epoch: UInt32
        /// The request the subscription is (or is becoming, while a Replace is pending).
        var request: BoundFetchRequest
        /// The distinct subscription it receives deltas from, once active.
        var active: SubscriptionKey?
        /// The request of the active key.
        var activeRequest: BoundFetchRequest?
        /// The pending registration, if any.
        var pending: Int?
        /// A Replace the client sent is not answered yet: the next snapshot or replacement sent for the subscription
        /// answers it, and says so (`SubscriptionDelta.replaced`), so that the client can tell it from a snapshot of
        /// the previous request sent before the server read the Replace.
        var replaceUnanswered = false
    }

    /// What a pending registration will send when released.
    enum PendingKind {
        /// A snapshot (flagged `resnapshot` or not).
        case snapshot(resnapshot: Bool)
        /// The deltas missed since the client's seq.
        case resume(from: Int64)
        /// The difference between the old request's result and the new one's.
        case replace(old: BoundFetchRequest)
    }

    /// What the session read from the store for a pending registration.
    enum Base {
        /// The rows matching the request in order, at `seq`: every one, or for a limited request the first
        /// ``BoundFetchRequest/heldRows`` (`complete` when that is every one).
        case rows([VersionedRow], seq: Int64, resnapshot: Bool, complete: Bool)
        /// Every row matching the (unlimited) request at `seq`, already queued for the client as snapshot chunks.
        case streamed(seq: Int64)
        /// The log's changes after the client's seq, up to `seq` (of the entity, and maybe of others: see
        /// ``ResumeRead``).
        case missed([Change], seq: Int64)
        /// The matching rows of the old request at `oldSeq` and of the new one at `newSeq` (each as `.rows`).
        case replace(
            old: [VersionedRow], oldSeq: Int64, oldComplete: Bool, new: [VersionedRow], newSeq: Int64, newComplete: Bool
        )

        var seq: Int64 {
            switch self {
            case .rows(_, let seq, _, _), .missed(_, let seq), .streamed(let seq): seq
            case .replace(_, let oldSeq, _, _, let newSeq, _): max(oldSeq, newSeq)
            }
        }
    }

    /// A subscription registered at `registeredAt` whose base is being read.
    struct Pending {
        let clientID: Int
        let subscriptionID: String
        let request: BoundFetchRequest
        let kind: PendingKind
        let registeredAt: Int64
        /// Every change of `entities` after `registeredAt` that the hub processed since.
        var buffer: [Change] = []
        /// About the bytes `buffer` holds (``Hub/bytes(of:)``), bounded by the client's `--client-queue-bytes`.
        var bufferBytes = 0
        var base: Base?

        var entities: Set<String> {
            if case .replace(let old) = self.kind { return [self.request.entity.name, old.entity.name] }
            return [self.request.entity.name]
        }
    }

    struct State {
        var processedSeq: Int64 = 0
        var shuttingDown = false
        /// Set when the fan-out stopped on an error: what a stream is told (new streams are refused with it).
        var failure: Meridian_V1_ErrorDetail?
        var distinct: [SubscriptionKey: Distinct] = [:]
        var clients: [Int: Client] = [:]
        var pendings: [Int: Pending] = [:]
        var nextID = 1
    }

    let store: Store
    let configuration: ServerConfiguration
    let metrics: ServerMetrics
    let logger: Logger
    let state = Mutex(State())

    init(store: Store, configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
    }

    /// The last seq the hub has processed (every client queue holds the batches up to it).
    var processedSeq: Int64 { self.state.withLock { $0.processedSeq } }

    // MARK: - Running

    /// Starts from the store's latest seq; call before serving.
    func start() async throws {
        let seq = try await self.store.latestSeq()
        self.state.withLock { $0.processedSeq = seq }
    }

    /// Follows the store's commits until cancelled, processing the log once per wake-up, on a thread of its own
    /// (``FanoutThread``) — or, after a lone commit whose fan-out is cheap, on the committing thread — with a database
    /// connection of its own (``ChangeFeed``).
    ///
    /// A read or decode error stops the fan-out for good (the log at that seq cannot be delivered, and skipping it
    /// would lose changes): it is logged, counted (`meridian_fanout_failures_total`), and every stream ends with
    /// `UNAVAILABLE`; new streams are refused the same way until the server restarts. Writes go on.
    func run() async throws {
        let feed: ChangeFeed
        do {
            feed = try self.store.changeFeed()
        } catch {
            self.fail(error)
            return
        }
        let thread = FanoutThread(hub: self, feed: feed)
        defer {
            thread.close()
            feed.close()
        }
        // An in-memory store's feed reads on the store's one connection, which the committing thread holds.
        let follower: (@Sendable (Int64, Int) -> Bool)? =
            feed.hasOwnConnection ? { @Sendable seq, rows in thread.followInline(seq, rows: rows) } : nil
        do {
            try await thread.follow(
                self.store.commits(pollInterval: self.configuration.commitPollInterval, follower: follower))
            await thread.shutdown()
        } catch {
            await thread.shutdown()
            if error is CancellationError { throw error }
            self.fail(error)
        }
    }

    /// Stops the fan-out after `error`: every stream ends with `UNAVAILABLE` and a message that names no internals
    /// (the error itself is logged here).
    func fail(_ error: any Error) {
        let seq = self.processedSeq
        self.logger.error(
            "the fan-out stopped: every Sync stream ends, and new ones are refused until the server restarts",
            metadata: ["meridian.seq": "\(seq)", "meridian.error": "\(error)"])
        self.metrics.fanoutFailures.increment()
        let detail = Meridian_V1_ErrorDetail(
            .unavailable,
            "the server's change feed stopped after seq \(seq) (a read or decode error, logged by the server); "
                + "Sync is unavailable until the server is restarted")
        let outboxes = self.state.withLock { state -> [ClientOutbox] in
            state.failure = detail
            return state.clients.values.map(\.outbox)
        }
        for outbox in outboxes { outbox.fail(with: RPCError(detail)) }
    }

    /// Reads and processes everything after the processed seq, on the calling thread (the fan-out's own, or the
    /// committing one; ``FanoutThread`` runs one at a time), in one read transaction: a limited subscription whose
    /// window runs short is refilled at the batch's end.
    ///
    /// With no client connected and no registration pending, nobody needs the changes: the hub moves to the latest
    /// seq without reading them (an import into a server nobody watches read and decoded every row it wrote: a third
    /// of the server's CPU, measured A/B in docs/speed-of-light.md). A client that connects afterwards registers at
    /// that seq, and its base is read from the store at or after it; one that connects before is seen here, under
    /// the lock, and the log is read.
    ///
    /// - Returns: How many row changes it found after the processed seq (none for a run woken for commits an earlier
    ///   run already read: its time says nothing of a commit's fan-out).
    @discardableResult
    func catchUp(_ feed: ChangeFeed) throws -> Int {
        if self.state.withLock({ $0.clients.isEmpty && $0.pendings.isEmpty }) {
            let latest = try feed.latestSeq()
            let skipped = self.state.withLock { state -> Int64? in
                guard state.clients.isEmpty, state.pendings.isEmpty else { return nil }
                let count = latest - state.processedSeq
                state.processedSeq = max(state.processedSeq, latest)
                return count
            }
            if let skipped {
                // Nobody to send them to: what the committer kept of them for the feed is not needed either.
                feed.skip(through: latest)
                if skipped > 0 {
                    self.metrics.fanoutBatches.increment()
                    self.metrics.fanoutRowChanges.increment(by: skipped)
                }
                return Int(max(0, skipped))
            }
        }
        let from = self.processedSeq
        var processed = 0
        let pruned = try feed.withTransaction { transaction -> Int64? in
            switch try transaction.changes(after: from) {
            case .changes(let batch):
                guard batch.throughSeq > from else { return nil }
                processed = max(1, batch.changes.count)
                let start = ContinuousClock.now
                try self.process(batch, from: from) { request in
                    let snapshot = try transaction.snapshot(
                        entity: request.entity.name, where: request.predicate, orderBy: request.order,
                        limit: request.heldRows)
                    return zip(snapshot.rows, snapshot.versions).map { VersionedRow(row: $0, version: $1) }
                }
                self.metrics.fanoutDuration.recordNanoseconds(Int64((ContinuousClock.now - start).nanoseconds))
                return nil
            case .tooOld(let prunedThrough):
                return prunedThrough
            }
        }
        if let prunedThrough = pruned {
            // The log was pruned past the hub (retention shorter than the hub's lag): everyone re-snapshots.
            let latest = try feed.latestSeq()
            self.logger.info(
                "change log pruned past the fan-out; re-snapshotting every client",
                metadata: ["meridian.seq": "\(from)", "meridian.pruned_through": "\(prunedThrough)"])
            self.state.withLock { state in
                state.processedSeq = max(state.processedSeq, latest)
                for id in Array(state.clients.keys) { self.resnapshotAll(id, &state) }
            }
            return Int(max(1, latest - from))
        }
        return processed
    }

    /// Processes one read of the log (a batch ending at a commit boundary): the unlimited subscriptions' deltas
    /// outside the lock, the rest under it. Called by one fan-out run at a time (``FanoutThread``), inside the read
    /// transaction of the batch: `refill` reads a limited request's kept rows at the batch's end.
    func process(
        _ batch: ChangeBatch, from: Int64, refill: (BoundFetchRequest) throws -> [VersionedRow]
    ) throws {
        let end = batch.throughSeq
        var byEntity: [String: [Change]] = [:]
        if let entity = batch.changes.first?.entity,
            batch.changes.indices.allSatisfy({ batch.changes[$0].entity == entity })
        {
            // One entity, the usual commit: its changes are the batch's array, not each change copied into another.
            byEntity[entity] = batch.changes
        } else {
            for change in batch.changes { byEntity[change.entity, default: []].append(change) }
        }
        var nets: [String: [NetChange]] = [:]
        func netChanges(_ entity: String) -> [NetChange] {
            if let cached = nets[entity] { return cached }
            let computed = NetChange.of(byEntity[entity] ?? [])
            nets[entity] = computed
            return computed
        }
        self.metrics.fanoutBatches.increment()
        self.metrics.fanoutRowChanges.increment(by: Int64(batch.changes.count))
        let committedAt = batch.changes.first?.committedAt.microseconds

        // 1. The unlimited distinct subscriptions the batch touches, evaluated outside the lock: their deltas depend
        // on their requests and the batch alone, and only this thread processes batches, so the registry is locked
        // just long enough to list them. (One created meanwhile is evaluated under the lock below; holders added
        // meanwhile were activated at the processed seq, before this batch, and get its delta.)
        let unlimited =
            byEntity.isEmpty
            ? []
            : self.state.withLock { state in
                state.distinct.compactMap { key, distinct in
                    key.limit == nil && byEntity[key.entity] != nil ? (key, distinct.request) : nil
                }
            }
        var evaluated: [SubscriptionKey: SharedDelta?] = [:]
        evaluated.reserveCapacity(unlimited.count)
        for (key, request) in unlimited { evaluated[key] = request.unlimitedDelta(netChanges(key.entity)) }

        try self.state.withLock { state in
            guard end > state.processedSeq else { return }
            // 2. The limited ones (their windows live here), and each distinct subscription's holders.
            var perClient: [Int: [BatchPart]] = [:]
            if !byEntity.isEmpty {
                for key in Array(state.distinct.keys) where byEntity[key.entity] != nil {
                    let delta: SharedDelta?
                    if key.limit != nil {
                        delta = try Self.limitedDelta(&state.distinct[key]!, netChanges(key.entity), refill: refill)
                    } else if let known = evaluated[key] {
                        delta = known
                    } else {
                        delta = state.distinct[key]!.request.unlimitedDelta(netChanges(key.entity))
                    }
                    state.distinct[key]!.evaluations += 1
                    guard let delta else { continue }
                    // Read once: each `state.distinct[key]!` copies the whole entry and hashes the key.
                    let distinct = state.distinct[key]!
                    state.distinct[key]!.rowsSent +=
                        delta.rowCount * distinct.holders.values.reduce(0) { $0 + $1.count }
                    let derived = distinct.request.entity.derived
                    for (client, ids) in distinct.holders {
                        for (id, epoch) in ids {
                            perClient[client, default: []].append(
                                BatchPart(
                                    subscription: WireSubscription(id: id, epoch: epoch), delta: delta,
                                    replaced: false, derived: derived))
                        }
                    }
                }
            }
            // 3. One batch per affected client.
            var overflowed: [Int] = []
            for (clientID, parts) in perClient {
                guard let client = state.clients[clientID] else { continue }
                switch client.outbox.enqueueBatch(seq: end, parts: parts, committedAt: committedAt) {
                case .queued(let coalesced):
                    if coalesced > 0 { self.metrics.coalesced.increment(by: Int64(coalesced)) }
                case .overflowed: overflowed.append(clientID)
                case .closed: break
                }
            }
            // 4. Pending registrations buffer their entities' changes, within the client's queue bytes (a snapshot
            //    streaming to a client that reads slowly would otherwise buffer every change for as long as it takes).
            //    Bytes only: the row bound is for a client's own queue; a read that takes long on a busy store passes
            //    a small row bound at once (meridian-check's 64) and would be re-snapshotted for ever.
            var bytesByEntity: [String: Int] = [:]
            for id in Array(state.pendings.keys) {
                let entities = state.pendings[id]!.entities
                for entity in entities {
                    guard let changes = byEntity[entity] else { continue }
                    state.pendings[id]!.buffer.append(contentsOf: changes)
                    if bytesByEntity[entity] == nil {
                        bytesByEntity[entity] = changes.reduce(0) { $0 + Self.bytes(of: $1) }
                    }
                    state.pendings[id]!.bufferBytes += bytesByEntity[entity]!
                }
                let pending = state.pendings[id]!
                if let outbox = state.clients[pending.clientID]?.outbox,
                    pending.bufferBytes > outbox.limitBytes,
                    !overflowed.contains(pending.clientID)
                {
                    overflowed.append(pending.clientID)
                }
            }
            state.processedSeq = end
            // 5. Clients past their queue limit start over from snapshots, before any release: their queues and
            //    held batches were dropped in step 3, and releasing a pending of theirs now would send its answer
            //    without the rest of its group's, or name a snapshot whose chunks were dropped (found by
            //    meridian-check, docs/checker.md). Their pendings are replaced by the re-snapshot's.
            for clientID in overflowed {
                self.logger.info(
                    "client queue over its limit; dropping it and re-snapshotting",
                    metadata: [
                        "meridian.client": "\(state.clients[clientID]?.name ?? "")", "meridian.seq": "\(end)",
                    ])
                self.metrics.overflows.increment()
                self.resnapshotAll(clientID, &state)
            }
            // 6. Releases that were waiting for the hub to reach their base.
            for id in state.pendings.keys.sorted() {
                if let base = state.pendings[id]?.base, base.seq <= end { self.release(id, &state) }
            }
        }
    }

    /// About the bytes a buffered change holds: its images' sizes (``RowSize``) and a little framing.
    static func bytes(of change: Change) -> Int {
        (change.before.map(RowSize.of) ?? 0) + (change.after.map(RowSize.of) ?? 0) + 16
    }

    /// A limited subscription's delta: its LiveResults applies the batch and its change set becomes entered, left
    /// and updated (rows pushed into or out of the window by others' changes enter and leave too).
    ///
    /// The LiveResults holds a prefix of the matching rows (``Distinct``): changes that sort after its last row are
    /// removals (``BoundFetchRequest/clipped(_:after:)``); when fewer rows than the window remain and the store has
    /// more, the prefix is read again (`refill`, at the batch's end) and the delta is the difference from the window
    /// before the batch to the one read.
    static func limitedDelta(
        _ distinct: inout Distinct, _ nets: [NetChange], refill: (BoundFetchRequest) throws -> [VersionedRow]
    ) throws -> SharedDelta? {
        guard let previous = distinct.live, let limit = distinct.request.limit else { return nil }
        let request = distinct.request
        let clipped = request.clipped(nets, after: distinct.complete ? nil : previous.lastMatchingRow)
        var byID: [String: NetChange] = [:]
        for net in nets { byID[net.id] = net }
        var changes: ChangeSet<Row>
        var live = previous
        changes = live.apply(clipped.map { net in net.after.map(RowMutation.upsert) ?? .delete(id: net.id) })
        if !distinct.complete, live.matchingCount < limit {
            // The margin ran out: the window's next rows are only in the store.
            let rows = try refill(request)
            live = previous
            changes = live.reset(rows: rows.map(\.row))
            distinct.versions = Dictionary(rows.map { ($0.row.id, $0.version) }, uniquingKeysWith: { $1 })
            distinct.complete = rows.count < request.heldRows!
        } else {
            for net in clipped {
                distinct.versions[net.id] = net.after.map { request.matches($0) } == true ? net.version : nil
            }
            if let held = request.heldRows, live.matchingCount > held + held / 2 {
                // Grown well past the margin: keep the prefix it needs.
                let beyond = live.matchingRows(from: held)
                _ = live.apply(beyond.map { .delete(id: $0.id) })
                for row in beyond { distinct.versions[row.id] = nil }
                distinct.complete = false
            }
        }
        distinct.live = live
        var entered: [VersionedRow] = []
        var left: [(id: String, before: Row?)] = []
        var updated: [(row: VersionedRow, changed: [String])] = []
        var told: Set<String> = []
        for change in changes.rowChanges {
            switch change {
            case .delete(let id, _):
                left.append((id, byID[id]?.before))
                told.insert(id)
            case .insert(let id, _, let row):
                entered.append(VersionedRow(row: row, version: distinct.versions[id] ?? 0))
                told.insert(id)
            case .move(let id, _, _, let row, _), .update(let id, _, _, let row, _):
                told.insert(id)
                guard let before = byID[id]?.before else { continue }
                let changed = request.changedAttributes(row, from: before)
                updated.append((VersionedRow(row: row, version: distinct.versions[id] ?? 0), changed))
            }
        }
        // A row in the window before and after whose values did not change (the change set leaves it out) still
        // has a new version, which the client must hold (``BoundFetchRequest/unlimitedDelta(_:)``).
        for net in nets where net.before != nil && !told.contains(net.id) {
            guard previous.row(id: net.id) != nil, let row = live.row(id: net.id) else { continue }
            updated.append((VersionedRow(row: row, version: distinct.versions[net.id] ?? net.version), []))
        }
        if entered.isEmpty && left.isEmpty && updated.isEmpty { return nil }
        return SharedDelta(entered: entered, left: left, updated: updated)
    }

    // MARK: - Shutdown

    /// Tells every client goodbye and ends their queues; new streams are refused from now on.
    func beginShutdown(reason: String) {
        let outboxes = self.state.withLock { state -> [ClientOutbox] in
            state.shuttingDown = true
            return state.clients.values.map(\.outbox)
        }
        let response = Meridian_V1_SyncResponse.goodbye(reason)
        for outbox in outboxes { outbox.finish(with: response) }
    }

    /// The reason of the graceful shutdown's Goodbye.
    static let shutdownReason = "server shutting down"

    /// Sends due heartbeats (called periodically).
    func heartbeat() {
        let (seq, outboxes) = self.state.withLock { ($0.processedSeq, $0.clients.values.map(\.outbox)) }
        for outbox in outboxes {
            outbox.heartbeatIfIdle(interval: self.configuration.heartbeatInterval, seq: seq)
        }
    }
}
