// MARK: - ReplicaState
//
// The replicated rows of one client as a value: the subscriptions (request, members, phase on the stream), the union
// of their rows with reference counts, the applied seq and the epochs of the open stream. Every change is a
// mutating operation that says what it touched (`CommitWork`) and records what to persist (`ReplicaChanges`); the
// context's actor owns one and decides what to send and whom to wake. Split by concern:
// - ReplicaState.swift: subscriptions and rows;
// - ReplicaState+Stream.swift: the Sync stream's side (Subscribe and its epoch, staged snapshots, Batches, errors).

internal import MeridianCore
internal import OrderedCollections

/// The replicated state of a cache context: subscriptions, their rows and the applied seq.
struct ReplicaState: Sendable {
    /// The last seq applied (a Batch, a completed snapshot or a Heartbeat).
    private(set) var appliedSeq: Int64 = 0
    /// The union of every subscription's rows: entity → id → row.
    private(set) var rows: [String: EntityCache] = [:]
    /// The subscriptions, by id.
    private(set) var subscriptions: [String: SubscriptionState] = [:]
    /// The number of Subscribes sent per id on the open stream: the epoch the server puts on every message about
    /// the subscription (a subscription subscribed again under the same id — a region moved before its snapshot
    /// arrived, a shared request closed and reopened — drops what was sent for the old one by its epoch).
    var epochs: [String: UInt32] = [:]
    /// The parts received of a Batch sent in parts, until its last part arrives (see ``ReplicaState/apply(_:work:)``).
    var heldBatch: SyncEvent.Batch?
    /// The subscriptions `Hello` re-added with `resume`, with their epochs, until the stream's first Batch: the server
    /// answers them all in that one Batch (docs/protocol.md), so one it leaves out would keep showing its rows of the
    /// seq the client reconnected from under the batch's seq.
    var awaitingHelloAnswer: [String: UInt32] = [:]
    /// The number the next private subscription's id carries.
    private var nextPrivateSubscription = 1
    /// Whether changes are recorded for persistence.
    let recordsChanges: Bool
    /// Whether an entity's only subscription may hold its whole cache as its members (``SubscriptionState/holdsEntityCache``)
    /// instead of a set of their ids; `false` only in tests, as the rule the other way is pinned against.
    let holdsEntityCaches: Bool
    /// What changed since the last ``takeChanges()``.
    private(set) var changes = ReplicaChanges()

    /// An empty replica.
    ///
    /// - Parameters:
    ///   - recordsChanges: Record what to persist (for a context with a cache file).
    ///   - holdsEntityCaches: Let an entity's only subscription take its cache's ids as its members (tests turn it
    ///     off to compare with member sets spelled out).
    init(recordsChanges: Bool, holdsEntityCaches: Bool = true) {
        self.recordsChanges = recordsChanges
        self.holdsEntityCaches = holdsEntityCaches
    }

    // MARK: - Reading

    /// The server's row for an id, if any subscription holds it.
    func serverRow(_ entity: String, _ id: String) -> Row? {
        self.rows[entity]?[id]?.row(id)
    }

    /// The server's rows of a subscription's members, in no particular order.
    func serverRows(of subscription: SubscriptionState) -> [Row] {
        guard let cached = self.rows[subscription.entity] else { return [] }
        if subscription.holdsEntityCache { return cached.map { $0.value.row($0.key) } }
        let ids = subscription.members
        assert(ids.allSatisfy { cached[$0] != nil }, "every member of a subscription is cached")
        // Every member is cached (a row stays while a subscription holds it): members as many as the entity's cached
        // rows are those rows, read without hashing each id (the one subscription of an entity, or the widest).
        if ids.count == cached.count { return cached.map { $0.value.row($0.key) } }
        var rows: [Row] = []
        rows.reserveCapacity(ids.count)
        for id in ids {
            if let row = cached[id]?.row(id) { rows.append(row) }
        }
        return rows
    }

