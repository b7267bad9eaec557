// MARK: - ClientOutbox: one client's bounded, coalescing queue
//
// The hub never waits for a client: it enqueues here and moves on. The client's writer task takes one item at a time
// and writes it to the gRPC stream, where it may suspend for as long as the client does not read (HTTP/2 flow
// control). While it is suspended, batches pile up here and are merged into the last queued batch, folding
// consecutive changes to one row into one (`RowDelta` coalescing below). The merged batch holds at most one entry per
// row and subscription, so a client that falls behind on a few hot rows never grows its queue; when the distinct
// rows waiting pass `limit`, or their bytes `limitBytes`, the queued batches and snapshots are dropped and the hub
// re-snapshots every subscription of the client (`resnapshot`), which bounds the server's memory per client. Snapshots
// waiting are bounded apart, by `limitBytes` too: the hub asks `canTake(snapshotBytes:)` before it queues one.

internal import Dispatch
internal import GRPCCore
internal import MeridianCore
internal import MeridianProto
internal import SwiftProtobuf
internal import Synchronization

/// Part of a client's queue: a message built once, a batch (shared or merged), or a snapshot to cut into chunks.
enum OutboxItem: Sendable {
    indirect case message(Meridian_V1_SyncResponse)
    case batch(QueuedBatch)
    case snapshot(QueuedSnapshot)
}

/// A subscription's snapshot waiting to be sent, at `seq`, or the next piece of one streamed from the store. The
/// client stages it; the batch part flagged `snapshot` that follows it makes it visible.
struct QueuedSnapshot: Sendable {
    var subscriptionID: String
    var epoch: UInt32
    var seq: Int64
    /// A whole snapshot's rows, cut into chunks as they are sent; empty for a streamed piece.
    var rows: [VersionedRow]
    var resnapshot: Bool
    /// About the bytes it holds (``bytes(of:)`` of its rows, or its encoded piece's), counted against the client's
    /// bound while it waits.
    var bytes: Int
    /// A piece of a snapshot streamed from the store: one chunk's whole message, written as the store read its rows
    /// (``StreamedChunks``), sent as it is.
    var encoded: [UInt8]?

    /// A whole snapshot of `rows`.
    init(subscriptionID: String, epoch: UInt32, seq: Int64, rows: [VersionedRow], resnapshot: Bool) {
        self.subscriptionID = subscriptionID
        self.epoch = epoch
        self.seq = seq
        self.rows = rows
        self.resnapshot = resnapshot
        self.bytes = Self.bytes(of: rows)
    }

    /// A piece of a snapshot streamed from the store: one chunk, written whole (``StreamedChunks``).
    init(subscriptionID: String, epoch: UInt32, seq: Int64, encoded: [UInt8], resnapshot: Bool) {
        self.subscriptionID = subscriptionID
        self.epoch = epoch
        self.seq = seq
        self.rows = []
        self.resnapshot = resnapshot
        self.bytes = encoded.count
        self.encoded = encoded
    }

    /// About the bytes rows take in a snapshot: each row's size (``RowSize``) and a little framing.
    static func bytes(of rows: [VersionedRow]) -> Int {
        rows.reduce(0) { $0 + RowSize.of($1.row) + 16 }
    }
}

/// A client subscription as the wire names it: its id and the epoch of the Subscribe that made it.
struct WireSubscription: Hashable, Sendable {
    var id: String
    var epoch: UInt32
}

/// One subscription's part of a batch: the shared delta, the client's id for it, whether it answers a Replace, and
/// whether the subscription's staged snapshot becomes visible with it.
struct BatchPart: Sendable {
    var subscription: WireSubscription
    var delta: SharedDelta
    var replaced: Bool
    /// The subscription's snapshot (queued before this batch) is applied first, then `delta`.
    var snapshot = false
    /// With `snapshot`: the snapshot's seq, its chunks' (`SubscriptionDelta.snapshot_seq`), by which the client
    /// knows it staged that snapshot and not an older one.
    var snapshotSeq: Int64 = 0
    /// The entity's derived attributes, named in `changed` when coalescing finds one of their dependencies changed.
    var derived: [DerivedAttribute] = []

