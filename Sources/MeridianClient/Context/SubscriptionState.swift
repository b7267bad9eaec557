// MARK: - SubscriptionState
//
// The value types the replica state is made of: a subscription (its request, members and where it stands on the
// stream), a cached row, and the work one commit leaves for the controllers.

internal import MeridianCore
internal import OrderedCollections

/// One subscription: its request, its members, and where it stands.
struct SubscriptionState: Sendable {
    let id: String
    var request: FetchRequest
    var bound: BoundFetchRequest
    /// Whether other controllers may share it (region-mode subscriptions are private).
    let shareable: Bool
    /// The ids of its rows — but while ``holdsEntityCache``, when it is empty and the ids are those of the entity's
    /// cache. Read them through the replica (``ReplicaState/memberIDs(of:)`` and its siblings), which knows which.
    var members = MemberSet()
    /// Whether the subscription's members are every row of its entity's cache, kept as no set of their own: the
    /// subscription is then its entity's only one, so that every row cached for the entity is cached for it alone
    /// (``ReplicaState`` sets it for a first load and spells the members out before a second subscription of the
    /// entity appears). A set of its own held every id a second time: about 22 bytes a row.
    var holdsEntityCache = false
    /// Whether `members` is the complete result at the applied seq (so it may resume).
    var hasData = false
    var phase = SubscriptionPhase.idle
    /// The snapshot being received, staged until a Batch names it.
    var snapshot: SnapshotBuffer?
    /// A Replace sent and not yet answered.
    var pendingReplace: PendingReplace?
    /// The epoch of its Subscribe on the open stream (see ``ReplicaState``); nil when not subscribed.
    var epoch: UInt32?
    /// How many results controllers show it.
    var controllerCount = 0

    var entity: String { self.request.entity }

    init(id: String, request: FetchRequest, bound: BoundFetchRequest, shareable: Bool) {
        self.id = id
        self.request = request
        self.bound = bound
        self.shareable = shareable
    }

    /// Makes `request` the subscription's request.
    mutating func adopt(_ replace: PendingReplace) {
        self.request = replace.request
        self.bound = replace.bound
        self.pendingReplace = nil
    }
}

/// Where a subscription stands on the current stream.
enum SubscriptionPhase: Sendable, Equatable {
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

    var isFailed: Bool {
        if case .failed = self { true } else { false }
    }
}

/// A Replace sent and not yet answered.
struct PendingReplace: Sendable {
    var request: FetchRequest
    var bound: BoundFetchRequest
}

/// A snapshot being received, staged until a Batch makes it the subscription's result.
///
/// Its rows are kept as the entity's cache keeps them, by id, as each chunk arrives: a first load (no row of the
/// entity cached, no other subscription of it) then becomes the cache and the members at once when its Batch comes,
/// instead of hashing every id twice after the last chunk while the server has nothing left to send.
struct SnapshotBuffer: Sendable {
    var seq: Int64
    var resnapshot: Bool
    /// The rows received, by id (a later image of an id replaces an earlier one), each counted once: this
    /// subscription's reference, as the cache counts a new member.
    var rows = EntityCache()
    /// The rows the chunks carried (ids repeated counted again), for the log.
    var received = 0
    /// Whether its last chunk arrived.
    var isComplete = false
    /// The rows `rows` has room for (``stage(_:)``).
    private(set) var reserved = 0

    init(seq: Int64, resnapshot: Bool) {
        self.seq = seq
        self.resnapshot = resnapshot
    }

    /// Adds a chunk's rows.
    ///
    /// A snapshot's size is not known before its last chunk. Grown as an `OrderedDictionary` grows by itself (twice
    /// the room when full), the buffer rehashed about as many ids as it ended with, a third of the staging's time in
    /// a `sync` profile; here it takes the first chunk's room, then four times the room it had whenever it is full,
    /// rehashing about a third as many. The slack is transient: a first load's buffer is adopted as a copy at its
    /// size (``EntityCache/compacted()``), any other one dropped once applied.
    mutating func stage(_ rows: [VersionedRow]) {
        self.received += rows.count
        let needed = self.rows.count + rows.count
        if needed > self.reserved {
            self.reserved = self.reserved == 0 ? needed : max(needed, 4 * self.reserved)
            self.rows.reserveCapacity(self.reserved)
        }
        for row in rows {
            self.rows[row.row.id] = CachedRow(row: row.row, version: row.version, references: 1, seq: self.seq)
        }
    }

    /// The rows, in the order their ids first arrived.
    var versionedRows: [VersionedRow] {
        self.rows.map { VersionedRow(row: $0.value.row($0.key), version: $0.value.version) }
    }
}