    /// What each of `ids` is for a subscription with no write pending: its server row while it is a member, a
    /// delete otherwise. The entity's cache is looked up once; when the subscription's members are all of the
    /// entity's cached rows (its one subscription, or the widest), the cache alone says whether an id is a member.
    func serverMutations(_ ids: Set<String>, of subscription: SubscriptionState) -> [RowMutation] {
        let cached = self.rows[subscription.entity] ?? [:]
        let membersAreCached = subscription.holdsEntityCache || subscription.members.count == cached.count
        var mutations: [RowMutation] = []
        mutations.reserveCapacity(ids.count)
        for id in ids {
            if membersAreCached || subscription.members.contains(id), let row = cached[id]?.row(id) {
                mutations.append(.upsert(row))
            } else {
                mutations.append(.delete(id: id))
            }
        }
        return mutations
    }

    /// Whether `id` is a member of `subscription` (one of this replica's).
    func isMember(_ id: String, of subscription: SubscriptionState) -> Bool {
        subscription.holdsEntityCache
            ? self.rows[subscription.entity]?.index(forKey: id) != nil : subscription.members.contains(id)
    }

    /// The number of members of `subscription` (one of this replica's).
    func memberCount(of subscription: SubscriptionState) -> Int {
        subscription.holdsEntityCache ? self.rows[subscription.entity]?.count ?? 0 : subscription.members.count
    }

    /// The ids of the members of `subscription` (one of this replica's) that `include` takes (all by default), in no
    /// particular order: an array of their own, so that members can be dropped while it is walked.
    func memberIDs(of subscription: SubscriptionState, where include: (String) -> Bool = { _ in true }) -> [String] {
        subscription.holdsEntityCache
            ? self.rows[subscription.entity]?.keys.filter(include) ?? [] : subscription.members.filter(include)
    }

    /// The members of a subscription as a set, however they are kept; `nil` when there is no such subscription.
    func members(of subscriptionID: String) -> MemberSet? {
        guard let subscription = self.subscriptions[subscriptionID] else { return nil }
        guard subscription.holdsEntityCache else { return subscription.members }
        return MemberSet(idsOf: self.rows[subscription.entity] ?? [:])
    }

    /// Gives every subscription of `entity` that holds the entity's cache as its members (``SubscriptionState/holdsEntityCache``)
    /// a set of their ids, before a second subscription of the entity appears (added, restored, or another one's
    /// request replaced by one of this entity): from then on a cached row of the entity need not be a member of each.
    private mutating func spellOutMembers(ofEntity entity: String) {
        for index in self.subscriptions.indices
        where self.subscriptions.values[index].holdsEntityCache && self.subscriptions.values[index].entity == entity {
            self.subscriptions.values[index].members = MemberSet(idsOf: self.rows[entity] ?? [:])
            self.subscriptions.values[index].holdsEntityCache = false
        }
    }

    /// Makes `replace` the request of subscription `id`. A request of another entity first spells out the members of
    /// the subscriptions holding the cache of the entity it leaves (its own, which its callers then drop, read from
    /// that entity's cache) and of the one it joins (whose subscriptions are no longer its only ones); one of the same
    /// entity (a map region moving) changes nothing of who holds what.
    mutating func adopt(_ id: String, _ replace: PendingReplace) {
        guard let entity = self.subscriptions[id]?.entity else { return }
        if replace.request.entity != entity {
            self.spellOutMembers(ofEntity: entity)
            self.spellOutMembers(ofEntity: replace.request.entity)
        }
        self.modify(id) { $0.adopt(replace) }
    }

    /// The version of a cached row, if any subscription holds it.
    func version(_ entity: String, _ id: String) -> Int64? {
        self.rows[entity]?[id]?.version
    }

    /// The number of cached rows across all entities.
    var rowCount: Int { self.rows.values.reduce(0) { $0 + $1.count } }

    /// Marks a row as changed for every subscription of its entity (but those re-read entirely anyway).
    func touch(_ entity: String, _ id: String, work: inout CommitWork) {
        for subscriptionID in self.touched(by: entity, work) { work.affected[subscriptionID, default: []].insert(id) }
    }

    /// The subscriptions a changed row of `entity` is named for in `work.affected`: the entity's, but those being
    /// reset (re-read entirely anyway).
    private func touched(by entity: String, _ work: CommitWork) -> [String] {
        var ids: [String] = []
        // By index, each field read in place: iterating the dictionary copied every subscription's whole state.
        for index in self.subscriptions.indices where self.subscriptions.values[index].request.entity == entity {
            let subscriptionID = self.subscriptions.keys[index]
            if !work.resets.contains(subscriptionID) { ids.append(subscriptionID) }
        }
        return ids
    }

    // MARK: - Subscriptions