    init(
        subscription: WireSubscription, delta: SharedDelta, replaced: Bool, snapshot: Bool = false,
        snapshotSeq: Int64 = 0, derived: [DerivedAttribute] = []
    ) {
        self.subscription = subscription
        self.delta = delta
        self.replaced = replaced
        self.snapshot = snapshot
        self.snapshotSeq = snapshot ? snapshotSeq : 0
        self.derived = derived
    }

    /// The part that makes a subscription's staged snapshot, at `seq`, visible, with nothing else.
    static func snapshotReady(_ subscription: WireSubscription, replaced: Bool = false, seq: Int64) -> BatchPart {
        BatchPart(
            subscription: subscription, delta: SharedDelta(entered: [], left: [], updated: []), replaced: replaced,
            snapshot: true, snapshotSeq: seq)
    }
}

/// A batch waiting for the client: either one hub batch as shared parts (sent without re-encoding), or several
/// merged, row by row.
struct QueuedBatch: Sendable {
    var seq: Int64
    /// The parts of a single hub batch, while nothing was merged into it.
    var shared: [BatchPart]?
    /// The merged changes by subscription, once a second batch was merged in.
    var merged: [WireSubscription: MergedDelta] = [:]
    /// Subscriptions in first-appearance order (for a stable encoding).
    var mergedOrder: [WireSubscription] = []
    var rowCount: Int
    /// About the bytes it takes: the shared encoded bodies, or the merged rows' sizes (``MergedDelta/bytes``).
    var byteCount: Int
    /// When the oldest commit it carries was committed (microseconds since 1970, the log's `committed_at`), for
    /// `meridian_commit_to_send_seconds`; `nil` for a batch made of no commit (a snapshot's release).
    var committedAt: Int64?

    init(seq: Int64, parts: [BatchPart], committedAt: Int64? = nil) {
        self.seq = seq
        self.committedAt = committedAt
        self.shared = parts
        self.rowCount = parts.reduce(0) { $0 + $1.delta.rowCount }
        self.byteCount = parts.reduce(0) { $0 + $1.delta.body.count }
    }

    /// Folds a later batch into this one; returns how many rows were coalesced away.
    mutating func merge(seq: Int64, parts: [BatchPart], committedAt: Int64? = nil) -> Int {
        if let committedAt { self.committedAt = min(self.committedAt ?? committedAt, committedAt) }
        if let shared = self.shared {
            self.shared = nil
            self.rowCount = 0
            self.byteCount = 0
            for part in shared { self.fold(part) }
        }
        let before = self.rowCount + parts.reduce(0) { $0 + $1.delta.rowCount }
        for part in parts { self.fold(part) }
        self.seq = max(self.seq, seq)
        return before - self.rowCount
    }

    private mutating func fold(_ part: BatchPart) {
        let key = part.subscription
        if self.merged[key] == nil {
            self.merged[key] = MergedDelta()
            self.mergedOrder.append(key)
        }
        let (oldRows, oldBytes) = (self.merged[key]!.count, self.merged[key]!.bytes)
        self.merged[key]!.fold(part)
        self.rowCount += self.merged[key]!.count - oldRows
        self.byteCount += self.merged[key]!.bytes - oldBytes
    }

    /// The subscriptions this batch answers a Replace for (parts flagged `replaced`).
    var answeredReplaces: [WireSubscription] {
        if let shared { return shared.filter(\.replaced).map(\.subscription) }
        return self.mergedOrder.filter { self.merged[$0]?.replaced == true }
    }

    /// The serialized `SyncResponse{batch}`.
    func encoded() -> [UInt8] {
        SharedBatchEncoding.syncResponse(seq: self.seq, parts: self.wireParts())
    }