/// A subscription's members: the ids of its rows.
///
/// An `OrderedSet` (swift-collections) whose order means nothing: the ids in one dense array and a hash table of
/// bit-packed positions, about 22 bytes an id where `Set<String>` took 21–43 (a 16-byte bucket each, its table a
/// quarter to three quarters full). An id leaves by swapping the last one into its place (removing by value would shift
/// every later id), and two member sets are equal when they hold the same ids, in any order.
struct MemberSet: Sendable, Equatable, Sequence, ExpressibleByArrayLiteral {
    private var ids = OrderedSet<String>()

    init() {}

    init(arrayLiteral ids: String...) {
        self.ids = OrderedSet(ids)
    }

    /// The ids of `cache`, in storage of their own (copied, not hashed again).
    init(idsOf cache: EntityCache) {
        self.ids = cache.keys
        self.ids.reserveCapacity(self.ids.count)
    }

    var count: Int { self.ids.count }
    var isEmpty: Bool { self.ids.isEmpty }

    func contains(_ id: String) -> Bool {
        self.ids.contains(id)
    }

    /// Adds `id`; whether it was not a member yet (as `Set.insert`'s `inserted`), and where it is.
    @discardableResult
    mutating func insert(_ id: String) -> (inserted: Bool, index: Int) {
        self.ids.append(id)
    }

    /// Removes `id`, if a member: the last id moves into its place.
    @discardableResult
    mutating func remove(_ id: String) -> String? {
        guard let index = self.ids.firstIndex(of: id) else { return nil }
        let last = self.ids.count - 1
        if index != last { self.ids.swapAt(index, last) }
        return self.ids.removeLast()
    }

    mutating func reserveCapacity(_ count: Int) {
        self.ids.reserveCapacity(count)
    }

    func makeIterator() -> OrderedSet<String>.Iterator {
        self.ids.makeIterator()
    }

    static func == (a: MemberSet, b: MemberSet) -> Bool {
        a.count == b.count && a.ids.allSatisfy(b.ids.contains)
    }
}

/// An entity's cached rows by id.
///
/// An `OrderedDictionary` (swift-collections): its keys and rows in two dense arrays and a hash table of their
/// positions, a few bits a bucket, where `Dictionary` keeps a key and a row in every bucket of a table a quarter to
/// three quarters full (64 to 128 bytes a row, against about 52). Its order means nothing here: a row leaves by
/// ``removeUnordered(_:)``, the last one taking its place, in O(1) (removing by key shifts every later entry).
typealias EntityCache = OrderedDictionary<String, CachedRow>

extension OrderedDictionary where Key == String, Value == CachedRow {
    /// A copy whose arrays are exactly as large as they are full (one grown by appending has up to twice the room):
    /// `self` still holds the storage while the copy reserves, so the copy gets storage of its own at that size, the
    /// entries copied as they are, not hashed again.
    func compacted() -> Self {
        var copy = self
        copy.reserveCapacity(copy.count)
        return copy
    }

    /// Removes the row of `id`, if cached: the last entry moves into its place.
    mutating func removeUnordered(_ id: String) {
        guard let index = self.index(forKey: id) else { return }
        let last = self.count - 1
        if index != last { self.swapAt(index, last) }
        self.removeLast()
    }
}

/// A cached server row: its latest image, its version, and how many subscriptions hold it.
///
/// The image is kept as its attribute values: the id is the key the entity's cache holds it under, not stored a
/// second time (16 bytes a row; 42 of the ~540 bytes a row of `meridian-bench sync` held while the cache was a
/// `Dictionary`, whose tables are a quarter to three quarters full).
struct CachedRow: Sendable {
    /// The image's attribute values, kept as the row kept them (compact for a row read from the wire).
    var values: Row.Storage
    var version: Int64
    /// The seq the image is at: a snapshot older than it never puts its older image back (see
    /// `ReplicaState.store(_:in:seq:work:)`); 0 for rows restored from a persisted cache.
    var seq: Int64 = 0
    var references: Int32

    init(row: Row, version: Int64, references: Int32, seq: Int64 = 0) {
        self.values = row.storage
        self.version = version
        self.references = references
        self.seq = seq
    }

    /// The image, as the row of id `id` (the key it is cached under).
    func row(_ id: String) -> Row {
        Row(id: id, storage: self.values)
    }
}

/// What one commit touched: rows by subscription, and subscriptions to re-read entirely.
struct CommitWork: Sendable {
    var affected: [String: Set<String>] = [:]
    var resets: Set<String> = []

    var isEmpty: Bool { self.affected.isEmpty && self.resets.isEmpty }
}