    /// Adds a subscription (not yet subscribed on any stream).
    mutating func add(_ subscription: SubscriptionState) {
        self.spellOutMembers(ofEntity: subscription.entity)
        self.subscriptions[subscription.id] = subscription
        self.record(subscription.id)
    }

    /// An id for a subscription that is not shared, unique in this replica.
    mutating func makePrivateSubscriptionID(key: String) -> String {
        defer { self.nextPrivateSubscription += 1 }
        return "m-\(self.nextPrivateSubscription)-\(key.dropFirst(2))"
    }

    /// Removes a subscription and releases its rows.
    ///
    /// - Returns: The subscription as it was, or `nil` when there was none.
    @discardableResult
    mutating func remove(_ id: String) -> SubscriptionState? {
        guard let subscription = self.subscriptions.removeValue(forKey: id) else { return nil }
        // Its rows are released after it left: those of a subscription holding its entity's cache are the cache's.
        if subscription.holdsEntityCache {
            for rowID in self.memberIDs(of: subscription) { self.releaseRow(subscription.entity, rowID) }
        } else {
            for rowID in subscription.members { self.releaseRow(subscription.entity, rowID) }
        }
        if self.recordsChanges { self.changes.subscriptions[id] = .some(nil) }
        return subscription
    }

    /// Counts one more controller showing a subscription.
    mutating func retain(_ id: String) {
        self.modify(id) { $0.controllerCount += 1 }
    }

    /// Counts one controller less showing a subscription.
    ///
    /// - Returns: How many controllers still show it (`nil` when there is no such subscription).
    mutating func release(_ id: String) -> Int? {
        self.modify(id) { subscription in
            subscription.controllerCount -= 1
            return subscription.controllerCount
        }
    }

    /// Changes a subscription's request at once, keeping the cached rows the new request selects; the server's
    /// answer (a snapshot, on the next Subscribe) completes it.
    mutating func adoptOffline(_ id: String, _ replace: PendingReplace, work: inout CommitWork) {
        guard let entity = self.subscriptions[id]?.entity else { return }
        self.adopt(id, replace)
        self.modify(id) { $0.hasData = false }
        self.dropMembers(of: id, entity: entity, work: &work) { !replace.bound.matches($0) }
        self.record(id)
    }

    // MARK: - Rows

    /// Makes room for at least `count` cached rows of an entity at once (a snapshot's), instead of rehashing as
    /// they arrive.
    mutating func reserveRows(_ entity: String, atLeast count: Int) {
        self.rows[entity, default: [:]].reserveCapacity(max(self.rows[entity]?.count ?? 0, count))
    }

    /// Adds (or refreshes) a server row as a member of a subscription.
    ///
    /// `seq` is the seq the row's image is at: a Batch's for its deltas, a snapshot's own for its rows. A snapshot
    /// may be older than the cached image of a row another subscription shows (the server streams a large snapshot
    /// while the stream's Batches go on; the Batch that applies it carries what changed since): the newer image
    /// stays, and only the membership is taken, so that a row that left the snapshot's subscription since does not
    /// keep an old image in the others.
    ///
    /// The stream stores rows through the array version below, which does this for each row with its lookups done
    /// once; this one row at a time is the rule it is pinned against (`ReplicaStateTests`).
    mutating func store(_ row: VersionedRow, in subscriptionID: String, seq: Int64, work: inout CommitWork) {
        let id = row.row.id
        guard let index = self.subscriptions.index(forKey: subscriptionID) else { return }
        let entity = self.subscriptions.values[index].entity
        // Holding the entity's cache, its members are the cached rows: a row is a new member when it is new there.
        let isNewMember =
            self.subscriptions.values[index].holdsEntityCache
            ? self.rows[entity]?.index(forKey: id) == nil
            : self.subscriptions.values[index].members.insert(id).inserted
        if isNewMember, self.recordsChanges {
            self.changes.memberships[MembershipKey(subscription: subscriptionID, id: id)] = true
        }
        // Updated in place: one lookup of the entity and of the id, where reading a copy and writing it back took two.
        let changed = Self.refresh(
            &self.rows[entity, default: [:]][
                id, default: CachedRow(row: row.row, version: row.version, references: 0, seq: seq)],
            with: row, seq: seq, isNewMember: isNewMember)
        if changed { self.recordRow(entity, id) }
        // A changed row is touched for every subscription of its entity, this one included.
        if isNewMember, !changed, !work.resets.contains(subscriptionID) {
            work.affected[subscriptionID, default: []].insert(id)
        }
        if changed { self.touch(entity, id, work: &work) }
    }