    /// The serialized `SyncResponse{batch}`, cut into messages of at most `maxBytes` (protocol version 2, see
    /// `Batch.continued`).
    func encoded(maxBytes: Int) -> [[UInt8]] {
        SharedBatchEncoding.syncResponses(seq: self.seq, parts: self.wireParts(), maxBytes: maxBytes)
    }

    /// The parts as the encoder takes them: the shared bodies as they are, merged ones written by hand (no
    /// Meridian_V1_Row dictionaries: a client that fell behind is the moment the server can least afford the generic
    /// encoder).
    private func wireParts() -> [SharedBatchEncoding.Part] {
        if let shared {
            return shared.map {
                SharedBatchEncoding.Part(
                    subscriptionID: $0.subscription.id, epoch: $0.subscription.epoch, body: $0.delta.body,
                    replaced: $0.replaced, snapshot: $0.snapshot, snapshotSeq: $0.snapshotSeq)
            }
        }
        return self.mergedOrder.compactMap { key in
            self.merged[key].map { merged in
                SharedBatchEncoding.Part(
                    subscriptionID: key.id, epoch: key.epoch, body: merged.body(), replaced: merged.replaced,
                    snapshot: merged.snapshot, snapshotSeq: merged.snapshotSeq)
            }
        }
    }
}

/// Several batches' changes to one subscription, one entry per row.
struct MergedDelta: Sendable {
    var rows: [String: RowDelta] = [:]
    var order: [String] = []
    var replaced = false
    /// The subscription's staged snapshot is applied before the rows.
    var snapshot = false
    /// That snapshot's seq (``BatchPart/snapshotSeq``).
    var snapshotSeq: Int64 = 0
    /// About the bytes of its rows (``size(_:)`` of each).
    private(set) var bytes = 0

    var count: Int { self.rows.count }

    mutating func fold(_ part: BatchPart) {
        if part.snapshot {
            // The snapshot is the subscription's whole result at its seq: what was folded before it is superseded.
            self.rows = [:]
            self.order = []
            self.bytes = 0
            self.snapshot = true
            self.snapshotSeq = part.snapshotSeq
        }
        if part.replaced { self.replaced = true }
        for (id, delta) in part.delta.rowDeltas {
            guard let existing = self.rows[id] else {
                self.rows[id] = delta
                self.order.append(id)
                self.bytes += Self.size(delta)
                continue
            }
            let coalesced = Self.coalesce(existing, delta, derived: part.derived)
            self.bytes += (coalesced.map(Self.size) ?? 0) - Self.size(existing)
            self.rows[id] = coalesced
        }
    }

    /// About the bytes one row's change takes on the wire: the row (``RowSize``) and a little framing, or the id.
    static func size(_ delta: RowDelta) -> Int {
        switch delta {
        case .entered(let row): RowSize.of(row.row) + 16
        case .updated(let row, let changed): RowSize.of(row.row) + 16 + changed.reduce(0) { $0 + $1.utf8.count + 2 }
        case .left(let id, _): id.utf8.count + 2
        }
    }

    /// The net effect of `first` followed by `second` on one row (`nil`: nothing to tell the client).
    static func coalesce(_ first: RowDelta, _ second: RowDelta, derived: [DerivedAttribute]) -> RowDelta? {
        switch (first, second) {
        case (.entered, .entered(let row)), (.entered, .updated(let row, _)):
            return .entered(row)
        case (.entered, .left):
            return nil
        case (.updated(_, let a), .updated(let row, let b)):
            return .updated(row, changed: Array(Set(a).union(b)).sorted { $0.utf8Compare($1) < 0 })
        case (.updated, .left(let id, _)), (.left, .left(let id, _)):
            return .left(id: id, before: nil)
        case (.left(_, let before?), .entered(let row)):
            // The row left and came back: to the client, which still holds its old image, it changed — if not in
            // its values, then in its version, which the client must hold as the store's.
            let changed = row.row.changedAttributes(from: before)
            return .updated(row, changed: derived.addingDependents(to: changed))
        case (.left(_, nil), .entered(let row)), (.left, .updated(let row, _)), (.updated, .entered(let row)):
            // The client's image is unknown here: report every attribute as changed.
            var all: [String] = []
            row.row.forEachValue { name, _ in all.append(name) }
            all.sort { $0.utf8Compare($1) < 0 }
            return .updated(row, changed: derived.addingDependents(to: all))
        }
    }

