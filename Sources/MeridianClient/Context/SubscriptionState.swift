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
    var members = MemberSet()
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
struct SnapshotBuffer: Sendable {
    var seq: Int64
    var resnapshot: Bool
    var rows: [VersionedRow] = []
    /// Whether its last chunk arrived.
    var isComplete = false
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