    /// ``store(_:in:seq:work:)`` for many rows of one subscription (a completed snapshot's, a Batch's entered or
    /// updated rows), in order: its members, its entity's cache and the subscriptions a changed row touches are
    /// looked up once, not for every row (a 200,000-row snapshot hashed the subscription's id four times a row and
    /// copied every subscription's state once a row to find those of its entity).
    mutating func store(_ rows: [VersionedRow], in subscriptionID: String, seq: Int64, work: inout CommitWork) {
        guard !rows.isEmpty, let index = self.subscriptions.index(forKey: subscriptionID) else { return }
        let entity = self.subscriptions.values[index].entity
        // What `store` and `touch` name in `work.affected`, taken out while they grow: a new member that did not
        // change for this subscription, a changed row for every subscription of the entity; none being reset.
        let touched = self.touched(by: entity, work)
        let existed = touched.map { work.affected[$0] != nil }
        var affected = touched.map { work.affected.removeValue(forKey: $0) ?? [] }
        let own = touched.firstIndex(of: subscriptionID)
        // Taken out while they grow, so that each stays uniquely referenced (no copy) and is reached without a lookup.
        var members = MemberSet()
        swap(&members, &self.subscriptions.values[index].members)
        // Its members are the entity's cached rows: a row is a new member when it is new to the cache.
        let holdsCache = self.subscriptions.values[index].holdsEntityCache
        let wasCached = self.rows[entity] != nil
        var cache = self.rows.removeValue(forKey: entity) ?? [:]
        // A subscription's first rows (a Batch of a bulk load after an empty snapshot): room for all of them at once,
        // where growing by doubling rehashed every id stored so far about once more. Only then: a Batch of changes
        // to rows already held would leave its room as slack. The affected ids' sets last only for this commit, and
        // get every changed row: room for them whatever the cache held (a bulk write into rows already shown grew
        // them one doubling at a time).
        if holdsCache ? cache.isEmpty : members.isEmpty {
            if !holdsCache { members.reserveCapacity(rows.count) }
            if cache.isEmpty { cache.reserveCapacity(rows.count) }
        }
        for i in affected.indices where affected[i].isEmpty { affected[i].reserveCapacity(rows.count) }
        for row in rows {
            let id = row.row.id
            // One look-up of the id in the cache, for a row it holds and for a new one (where the subscript with a
            // default, and the cached row read back for the record, took two and three, and finding the id before
            // inserting it hashed every new id twice: a bulk load's rows are all new).
            var isNew = false
            let stored = cache.updateValue(forKey: id, default: Self.fresh(row, seq: seq, marking: &isNew)) { cached in
                let isNewMember = holdsCache ? isNew : members.insert(id).inserted
                if isNewMember, self.recordsChanges {
                    self.changes.memberships[MembershipKey(subscription: subscriptionID, id: id)] = true
                }
                let changed = Self.refresh(&cached, with: row, seq: seq, isNewMember: isNewMember)
                return (changed: changed, isNewMember: isNewMember)
            }
            if stored.changed {
                if self.recordsChanges { self.recordRow(entity, id, cache[id]) }
                for i in affected.indices { affected[i].insert(id) }
            } else if stored.isNewMember, let own {
                affected[own].insert(id)
            }
        }
        self.subscriptions.values[index].members = members
        if wasCached || !cache.isEmpty { self.rows[entity] = cache }
        for (i, id) in touched.enumerated() where existed[i] || !affected[i].isEmpty { work.affected[id] = affected[i] }
    }

    /// A row new to the cache, before ``refresh(_:with:seq:isNewMember:)`` stores `row` into it; sets `made`.
    private static func fresh(_ row: VersionedRow, seq: Int64, marking made: inout Bool) -> CachedRow {
        made = true
        return CachedRow(row: row.row, version: row.version, references: 0, seq: seq)
    }