    /// `SubscriptionDelta` fields 2–4, in row order within each field: the bytes of ``proto(_:)``
    /// without the id and `replaced`.
    func body() -> [UInt8] {
        var entered: [(row: Row, version: Int64)] = []
        var left: [String] = []
        var updated: [(row: Row, version: Int64, changed: [String])] = []
        for id in self.order {
            switch self.rows[id] {
            case .entered(let row): entered.append((row.row, row.version))
            case .left(let id, _): left.append(id)
            case .updated(let row, let changed): updated.append((row.row, row.version, changed))
            case nil: break
            }
        }
        return DeltaWireEncoding.subscriptionDeltaBody(entered: entered, left: left, updated: updated)
    }

    /// The merged changes as a message (what ``body()`` encodes, with the id and `replaced`).
    func proto(_ subscription: WireSubscription) -> Meridian_V1_SubscriptionDelta {
        var delta = Meridian_V1_SubscriptionDelta()
        delta.subscriptionID = subscription.id
        delta.epoch = subscription.epoch
        delta.replaced = self.replaced
        delta.snapshot = self.snapshot
        delta.snapshotSeq = self.snapshotSeq
        for id in self.order {
            switch self.rows[id] {
            case .entered(let row): delta.entered.append(Meridian_V1_Row(row.row, version: row.version))
            case .left(let id, _): delta.left.append(id)
            case .updated(let row, let changed):
                delta.updated.append(Meridian_V1_RowUpdate(row.row, version: row.version, changed: changed))
            case nil: break
            }
        }
        return delta
    }
}

// MARK: - ClientOutbox

/// One client's outbound queue: the hub enqueues without ever waiting; the client's writer takes items one by one.
final class ClientOutbox: Sendable {
    /// What happened to an enqueued batch.
    enum EnqueueResult {
        /// Queued (possibly merged into the previous batch, coalescing this many rows).
        case queued(coalesced: Int)
        /// The queue passed its limit and was dropped: re-snapshot the client.
        case overflowed
        /// The client is gone.
        case closed
    }

    private struct State {
        var items: [OutboxItem] = []
        var head = 0
        var queuedRows = 0
        /// About the bytes of the queued and held batches (``QueuedBatch/byteCount``).
        var queuedBytes = 0
        /// The bytes of the queued snapshots (``QueuedSnapshot/bytes``), bounded when the hub queues one.
        var snapshotBytes = 0
        var waiter: CheckedContinuation<OutboxItem?, Never>?
        var finished = false
        var lastSentSeq: Int64 = 0
        var lastActivity = ContinuousClock.now
        /// While the hub answers a group of subscriptions the client already shows (a reconnection's, an overflow's),
        /// its batches are merged here instead of being queued, and sent as one batch when the last one is answered.
        var holding = false
        var held: QueuedBatch?
        /// Set when an overflow dropped the queue, until the hub re-snapshots the client (``dropAndHold()``): until
        /// then no batch or snapshot is taken. A batch queued in between — a release in the same hub batch that
        /// overflowed the client — could carry one answer of a group whose others the drop took (the client showed
        /// the rest at the seq it reconnected from under the batch's seq), or name a snapshot whose chunks the drop
        /// took (docs/checker.md, "Findings").
        var overflowed = false
        /// Set when the stream must end with an error (the fan-out stopped): the writer throws it.
        var failure: RPCError?
        /// The subscriptions whose Replace answer was dropped with the queue, until the hub re-snapshots them.
        var droppedReplaceAnswers: Set<WireSubscription> = []
        /// A snapshot streamed from the store waits for room (``waitForSnapshotRoom(_:budget:timeout:)``).
        var roomWaiter: DispatchSemaphore?
        /// Called once when the queue fails (``onFailure(_:)``).
        var failureHandler: (@Sendable () -> Void)?

        /// Wakes the snapshot stream waiting for room, if any (snapshot bytes went down, or the queue ended).
        mutating func wakeRoomWaiter() {
            self.roomWaiter?.signal()
            self.roomWaiter = nil
        }

        var isEmpty: Bool { self.head == self.items.count }

        mutating func popFirst() -> OutboxItem? {
            guard self.head < self.items.count else { return nil }
            let item = self.items[self.head]
            self.head += 1
            if self.head == self.items.count {
                self.items.removeAll(keepingCapacity: true)
                self.head = 0
            } else if self.head > 64, self.head * 2 > self.items.count {
                self.items.removeFirst(self.head)
                self.head = 0
            }
            switch item {
            case .batch(let batch):
                self.uncount(batch)
                // Only batches move what the client shows (a snapshot is staged until a batch names it).
                self.lastSentSeq = max(self.lastSentSeq, batch.seq)
            case .snapshot(let snapshot):
                self.snapshotBytes -= snapshot.bytes
                self.wakeRoomWaiter()
            case .message:
                break
            }
            self.lastActivity = .now
            return item
        }

        /// Hands `item` to a waiting writer, or queues it.
        mutating func push(_ item: OutboxItem) -> CheckedContinuation<OutboxItem?, Never>? {
            if let waiter = self.waiter, self.isEmpty {
                self.waiter = nil
                if case .batch(let batch) = item { self.lastSentSeq = max(self.lastSentSeq, batch.seq) }
                self.lastActivity = .now
                return waiter
            }
            switch item {
            case .batch(let batch): self.count(batch)
            case .snapshot(let snapshot): self.snapshotBytes += snapshot.bytes
            case .message: break
            }
            self.items.append(item)
            return nil
        }

        mutating func count(_ batch: QueuedBatch) {
            self.queuedRows += batch.rowCount
            self.queuedBytes += batch.byteCount
        }

        mutating func uncount(_ batch: QueuedBatch) {
            self.queuedRows -= batch.rowCount
            self.queuedBytes -= batch.byteCount
        }
    }

    /// The most distinct row changes that may wait.
    let limit: Int
    /// The most bytes of batches that may wait, and of snapshots (see ``canTake(snapshotBytes:)``).
    let limitBytes: Int
    private let state = Mutex(State())

    /// An outbox bounded by `limit` row changes and `limitBytes` bytes.
    init(limit: Int, limitBytes: Int = 64 << 20) {
        self.limit = max(1, limit)
        self.limitBytes = max(1, limitBytes)
    }

    /// Whether the waiting batches pass a bound (the queue is then dropped and the client re-snapshotted).
    private func isOver(_ state: State) -> Bool {
        state.queuedRows > self.limit || state.queuedBytes > self.limitBytes
    }

    /// Whether a snapshot of `bytes` fits beside the snapshots already waiting: the hub refuses a subscription whose
    /// snapshot does not (`CODE_LIMIT_EXCEEDED`), so that snapshots never hold more than `limitBytes` per client.
    func canTake(snapshotBytes bytes: Int) -> Bool {
        self.state.withLock { $0.snapshotBytes + bytes <= self.limitBytes }
    }

    /// What ``waitForSnapshotRoom(_:budget:timeout:)`` found.
    enum SnapshotRoom {
        /// The piece fits: queue it.
        case room
        /// The queue ended (the stream is gone): stop reading.
        case ended
        /// The client took no snapshot bytes for the whole timeout.
        case stalled
    }