    /// Makes a staged snapshot's rows a subscription's first rows at once, when nothing of its entity is cached and
    /// no other subscription of the entity is to be told (this one being reset): then the staged rows — each new,
    /// referenced once, at the snapshot's seq — are exactly what ``store(_:in:seq:work:)`` would leave in the entity's
    /// cache, and their ids the members (`ReplicaStateTests` pins the two against each other).
    ///
    /// - Returns: Whether it did; if not, nothing changed.
    mutating func adoptFirstLoad(_ staged: EntityCache, in subscriptionID: String, work: CommitWork) -> Bool {
        guard let index = self.subscriptions.index(forKey: subscriptionID) else { return false }
        let entity = self.subscriptions.values[index].entity
        guard self.rows[entity]?.isEmpty ?? true, self.subscriptions.values[index].members.isEmpty,
            self.touched(by: entity, work).isEmpty
        else { return false }
        // Staged as they arrived, with the slack of arrays grown by appending: kept at their size.
        let cache = staged.compacted()
        // The entity's only subscription takes the cache's ids as its members; beside others, a set of them.
        let alone = !self.subscriptions.contains { $0.key != subscriptionID && $0.value.entity == entity }
        if self.holdsEntityCaches, alone {
            self.subscriptions.values[index].holdsEntityCache = true
        } else {
            self.subscriptions.values[index].members = MemberSet(idsOf: cache)
            self.subscriptions.values[index].holdsEntityCache = false
        }
        if !cache.isEmpty || self.rows[entity] != nil { self.rows[entity] = cache }
        if self.recordsChanges {
            for (id, cached) in staged {
                self.changes.memberships[MembershipKey(subscription: subscriptionID, id: id)] = true
                self.recordRow(entity, id, cached)
            }
        }
        return true
    }

    /// Takes `row` into a cached row (a fresh one when it was not cached) unless the cached image is newer, and
    /// counts a new member's reference; whether what the subscriptions show of it changed.
    private static func refresh(_ cached: inout CachedRow, with row: VersionedRow, seq: Int64, isNewMember: Bool)
        -> Bool
    {
        let newer = seq >= cached.seq
        // Changed for the subscriptions: shown for the first time, or a newer image (of the same id: its values).
        var changed = isNewMember && cached.references == 0
        if newer, !changed { changed = cached.values != row.row.storage || cached.version != row.version }
        if newer {
            cached.values = row.row.storage
            cached.version = row.version
            cached.seq = seq
        }
        if isNewMember { cached.references += 1 }
        return changed
    }

    /// Removes a row from a subscription's members.
    mutating func dropMember(_ id: String, from subscriptionID: String, work: inout CommitWork) {
        guard let index = self.subscriptions.index(forKey: subscriptionID) else { return }
        let entity = self.subscriptions.values[index].entity
        let removed =
            self.subscriptions.values[index].holdsEntityCache
            ? self.rows[entity]?.index(forKey: id) != nil
            : self.subscriptions.values[index].members.remove(id) != nil
        guard removed else { return }
        if self.recordsChanges {
            self.changes.memberships[MembershipKey(subscription: subscriptionID, id: id)] = false
        }
        self.releaseRow(entity, id)
        work.affected[subscriptionID, default: []].insert(id)
    }

    /// Drops every member of a subscription.
    mutating func dropAllMembers(of subscriptionID: String, work: inout CommitWork) {
        // The ids first, in an array of their own: no copy of the subscription is held while its members go.
        let ids = self.subscriptions[subscriptionID].map { self.memberIDs(of: $0) } ?? []
        for member in ids { self.dropMember(member, from: subscriptionID, work: &work) }
    }

    /// Drops the members of a subscription whose row fails `isStale` (or is not cached).
    mutating func dropMembers(
        of subscriptionID: String,
        entity: String,
        work: inout CommitWork,
        where isStale: (Row) -> Bool
    ) {
        let stale =
            self.subscriptions[subscriptionID].map { subscription in
                self.memberIDs(of: subscription) { id in self.serverRow(entity, id).map(isStale) ?? true }
            } ?? []
        for id in stale { self.dropMember(id, from: subscriptionID, work: &work) }
    }

    /// Drops one subscription's reference to a cached row, forgetting the row when none is left.
    private mutating func releaseRow(_ entity: String, _ id: String) {
        guard var cached = self.rows[entity]?[id] else { return }
        cached.references -= 1
        if cached.references <= 0 {
            self.rows[entity]?.removeUnordered(id)
        } else {
            self.rows[entity]?[id] = cached
        }
        self.recordRow(entity, id)
    }