    /// Waits, blocking the calling thread (a store reader's, never the cooperative pool's), until a snapshot piece of
    /// `bytes` fits beside the snapshots waiting within `budget` (a piece always fits when none waits), the queue
    /// ends, or `timeout` passes with the client taking nothing.
    func waitForSnapshotRoom(_ bytes: Int, budget: Int, timeout: Duration) -> SnapshotRoom {
        enum Step {
            case found(SnapshotRoom)
            case wait(DispatchSemaphore, snapshotBytes: Int)
        }
        while true {
            let step = self.state.withLock { state -> Step in
                if state.finished { return .found(.ended) }
                if state.snapshotBytes == 0 || state.snapshotBytes + bytes <= budget { return .found(.room) }
                let semaphore = state.roomWaiter ?? DispatchSemaphore(value: 0)
                state.roomWaiter = semaphore
                return .wait(semaphore, snapshotBytes: state.snapshotBytes)
            }
            let (semaphore, before): (DispatchSemaphore, Int)
            switch step {
            case .found(let room): return room
            case .wait(let waiting, let snapshotBytes): (semaphore, before) = (waiting, snapshotBytes)
            }
            if semaphore.wait(timeout: .now() + .nanoseconds(Int(clamping: timeout.nanoseconds))) == .timedOut {
                let moved = self.state.withLock { state -> Bool in
                    if state.roomWaiter === semaphore { state.roomWaiter = nil }
                    return state.finished || state.snapshotBytes < before
                }
                if !moved { return .stalled }
            }
        }
    }

    /// Queues a message (Welcome, errors, heartbeats, Goodbye).
    func enqueue(_ message: Meridian_V1_SyncResponse) {
        self.deliver(.message(message))
    }

    /// Queues a snapshot; it is never merged, and bounded apart from batches (``canTake(snapshotBytes:)``).
    func enqueue(_ snapshot: QueuedSnapshot) {
        self.deliver(.snapshot(snapshot))
    }

    /// Queues one hub batch's parts for this client at `seq`, merging into the last queued batch when there is one
    /// (or into the held batch while the outbox holds).
    func enqueueBatch(seq: Int64, parts: [BatchPart], committedAt: Int64? = nil) -> EnqueueResult {
        let (waiter, item, result): (CheckedContinuation<OutboxItem?, Never>?, OutboxItem?, EnqueueResult) =
            self.state.withLock { state in
                if state.finished { return (nil, nil, .closed) }
                // Dropped already: the re-snapshot the hub owes the client carries this batch's changes.
                if state.overflowed { return (nil, nil, .overflowed) }
                if state.holding {
                    var coalesced = 0
                    if var held = state.held {
                        state.uncount(held)
                        coalesced = held.merge(seq: seq, parts: parts, committedAt: committedAt)
                        state.held = held
                    } else {
                        state.held = QueuedBatch(seq: seq, parts: parts, committedAt: committedAt)
                    }
                    state.count(state.held!)
                    if self.isOver(state) {
                        Self.drop(&state)
                        return (nil, nil, .overflowed)
                    }
                    return (nil, nil, .queued(coalesced: coalesced))
                }
                if !state.isEmpty, case .batch(var last) = state.items[state.items.count - 1] {
                    state.uncount(last)
                    let coalesced = last.merge(seq: seq, parts: parts, committedAt: committedAt)
                    state.count(last)
                    state.items[state.items.count - 1] = .batch(last)
                    if self.isOver(state) {
                        Self.drop(&state)
                        return (nil, nil, .overflowed)
                    }
                    return (nil, nil, .queued(coalesced: coalesced))
                }
                let item = OutboxItem.batch(QueuedBatch(seq: seq, parts: parts, committedAt: committedAt))
                let waiter = state.push(item)
                if waiter == nil, self.isOver(state), state.items.count > 1 {
                    Self.drop(&state)
                    return (nil, nil, .overflowed)
                }
                return (waiter, item, .queued(coalesced: 0))
            }
        if let waiter { waiter.resume(returning: item) }
        return result
    }

    /// Drops every queued batch and snapshot, and the held batch (the hub re-snapshots the client); messages stay.
    /// The Replace answers dropped are remembered: the client never got them, so the re-snapshot must answer them.
    /// Until the re-snapshot starts (``dropAndHold()``), no batch or snapshot is taken (`overflowed`).
    private static func drop(_ state: inout State) {
        var kept: [OutboxItem] = []
        for item in state.items[state.head...] {
            switch item {
            case .message: kept.append(item)
            case .batch(let batch): state.droppedReplaceAnswers.formUnion(batch.answeredReplaces)
            case .snapshot: break
            }
        }
        if let held = state.held { state.droppedReplaceAnswers.formUnion(held.answeredReplaces) }
        state.items = kept
        state.head = 0
        state.queuedRows = 0
        state.queuedBytes = 0
        state.snapshotBytes = 0
        state.held = nil
        state.holding = true
        state.overflowed = true
        state.wakeRoomWaiter()
    }

    /// Drops everything queued but messages, and holds batches from now on (the hub re-snapshots every subscription
    /// of the client and answers them together).
    ///
    /// - Returns: The subscriptions whose Replace answer was dropped (since the last call): their re-snapshot is of
    ///   the new request, and must say that it answers the Replace.
    func dropAndHold() -> Set<WireSubscription> {
        self.state.withLock { state in
            Self.drop(&state)
            // The hub re-snapshots every subscription now: what it queues from here on is of the new snapshots.
            state.overflowed = false
            defer { state.droppedReplaceAnswers = [] }
            return state.droppedReplaceAnswers
        }
    }

    /// Holds batches from now on: they are merged into one, sent by ``endHold()``.
    ///
    /// - Parameter seq: The seq the client shows meanwhile (a reconnecting client's resume point): heartbeats
    ///   repeat it, never an older one.
    func beginHold(showing seq: Int64 = 0) {
        self.state.withLock { state in
            state.holding = true
            state.lastSentSeq = max(state.lastSentSeq, seq)
        }
    }

    /// Stops holding: the held batch, if any, is queued after everything queued meanwhile (snapshots, messages).
    func endHold() {
        let waiter = self.state.withLock { state -> (CheckedContinuation<OutboxItem?, Never>, OutboxItem)? in
            // Overflowed: nothing is sent until the hub re-snapshots the client (which holds again).
            guard state.holding, !state.overflowed else { return nil }
            state.holding = false
            guard let held = state.held, !state.finished else { return nil }
            state.held = nil
            // Counted already: push counts batches it queues, so take the held batch out first.
            state.uncount(held)
            let item = OutboxItem.batch(held)
            return state.push(item).map { ($0, item) }
        }
        if let (continuation, item) = waiter { continuation.resume(returning: item) }
    }

    /// Whether the outbox holds batches (for tests).
    var isHolding: Bool { self.state.withLock { $0.holding } }

    private func deliver(_ item: OutboxItem) {
        let waiter = self.state.withLock { state -> CheckedContinuation<OutboxItem?, Never>? in
            if state.finished { return nil }
            if state.overflowed, case .snapshot = item { return nil }
            return state.push(item)
        }
        waiter?.resume(returning: item)
    }

    /// Ends the queue: the writer sends what is queued, then stops.
    ///
    /// Not `finish(with: nil)` at the call site: an optional `SyncResponse` (about a kilobyte, its messages inline)
    /// would take that room in an async caller's frame, which a stream's writer keeps for as long as the stream lives.
    @inline(never)
    func finish() {
        self.finish(with: nil)
    }

    /// Queues a final message and ends the queue: the writer sends what is queued, then the message, then stops.
    func finish(with message: Meridian_V1_SyncResponse?) {
        let waiter = self.state.withLock { state -> CheckedContinuation<OutboxItem?, Never>? in
            if state.finished { return nil }
            var waiter: CheckedContinuation<OutboxItem?, Never>? = nil
            if let message { waiter = state.push(.message(message)) }
            state.finished = true
            state.wakeRoomWaiter()
            if waiter == nil, state.isEmpty, let idle = state.waiter {
                state.waiter = nil
                idle.resume(returning: nil)
            }
            return waiter
        }
        if let waiter, let message { waiter.resume(returning: .message(message)) }
    }