    // MARK: - Seq

    /// Moves the applied seq forward.
    ///
    /// - Returns: Whether it moved.
    @discardableResult
    mutating func advance(to seq: Int64) -> Bool {
        guard seq > self.appliedSeq else { return false }
        self.appliedSeq = seq
        if self.recordsChanges { self.changes.seq = seq }
        return true
    }

    // MARK: - Restoring

    /// Rebuilds a subscription and its members from a persisted cache (nothing is recorded: it is on disk).
    ///
    /// - Parameters:
    ///   - members: The ids of its rows.
    ///   - rows: Every persisted row, by key; members missing from it are skipped.
    mutating func restore(_ subscription: SubscriptionState, members: [String], rows: [RowKey: VersionedRow]) {
        var subscription = subscription
        let entity = subscription.entity
        self.spellOutMembers(ofEntity: entity)
        for id in members {
            guard let row = rows[RowKey(entity: entity, id: id)] else { continue }
            subscription.members.insert(id)
            var cached = self.rows[entity]?[id] ?? CachedRow(row: row.row, version: row.version, references: 0)
            cached.references += 1
            self.rows[entity, default: [:]][id] = cached
        }
        self.subscriptions[subscription.id] = subscription
        if !subscription.shareable {
            self.nextPrivateSubscription = max(
                self.nextPrivateSubscription, (Int(subscription.id.dropFirst(2).prefix { $0 != "-" }) ?? 0) + 1)
        }
    }

    /// Sets the applied seq of a persisted cache (nothing is recorded).
    mutating func restore(seq: Int64) {
        self.appliedSeq = seq
    }

    /// Records that a persisted subscription was dropped.
    mutating func forget(_ id: String) {
        if self.recordsChanges { self.changes.subscriptions[id] = .some(nil) }
    }

    // MARK: - Changes

    /// Returns what changed since the last call, and forgets it.
    mutating func takeChanges() -> ReplicaChanges {
        defer { self.changes = ReplicaChanges() }
        return self.changes
    }

    /// Records a subscription's current state for persistence.
    mutating func record(_ id: String) {
        guard self.recordsChanges, let subscription = self.subscriptions[id] else { return }
        self.changes.subscriptions[id] = SubscriptionRecord(
            request: subscription.request, hasData: subscription.hasData, shareable: subscription.shareable)
    }

    /// Records a cached row's current state (or its removal) for persistence.
    private mutating func recordRow(_ entity: String, _ id: String) {
        self.recordRow(entity, id, self.rows[entity]?[id])
    }

    /// Records a cached row's state as `cached` (`nil`: removed) for persistence.
    private mutating func recordRow(_ entity: String, _ id: String, _ cached: CachedRow?) {
        guard self.recordsChanges else { return }
        self.changes.rows[RowKey(entity: entity, id: id)] = .some(
            cached.map { VersionedRow(row: $0.row(id), version: $0.version) })
    }

    /// Whether the subscription has loaded data; `false` when there is none. Reads the one field in place (a
    /// `SubscriptionState` read out of the dictionary is copied whole, a retain and a release for each of its parts).
    func hasData(_ id: String) -> Bool {
        guard let index = self.subscriptions.index(forKey: id) else { return false }
        return self.subscriptions.values[index].hasData
    }

    /// Runs `body` on a subscription in place (a copy would copy its members on every change).
    ///
    /// - Returns: What `body` returned, or `nil` when there is no such subscription.
    @discardableResult
    mutating func modify<T>(_ id: String, _ body: (inout SubscriptionState) throws -> T) rethrows -> T? {
        guard let index = self.subscriptions.index(forKey: id) else { return nil }
        return try body(&self.subscriptions.values[index])
    }
}

/// What a replica changed since its changes were last taken, for the cache file.
struct ReplicaChanges: Sendable {
    var seq: Int64?
    /// Rows written or removed (nil), by key.
    var rows: [RowKey: VersionedRow?] = [:]
    /// Memberships added (true) or removed (false), net.
    var memberships: [MembershipKey: Bool] = [:]
    /// Subscriptions written or removed (nil).
    var subscriptions: [String: SubscriptionRecord?] = [:]
}

/// A subscription as the cache file keeps it.
struct SubscriptionRecord: Sendable {
    var request: FetchRequest
    var hasData: Bool
    var shareable: Bool
}