    /// Ends the queue with an error: what is queued is dropped, and the writer, finding nothing more, ends the stream
    /// with `error` (see ``failure``).
    ///
    /// With `last`, that message alone is sent before the stream ends (a `Goodbye` saying why).
    func fail(with error: RPCError, last: Meridian_V1_SyncResponse? = nil) {
        var handler: (@Sendable () -> Void)?
        defer { handler?() }
        let (waiter, item) = self.state.withLock {
            state -> (CheckedContinuation<OutboxItem?, Never>?, OutboxItem?) in
            if state.finished { return (nil, nil) }
            handler = state.failureHandler
            state.failureHandler = nil
            state.failure = error
            state.items = []
            state.head = 0
            state.held = nil
            state.queuedRows = 0
            state.queuedBytes = 0
            state.snapshotBytes = 0
            if let last, let waiter = state.push(.message(last)) {
                state.finished = true
                state.wakeRoomWaiter()
                return (waiter, .message(last))
            }
            state.finished = true
            state.wakeRoomWaiter()
            if last != nil { return (nil, nil) }
            defer { state.waiter = nil }
            return (state.waiter, nil)
        }
        waiter?.resume(returning: item)
    }

    /// The error the stream must end with, once ``next()`` returned `nil` after ``fail(with:)``.
    var failure: RPCError? { self.state.withLock { $0.failure } }

    /// Calls `handler` (once, outside the queue's lock) when ``fail(with:last:)`` ends the queue, at once if it has
    /// already failed; never if the queue finishes without failing.
    func onFailure(_ handler: @escaping @Sendable () -> Void) {
        let failed = self.state.withLock { state -> Bool in
            if state.failure != nil { return true }
            if !state.finished { state.failureHandler = handler }
            return false
        }
        if failed { handler() }
    }

    /// The next item to write, waiting for one; `nil` once the queue is finished and empty (or the task cancelled).
    @inline(never)
    func next() async -> OutboxItem? {
        if let item = self.state.withLock({ $0.popFirst() }) { return item }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<OutboxItem?, Never>) in
                let ready: OutboxItem?? = self.state.withLock { state in
                    if let item = state.popFirst() { return .some(item) }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = self.state.withLock { state in
                state.finished = true
                state.wakeRoomWaiter()
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Queues a heartbeat at `seq` (or the last seq sent, if later) when nothing was sent for `interval`.
    func heartbeatIfIdle(interval: Duration, seq: Int64) {
        let waiter = self.state.withLock { state -> (CheckedContinuation<OutboxItem?, Never>, OutboxItem)? in
            guard !state.finished, state.isEmpty, ContinuousClock.now - state.lastActivity >= interval else {
                return nil
            }
            var response = Meridian_V1_SyncResponse()
            var heartbeat = Meridian_V1_Heartbeat()
            // While holding, the client shows an older state than the hub's seq: tell it nothing new.
            heartbeat.seq = state.holding ? state.lastSentSeq : max(seq, state.lastSentSeq)
            state.lastSentSeq = heartbeat.seq
            response.heartbeat = heartbeat
            let item = OutboxItem.message(response)
            state.lastActivity = .now
            return state.push(item).map { ($0, item) }
        }
        if let (continuation, item) = waiter { continuation.resume(returning: item) }
    }

    /// The number of distinct row changes waiting (for tests and metrics).
    var queuedRows: Int { self.state.withLock { $0.queuedRows } }

    /// What waits for the client now, for the status page and the queue gauges.
    var load: (rows: Int, bytes: Int, sentSeq: Int64) {
        self.state.withLock { ($0.queuedRows, $0.queuedBytes + $0.snapshotBytes, $0.lastSentSeq) }
    }
}
