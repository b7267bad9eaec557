// MARK: - ReplicaState, alone
//
// The replica state is a value: these tests feed it decoded events and check its rows, members, seq and epochs,
// with no server, no actor and no controllers.

import MeridianCore
import OrderedCollections
import Testing

@testable import MeridianClient

@Suite("Replica state")
struct ReplicaStateTests {
    /// A replica with one subscription per id, each subscribed on a fresh stream (epoch 1), not yet loaded.
    func replica(_ ids: [String] = ["s"], where predicate: String = "", recordsChanges: Bool = false) throws
        -> ReplicaState
    {
        var replica = ReplicaState(recordsChanges: recordsChanges)
        for id in ids {
            let request = try FetchRequest(entity: "Point", where: predicate)
            replica.add(
                SubscriptionState(id: id, request: request, bound: try request.bind(to: testSchema), shareable: true))
        }
        _ = replica.streamOpened()
        return replica
    }

    func chunk(
        _ id: String, seq: Int64, _ rows: [VersionedRow], epoch: UInt32 = 1, index: UInt32 = 0, last: Bool = true
    ) -> SyncEvent.SnapshotChunk {
        SyncEvent.SnapshotChunk(
            subscriptionID: id, epoch: epoch, seq: seq, index: index, isLast: last, resnapshot: false, rows: rows)
    }

    func delta(
        _ id: String, epoch: UInt32 = 1, snapshot: Bool = false, replaced: Bool = false, left: [String] = [],
        entered: [VersionedRow] = [], updated: [VersionedRow] = [], snapshotSeq: Int64 = 0
    ) -> SyncEvent.Delta {
        SyncEvent.Delta(
            subscriptionID: id, epoch: epoch, snapshot: snapshot, replaced: replaced, left: left, entered: entered,
            updated: updated, snapshotSeq: snapshotSeq)
    }

    func versioned(_ row: Row, _ version: Int64) -> VersionedRow {
        VersionedRow(row: row, version: version)
    }

    @Test("a snapshot is staged and shows only when a Batch names it")
    func snapshotStagedUntilBatch() throws {
        var replica = try self.replica()
        let stagedFirst = replica.stage(
            self.chunk("s", seq: 5, [self.versioned(point("a", "Alpha", 1), 3)], last: false))
        #expect(stagedFirst)
        let stagedLast = replica.stage(
            self.chunk("s", seq: 5, [self.versioned(point("b", "Bravo", 2), 4)], index: 1, last: true))
        #expect(stagedLast)
        #expect(replica.rowCount == 0)
        #expect(replica.appliedSeq == 0)
        #expect(replica.subscriptions["s"]?.hasData == false)

        var work = CommitWork()
        let outcome = try replica.apply(.init(seq: 5, deltas: [self.delta("s", snapshot: true)]), work: &work)
        #expect(outcome.cause == .snapshot)
        #expect(outcome.moved)
        #expect(outcome.snapshots.map(\.rowCount) == [2])
        #expect(replica.appliedSeq == 5)
        #expect(replica.members(of: "s") == ["a", "b"])
        #expect(replica.subscriptions["s"]?.hasData == true)
        #expect(replica.subscriptions["s"]?.phase == .live)
        #expect(replica.serverRow("Point", "b") == point("b", "Bravo", 2))
        #expect(replica.version("Point", "a") == 3)
        #expect(work.resets == ["s"])
    }

    @Test("a cached row is 32 bytes inline: its values' one reference, its version, its seq and its reference count")
    func cachedRowSize() {
        #expect(MemoryLayout<CachedRow>.stride == 32)
    }

    @Test("a staged snapshot takes room four times as large when it is full, not a chunk's worth at a time")
    func stagedRoomGrowsGeometrically() {
        // Twenty chunks of a hundred rows: grown four times (100, 400, 1,600, 6,400 rows), each time once, where
        // room for each chunk as it came would rehash every row staged so far twenty times.
        var buffer = SnapshotBuffer(seq: 1, resnapshot: false)
        var rooms: [Int] = []
        for c in 0..<20 {
            buffer.stage((0..<100).map { self.versioned(point("p\(c * 100 + $0)", "t", 1), 1) })
            if rooms.last != buffer.reserved { rooms.append(buffer.reserved) }
            #expect(buffer.rows.keys.elements.capacity >= buffer.reserved)
        }
        #expect(rooms == [100, 400, 1_600, 6_400])
        #expect(buffer.rows.keys.elements == (0..<2_000).map { "p\($0)" })
        #expect(buffer.received == 2_000)
    }

    @Test("a Batch in parts is held until its last part, then applied as one step; a part at another seq is refused")
    func batchInParts() throws {
        var replica = try self.replica()
        replica.stage(self.chunk("s", seq: 5, [self.versioned(point("a", "Alpha", 1), 3)]))
        var work = CommitWork()
        // The snapshot's flag and one row come first; the rest follows in two more parts.
        let first = try replica.apply(
            .init(
                seq: 6, deltas: [self.delta("s", snapshot: true, entered: [self.versioned(point("b", "Bravo", 1), 1)])],
                continued: true),
            work: &work)
        #expect(!first.moved)
        #expect(replica.rowCount == 0)
        #expect(replica.subscriptions["s"]?.hasData == false)
        _ = try replica.apply(
            .init(seq: 6, deltas: [self.delta("s", left: ["a"])], continued: true), work: &work)
        #expect(replica.rowCount == 0)
        #expect(replica.appliedSeq == 0)
        #expect(work.isEmpty)
        let last = try replica.apply(
            .init(seq: 6, deltas: [self.delta("s", entered: [self.versioned(point("c", "Charlie", 1), 1)])]),
            work: &work)
        #expect(last.moved)
        #expect(last.snapshots.map(\.rowCount) == [1])
        #expect(replica.appliedSeq == 6)
        #expect(replica.members(of: "s") == ["b", "c"])

        // Parts must share their seq: a part at another one breaks the stream.
        _ = try replica.apply(.init(seq: 7, deltas: [self.delta("s", left: ["b"])], continued: true), work: &work)
        #expect(throws: ClientError.self) {
            _ = try replica.apply(.init(seq: 8, deltas: [self.delta("s", left: ["c"])]), work: &work)
        }
        #expect(replica.appliedSeq == 6)
        #expect(replica.members(of: "s") == ["b", "c"])
        // A stream that ends drops the parts it held.
        _ = try replica.apply(.init(seq: 9, deltas: [self.delta("s", left: ["b"])], continued: true), work: &work)
        _ = replica.streamClosed(work: &work)
        #expect(replica.heldBatch == nil)
    }

    @Test("a Batch applies its snapshots oldest seq first, then its deltas")
    func batchOrder() throws {
        var replica = try self.replica(["a", "b", "c"])
        var work = CommitWork()
        // "c" is live first, holding x.
        replica.stage(self.chunk("c", seq: 1, [self.versioned(point("x", "one", 1), 1)]))
        _ = try replica.apply(.init(seq: 1, deltas: [self.delta("c", snapshot: true)]), work: &work)
        // "a"'s snapshot is at seq 4, "b"'s at 2; "c"'s delta brings x to the batch's seq, 6.
        replica.stage(self.chunk("a", seq: 4, [self.versioned(point("x", "four", 1), 4)]))
        replica.stage(self.chunk("b", seq: 2, [self.versioned(point("x", "two", 1), 2)]))
        let batch = SyncEvent.Batch(
            seq: 6,
            deltas: [
                self.delta("c", updated: [self.versioned(point("x", "six", 1), 6)]),
                self.delta("a", snapshot: true), self.delta("b", snapshot: true),
            ])
        work = CommitWork()
        _ = try replica.apply(batch, work: &work)
        #expect(replica.serverRow("Point", "x")?["title"] == "six", "the deltas come after every snapshot")
        #expect(replica.version("Point", "x") == 6)
        #expect(replica.appliedSeq == 6)
        #expect(replica.subscriptions.keys.allSatisfy { replica.members(of: $0) == ["x"] })

        // Without the delta, the newer snapshot wins over the older one, whatever the batch's order.
        var other = try self.replica(["a", "b"])
        other.stage(self.chunk("a", seq: 4, [self.versioned(point("x", "four", 1), 4)]))
        other.stage(self.chunk("b", seq: 2, [self.versioned(point("x", "two", 1), 2)]))
        _ = try other.apply(
            .init(seq: 6, deltas: [self.delta("a", snapshot: true), self.delta("b", snapshot: true)]), work: &work)
        #expect(other.serverRow("Point", "x")?["title"] == "four")
    }

    @Test("messages of another epoch are dropped")
    func epochs() throws {
        var replica = try self.replica()
        // The subscription is unsubscribed and subscribed again: its second Subscribe on this stream is epoch 2.
        let wasSubscribed = replica.unsubscribe("s")
        #expect(wasSubscribed)
        let resubscribed = replica.subscribe("s", resume: false)
        #expect(resubscribed != nil)
        #expect(replica.subscriptions["s"]?.epoch == 2)
        let stagedOld = replica.stage(self.chunk("s", seq: 3, [self.versioned(point("old", "Old", 1), 1)], epoch: 1))
        #expect(!stagedOld)
        let stagedNew = replica.stage(self.chunk("s", seq: 3, [self.versioned(point("new", "New", 1), 1)], epoch: 2))
        #expect(stagedNew)
        var work = CommitWork()
        let outcome = try replica.apply(
            .init(
                seq: 3,
                deltas: [
                    self.delta("s", epoch: 1, snapshot: true), self.delta("s", epoch: 2, snapshot: true),
                ]),
            work: &work)
        #expect(outcome.ignored.map { $0.epoch } == [1])
        #expect(replica.members(of: "s") == ["new"])
        #expect(
            replica.fail(.init(subscriptionID: "s", epoch: 1, error: ClientError(.badPredicate, "old"))) == .ignored)

        // A new stream counts from 1 again.
        _ = replica.streamOpened()
        #expect(replica.subscriptions["s"]?.epoch == 1)
    }

    @Test("a Batch naming a snapshot whose last chunk did not arrive is refused")
    func incompleteSnapshot() throws {
        var replica = try self.replica()
        replica.stage(self.chunk("s", seq: 2, [self.versioned(point("a", "Alpha", 1), 1)], last: false))
        var work = CommitWork()
        let error = #expect(throws: ClientError.self) {
            try replica.apply(.init(seq: 2, deltas: [self.delta("s", snapshot: true)]), work: &work)
        }
        #expect(error?.code == .malformedRequest)
        #expect(replica.appliedSeq == 0)
    }

    /// The server's overflow race (fixed in the outbox): a complete snapshot staged whose batch was dropped, then a
    /// later snapshot's batch without its chunks. Applied, the old rows would show under the later seq.
    @Test("a Batch naming a snapshot at another seq than the one staged is refused, and changes nothing")
    func staleSnapshot() throws {
        var replica = try self.replica(["s", "t"])
        replica.stage(self.chunk("t", seq: 3, [self.versioned(point("b", "Bravo", 2), 1)]))
        var work = CommitWork()
        _ = try replica.apply(.init(seq: 3, deltas: [self.delta("t", snapshot: true, snapshotSeq: 3)]), work: &work)
        replica.stage(self.chunk("s", seq: 4, [self.versioned(point("a", "Alpha", 1), 1)]))
        replica.stage(self.chunk("t", seq: 4, []))
        let before = (replica.rowCount, replica.members(of: "t"))
        work = CommitWork()
        let error = #expect(throws: ClientError.self) {
            try replica.apply(
                .init(
                    seq: 9,
                    deltas: [
                        self.delta("t", snapshot: true, snapshotSeq: 4),
                        self.delta("s", snapshot: true, snapshotSeq: 7),
                    ]), work: &work)
        }
        #expect(error?.code == .malformedRequest)
        #expect(error?.message.contains("at seq 7, but the one staged is at seq 4") == true)
        // Nothing changed, the valid snapshot of t included: the stream is dropped and resumes from seq 3.
        #expect(replica.appliedSeq == 3)
        #expect((replica.rowCount, replica.members(of: "t")) == before)
        #expect(work.isEmpty)
        // The snapshot staged at the seq named applies; a batch that does not say (an older server) is taken as is.
        _ = try replica.apply(
            .init(seq: 9, deltas: [self.delta("s", snapshot: true, snapshotSeq: 4), self.delta("t", snapshot: true)]),
            work: &work)
        #expect(replica.members(of: "s") == ["a"])
        #expect(replica.members(of: "t") == [])
        #expect(replica.appliedSeq == 9)
    }

    /// Found in CI's meridian-check run (docs/checker.md, "Findings"): after a reconnection, the server's race sent
    /// a batch answering one re-added subscription; the others kept their old rows under its seq.
    @Test("the first Batch after Hello must answer every subscription re-added with resume, or it changes nothing")
    func helloAnsweredWhole() throws {
        var replica = try self.replica(["s", "t", "u"])
        for id in ["s", "t", "u"] { replica.stage(self.chunk(id, seq: 2, [])) }
        var work = CommitWork()
        _ = try replica.apply(
            .init(seq: 2, deltas: ["s", "t", "u"].map { self.delta($0, snapshot: true, snapshotSeq: 2) }), work: &work)
        _ = replica.streamClosed(work: &work)
        let hello = replica.streamOpened()
        #expect(hello.map(\.resume) == [true, true, true])
        // u is rejected on the new stream: the server answers it with an error, not in the batch.
        #expect(replica.fail(.init(subscriptionID: "u", epoch: 1, error: ClientError(.badPredicate, "no"))) != .ignored)
        work = CommitWork()
        let error = #expect(throws: ClientError.self) {
            try replica.apply(
                .init(seq: 9, deltas: [self.delta("s", entered: [self.versioned(point("a", "Alpha", 1), 3)])]),
                work: &work)
        }
        #expect(error?.code == .malformedRequest)
        #expect(error?.message.contains("does not answer t,") == true)
        #expect(replica.appliedSeq == 2)
        #expect(replica.rowCount == 0)
        // Answered whole (t with an empty delta: nothing changed for it), it applies; later batches name what they
        // change only.
        _ = try replica.apply(
            .init(
                seq: 9,
                deltas: [self.delta("s", entered: [self.versioned(point("a", "Alpha", 1), 3)]), self.delta("t")]),
            work: &work)
        #expect(replica.appliedSeq == 9)
        _ = try replica.apply(.init(seq: 10, deltas: [self.delta("s", left: ["a"])]), work: &work)
        #expect(replica.appliedSeq == 10)
        #expect(replica.rowCount == 0)
    }

    @Test("deltas leave, enter and update rows; a shared row stays until its last subscription lets it go")
    func deltasAndSharedRows() throws {
        var replica = try self.replica(["a", "b"])
        var work = CommitWork()
        replica.stage(self.chunk("a", seq: 1, [self.versioned(point("x", "X", 1), 1)]))
        replica.stage(self.chunk("b", seq: 1, [self.versioned(point("x", "X", 1), 1)]))
        _ = try replica.apply(
            .init(seq: 1, deltas: [self.delta("a", snapshot: true), self.delta("b", snapshot: true)]), work: &work)
        #expect(replica.rowCount == 1)

        work = CommitWork()
        _ = try replica.apply(
            .init(
                seq: 2,
                deltas: [self.delta("a", left: ["x"], entered: [self.versioned(point("y", "Y", 2), 2)])]),
            work: &work)
        #expect(replica.members(of: "a") == ["y"])
        #expect(replica.serverRow("Point", "x") != nil, "b still holds x")
        #expect(work.affected["a"] == ["x", "y"])

        work = CommitWork()
        _ = try replica.apply(.init(seq: 3, deltas: [self.delta("b", left: ["x"])]), work: &work)
        #expect(replica.serverRow("Point", "x") == nil)
        let removed = replica.remove("a")
        #expect(removed?.members == ["y"])
        #expect(replica.rowCount == 0)

        // A heartbeat's seq moves the replica without a Batch.
        let moved = replica.advance(to: 9)
        #expect(moved)
        let movedBack = replica.advance(to: 8)
        #expect(!movedBack)
        #expect(replica.appliedSeq == 9)
    }

    @Test("a commit's mutations for a subscription: its members' rows, a delete for every other id, however shared")
    func serverMutations() throws {
        var replica = try self.replica(["a", "b"])
        var work = CommitWork()
        replica.stage(self.chunk("a", seq: 1, [self.versioned(point("x", "X", 1), 1)]))
        replica.stage(
            self.chunk("b", seq: 1, [self.versioned(point("x", "X", 1), 1), self.versioned(point("y", "Y", 2), 1)]))
        _ = try replica.apply(
            .init(seq: 1, deltas: [self.delta("a", snapshot: true), self.delta("b", snapshot: true)]), work: &work)
        // The one row-by-row answer: a member's server row, or a delete.
        func expected(_ ids: Set<String>, _ subscription: SubscriptionState) -> [RowMutation] {
            ids.map { id in
                replica.isMember(id, of: subscription)
                    ? replica.serverRow(subscription.entity, id).map(RowMutation.upsert) ?? .delete(id: id)
                    : .delete(id: id)
            }
        }
        let ids: Set<String> = ["x", "y", "gone"]
        // "a" holds x only: y is cached (for "b") but not a member of "a".
        let a = try #require(replica.subscriptions["a"])
        #expect(replica.serverMutations(ids, of: a) == expected(ids, a))
        #expect(replica.serverMutations(ids, of: a).filter { if case .upsert = $0 { true } else { false } }.count == 1)
        // "b" holds every cached row of the entity.
        let b = try #require(replica.subscriptions["b"])
        #expect(replica.serverMutations(ids, of: b) == expected(ids, b))
        #expect(replica.serverMutations(ids, of: b).filter { if case .upsert = $0 { true } else { false } }.count == 2)
    }

    @Test("a rejected Replace keeps the old request; a rejected Subscribe fails the subscription")
    func failures() throws {
        var replica = try self.replica(where: "category < 3")
        let wider = try FetchRequest(entity: "Point", where: "category < 9")
        replica.replaceSent("s", PendingReplace(request: wider, bound: try wider.bind(to: testSchema)))
        let error = ClientError(.badPredicate, "no")
        let replaceFailure = replica.fail(.init(subscriptionID: "s", epoch: 1, error: error))
        #expect(replaceFailure == .replaceRejected)
        #expect(replica.subscriptions["s"]?.request.predicateText == "category < 3")
        #expect(replica.subscriptions["s"]?.pendingReplace == nil)
        let subscribeFailure = replica.fail(.init(subscriptionID: "s", epoch: 1, error: error))
        #expect(subscribeFailure == .subscriptionFailed)
        #expect(replica.subscriptions["s"]?.phase == .failed(error))
        let readded = replica.streamOpened()
        #expect(readded.isEmpty, "a rejected subscription is not re-added")
    }

    @Test("an error that ends the subscription ends it even while a Replace waits for its answer")
    func endedDuringReplace() throws {
        var replica = try self.replica(where: "category < 3")
        let wider = try FetchRequest(entity: "Point", where: "category < 9")
        replica.replaceSent("s", PendingReplace(request: wider, bound: try wider.bind(to: testSchema)))
        let error = ClientError(.limitExceeded, "the snapshot of 's' takes about 9000 bytes")
        let outcome = replica.fail(.init(subscriptionID: "s", epoch: 1, error: error, ended: true))
        // Not "the previous request stays in force": the server serves it no more.
        #expect(outcome == .subscriptionFailed)
        #expect(replica.subscriptions["s"]?.phase == .failed(error))
        #expect(replica.subscriptions["s"]?.pendingReplace == nil)
    }

    @Test("a snapshot sent before the server read a Replace is of the old request; only one flagged replaced answers")
    func snapshotDuringReplace() throws {
        var replica = try self.replica(where: "category < 3")
        var work = CommitWork()
        replica.stage(self.chunk("s", seq: 1, [self.versioned(point("a", "A", 1), 1)]))
        _ = try replica.apply(.init(seq: 1, deltas: [self.delta("s", snapshot: true)]), work: &work)
        let wider = try FetchRequest(entity: "Point", where: "category < 9")
        replica.replaceSent("s", PendingReplace(request: wider, bound: try wider.bind(to: testSchema)))

        // An overflow's re-snapshot of the old request, queued before the server read the Replace.
        replica.stage(
            self.chunk("s", seq: 2, [self.versioned(point("a", "A", 1), 1), self.versioned(point("b", "B", 2), 1)]))
        var outcome = try replica.apply(.init(seq: 2, deltas: [self.delta("s", snapshot: true)]), work: &work)
        #expect(outcome.cause == .snapshot)
        #expect(outcome.answeredReplaces.isEmpty)
        #expect(replica.subscriptions["s"]?.request.predicateText == "category < 3")
        #expect(replica.subscriptions["s"]?.pendingReplace != nil)
        #expect(replica.members(of: "s") == ["a", "b"])

        // The Replace's answer: a snapshot of the new request, flagged replaced.
        replica.stage(
            self.chunk(
                "s", seq: 3,
                [
                    self.versioned(point("a", "A", 1), 1), self.versioned(point("b", "B", 2), 1),
                    self.versioned(point("c", "C", 7), 1),
                ]))
        outcome = try replica.apply(
            .init(seq: 3, deltas: [self.delta("s", snapshot: true, replaced: true)]), work: &work)
        #expect(outcome.cause == .replaced)
        #expect(outcome.answeredReplaces == ["s"])
        #expect(replica.subscriptions["s"]?.request.predicateText == "category < 9")
        #expect(replica.subscriptions["s"]?.pendingReplace == nil)
        #expect(replica.members(of: "s") == ["a", "b", "c"])
    }

    @Test("a Replace cut off by the stream's end, adopted offline: the next stream's snapshot is the whole result")
    func replaceAcrossReconnection() throws {
        var replica = try self.replica(where: "category < 3")
        var work = CommitWork()
        replica.stage(
            self.chunk("s", seq: 1, [self.versioned(point("a", "A", 1), 1), self.versioned(point("b", "B", 2), 1)]))
        _ = try replica.apply(.init(seq: 1, deltas: [self.delta("s", snapshot: true)]), work: &work)
        let moved = try FetchRequest(entity: "Point", where: "category >= 2")
        replica.replaceSent("s", PendingReplace(request: moved, bound: try moved.bind(to: testSchema)))
        _ = replica.streamClosed(work: &work)
        #expect(replica.members(of: "s") == ["b"])
        let hello = replica.streamOpened()
        #expect(hello.map { $0.resume } == [false])
        let epoch = try #require(replica.subscriptions["s"]?.epoch)
        replica.stage(
            self.chunk(
                "s", seq: 2,
                [
                    self.versioned(point("b", "B", 2), 1), self.versioned(point("c", "C", 5), 1),
                    self.versioned(point("d", "D", 7), 1),
                ],
                epoch: epoch))
        work = CommitWork()
        let outcome = try replica.apply(
            .init(seq: 2, deltas: [self.delta("s", epoch: epoch, snapshot: true)]), work: &work)
        #expect(outcome.snapshots.map(\.rowCount) == [3])
        #expect(replica.members(of: "s") == ["b", "c", "d"])
        #expect(replica.subscriptions["s"]?.hasData == true)
        #expect(replica.subscriptions["s"]?.request.predicateText == "category >= 2")
    }

    @Test("closing the stream adopts a Replace in flight and keeps only the cached rows it selects")
    func closeAdoptsReplace() throws {
        var replica = try self.replica(where: "category < 3")
        var work = CommitWork()
        replica.stage(
            self.chunk("s", seq: 1, [self.versioned(point("a", "A", 1), 1), self.versioned(point("b", "B", 2), 1)]))
        _ = try replica.apply(.init(seq: 1, deltas: [self.delta("s", snapshot: true)]), work: &work)
        let narrower = try FetchRequest(entity: "Point", where: "category < 2")
        replica.replaceSent("s", PendingReplace(request: narrower, bound: try narrower.bind(to: testSchema)))

        work = CommitWork()
        let adopted = replica.streamClosed(work: &work)
        #expect(adopted == ["s"])
        let subscription = try #require(replica.subscriptions["s"])
        #expect(subscription.request.predicateText == "category < 2")
        #expect(replica.members(of: "s") == ["a"])
        #expect(!subscription.hasData, "complete again only with the server's answer")
        #expect(subscription.phase == .idle)
        #expect(subscription.epoch == nil)
        #expect(work.affected["s"] == ["b"])

        // The next stream re-adds it without resume; the replica still resumes from its seq.
        let hello = replica.streamOpened()
        #expect(hello.map { $0.id } == ["s"])
        #expect(hello.map { $0.resume } == [false])
        #expect(replica.isResumable)
    }

    @Test("what changed is recorded for the cache file, once per step")
    func recordedChanges() throws {
        var replica = try self.replica(recordsChanges: true)
        _ = replica.takeChanges()
        var work = CommitWork()
        replica.stage(self.chunk("s", seq: 4, [self.versioned(point("a", "A", 1), 1)]))
        _ = try replica.apply(.init(seq: 4, deltas: [self.delta("s", snapshot: true)]), work: &work)
        let changes = replica.takeChanges()
        #expect(changes.seq == 4)
        #expect(changes.rows[RowKey(entity: "Point", id: "a")]??.row == point("a", "A", 1))
        #expect(changes.memberships == [MembershipKey(subscription: "s", id: "a"): true])
        #expect(changes.subscriptions["s"]??.hasData == true)
        let again = replica.takeChanges()
        #expect(again.rows.isEmpty)

        replica.remove("s")
        let removed = replica.takeChanges()
        #expect(removed.rows[RowKey(entity: "Point", id: "a")] == .some(nil))
        #expect(removed.subscriptions["s"].map { $0 == nil } == true, "recorded as removed")

        var unrecorded = try self.replica(recordsChanges: false)
        unrecorded.stage(self.chunk("s", seq: 4, [self.versioned(point("a", "A", 1), 1)]))
        _ = try unrecorded.apply(.init(seq: 4, deltas: [self.delta("s", snapshot: true)]), work: &work)
        let unrecordedChanges = unrecorded.takeChanges()
        #expect(unrecordedChanges.rows.isEmpty)
    }

    /// Expects two replicas to cache the same rows (image, version, references, seq; an entity with none counts as
    /// absent) and to have recorded the same changes for the cache file (taken from both).
    func expectSameRowsAndChanges(
        _ a: inout ReplicaState, _ b: inout ReplicaState, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        func cached(_ replica: ReplicaState) -> [String: [String: [String]]] {
            replica.rows.filter { !$0.value.isEmpty }.mapValues {
                Dictionary(
                    uniqueKeysWithValues: $0.map { id, cached in
                        (id, ["\(cached.row(id))", "\(cached.version)", "\(cached.references)", "\(cached.seq)"])
                    })
            }
        }
        #expect(cached(a) == cached(b), sourceLocation: sourceLocation)
        let aChanges = a.takeChanges()
        let bChanges = b.takeChanges()
        #expect(aChanges.memberships == bChanges.memberships, sourceLocation: sourceLocation)
        #expect(aChanges.rows == bChanges.rows, sourceLocation: sourceLocation)
    }

    @Test(
        "an entity's only subscription holding the entity's cache as its members answers as a set of their ids would",
        arguments: 0..<4)
    func entityCacheAsMembers(seed: Int) throws {
        // Two replicas fed the same random steps — subscriptions added and removed (of one entity or of two), snapshots,
        // deltas entering, updating and leaving rows, Replaces of the same entity or of the other one, answered by a
        // snapshot or by a delta, streams closed (pending Replaces adopted offline) and opened again — one letting an
        // entity's only subscription hold the cache as its members, one always keeping a set. After every step: the
        // same members, cached rows (with their references), work and recorded changes.
        let schema = try Schema.parse(
            yaml: """
                version: 1
                entities:
                  Point:
                    attributes: { title: string, category: int }
                  Place:
                    attributes: { title: string, category: int }
                """)
        var generator = SplitMix64(seed: 0xE_CAC4E &+ UInt64(seed))
        var held = ReplicaState(recordsChanges: seed % 2 == 1)
        var spelled = ReplicaState(recordsChanges: seed % 2 == 1, holdsEntityCaches: false)
        var seq: Int64 = 0
        var nextID = 0
        var stepsHolding = 0
        func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[Int(generator.next() % UInt64(items.count))] }
        func rows() -> [VersionedRow] {
            (0..<Int(generator.next() % 6)).map { _ in
                let n = generator.next() % 10
                return self.versioned(point("p\(n)", "t\(generator.next() % 3)", Int64(n % 3)), 1 + Int64(seq))
            }
        }
        func request() throws -> FetchRequest {
            try FetchRequest(
                entity: generator.next() % 2 == 0 ? "Place" : "Point", where: "category < \(1 + generator.next() % 3)")
        }
        for step in 0..<1_500 {
            var heldWork = CommitWork()
            var spelledWork = CommitWork()
            let ids = held.subscriptions.keys.sorted()
            switch generator.next() % 9 {
            case 0 where ids.count < 2:
                nextID += 1
                let request = try request()
                let subscription = SubscriptionState(
                    id: "s\(nextID)", request: request, bound: try request.bind(to: schema), shareable: true)
                held.add(subscription)
                spelled.add(subscription)
                _ = held.subscribe(subscription.id, resume: false)
                _ = spelled.subscribe(subscription.id, resume: false)
            case 1, 2:
                guard let id = pick(ids), let epoch = held.subscriptions[id]?.epoch else { continue }
                seq += 1
                let chunk = self.chunk(id, seq: seq, rows(), epoch: epoch)
                held.stage(chunk)
                spelled.stage(chunk)
                let batch = SyncEvent.Batch(seq: seq, deltas: [self.delta(id, epoch: epoch, snapshot: true)])
                #expect((try? held.apply(batch, work: &heldWork)) != nil)
                #expect((try? spelled.apply(batch, work: &spelledWork)) != nil)
            case 3, 4:
                guard let id = pick(ids), let epoch = held.subscriptions[id]?.epoch else { continue }
                seq += 1
                let members = held.members(of: id).map { Array($0) } ?? []
                let left = members.filter { _ in generator.next() % 3 == 0 }
                let delta = self.delta(id, epoch: epoch, left: left, entered: rows(), updated: [])
                let batch = SyncEvent.Batch(seq: seq, deltas: [delta])
                #expect((try? held.apply(batch, work: &heldWork)) != nil)
                #expect((try? spelled.apply(batch, work: &spelledWork)) != nil)
            case 5, 8:
                guard let id = pick(ids) else { continue }
                held.remove(id)
                spelled.remove(id)
            case 6:
                guard let id = pick(ids), let epoch = held.subscriptions[id]?.epoch else { continue }
                let request = try request()
                let replace = PendingReplace(request: request, bound: try request.bind(to: schema))
                held.replaceSent(id, replace)
                spelled.replaceSent(id, replace)
                guard generator.next() % 2 == 0 else { continue }  // left pending: adopted offline if the stream ends
                seq += 1
                let bySnapshot = generator.next() % 2 == 0
                if bySnapshot {
                    let chunk = self.chunk(id, seq: seq, rows(), epoch: epoch)
                    held.stage(chunk)
                    spelled.stage(chunk)
                }
                let delta =
                    bySnapshot
                    ? self.delta(id, epoch: epoch, snapshot: true, replaced: true)
                    : self.delta(id, epoch: epoch, replaced: true, entered: rows())
                let batch = SyncEvent.Batch(seq: seq, deltas: [delta])
                #expect((try? held.apply(batch, work: &heldWork)) != nil)
                #expect((try? spelled.apply(batch, work: &spelledWork)) != nil)
            case 7:
                // The Replaces adopted offline, in no particular order.
                let heldAdopted = held.streamClosed(work: &heldWork)
                #expect(heldAdopted.sorted() == spelled.streamClosed(work: &spelledWork).sorted())
                _ = held.streamOpened()
                _ = spelled.streamOpened()
                // Resumed subscriptions wait for the stream's first Batch to answer them all.
                seq += 1
                let answers = held.subscriptions.keys.sorted().compactMap { id -> SyncEvent.Delta? in
                    guard held.subscriptions[id]?.hasData == true, let epoch = held.subscriptions[id]?.epoch else {
                        return nil
                    }
                    return self.delta(id, epoch: epoch)
                }
                let batch = SyncEvent.Batch(seq: seq, deltas: answers)
                #expect((try? held.apply(batch, work: &heldWork)) != nil)
                #expect((try? spelled.apply(batch, work: &spelledWork)) != nil)
            default:
                continue
            }
            if held.subscriptions.values.contains(where: { $0.holdsEntityCache }) { stepsHolding += 1 }
            let spelledHolds = spelled.subscriptions.values.contains { $0.holdsEntityCache }
            #expect(!spelledHolds, "the other replica keeps every member set")
            #expect(held.memberSets == spelled.memberSets, "step \(step)")
            #expect(heldWork.affected == spelledWork.affected, "step \(step)")
            #expect(heldWork.resets == spelledWork.resets, "step \(step)")
            self.expectSameRowsAndChanges(&held, &spelled)
        }
        // The steps exercised what they compare: an entity's cache held as members for a good part of the run.
        #expect(stepsHolding > 50, "\(stepsHolding) steps with a subscription holding its entity's cache")
    }

    @Test("rows stored at once equal them stored one by one", arguments: 0..<4)
    func rowsStoredAtOnce(recording: Int) throws {
        // Three subscriptions of one entity (the rows', being reset or not; one reset in the same step or not; one
        // not); cached rows at older and newer seqs than the rows', shared or not; rows new to the cache; subscriptions
        // already named in the step's work or not. Odd arguments record changes for a cache file.
        var generator = SplitMix64(seed: 0x5A17 &+ UInt64(recording))
        func row(_ n: UInt64, _ prefix: String) -> VersionedRow {
            self.versioned(point("p\(n)", "\(prefix)\(generator.next() % 3)", Int64(n)), Int64(generator.next() % 4))
        }
        for _ in 0..<200 {
            var replica = try self.replica(["s", "t", "u"], recordsChanges: recording % 2 == 1)
            var seq: Int64 = 1
            for id in ["s", "t", "u"] where generator.next() % 3 != 0 {
                let rows = (0..<Int(generator.next() % 12)).map { _ in row(generator.next() % 16, "v") }
                var unique: [String: VersionedRow] = [:]
                for row in rows { unique[row.row.id] = row }
                replica.stage(self.chunk(id, seq: seq, Array(unique.values)))
                var work = CommitWork()
                _ = try replica.apply(.init(seq: seq, deltas: [self.delta(id, snapshot: true)]), work: &work)
                seq += Int64(generator.next() % 3)
            }
            _ = replica.takeChanges()
            var incoming: [String: VersionedRow] = [:]
            for _ in 0..<Int(generator.next() % 20) {
                let n = generator.next() % 24
                incoming["p\(n)"] = row(n, "w")
            }
            let rows = Array(incoming.values)
            let snapshotSeq = Int64(generator.next() % UInt64(seq + 2))
            var before = CommitWork()
            for id in ["s", "t"] where generator.next() % 2 == 0 { before.resets.insert(id) }
            for id in ["s", "t", "u"] where generator.next() % 3 == 0 {
                before.affected[id] = generator.next() % 2 == 0 ? [] : ["p\(generator.next() % 24)"]
            }

            var atOnce = replica
            var atOnceWork = before
            atOnce.store(rows, in: "s", seq: snapshotSeq, work: &atOnceWork)
            var oneByOne = replica
            var oneByOneWork = before
            for row in rows { oneByOne.store(row, in: "s", seq: snapshotSeq, work: &oneByOneWork) }

            #expect(atOnceWork.affected == oneByOneWork.affected)
            #expect(atOnce.memberSets == oneByOne.memberSets)
            self.expectSameRowsAndChanges(&atOnce, &oneByOne)
        }
    }

    @Test("a staged snapshot adopted whole as a first load equals its rows stored one by one", arguments: 0..<2)
    func firstLoadAdopted(recording: Int) throws {
        // The replica before: nothing, or rows of the entity cached for another subscription, or for this one; another
        // subscription of the entity named in the step's work or not. The staged chunks repeat ids (a later image
        // wins). Adopted only when nothing of the entity is cached and no other subscription is to be told; then the
        // cache, the members, the work and what is recorded are those of storing the rows one by one, and the cache is
        // held at its size.
        var generator = SplitMix64(seed: 0xF12_57 &+ UInt64(recording))
        var adoptions = 0
        var refusals = 0
        for _ in 0..<300 {
            var replica = try self.replica(["s", "t"], recordsChanges: recording == 1)
            if generator.next() % 3 == 0 {
                let owner = generator.next() % 2 == 0 ? "s" : "t"
                let rows = (0..<Int(1 + generator.next() % 4)).map { n in
                    self.versioned(point("q\(generator.next() % 8)", "old\(n)", 1), 1)
                }
                var unique: [String: VersionedRow] = [:]
                for row in rows { unique[row.row.id] = row }
                replica.stage(self.chunk(owner, seq: 1, Array(unique.values)))
                var work = CommitWork()
                _ = try replica.apply(.init(seq: 1, deltas: [self.delta(owner, snapshot: true)]), work: &work)
            }
            _ = replica.takeChanges()
            var work = CommitWork()
            work.resets.insert("s")
            if generator.next() % 2 == 0 { work.resets.insert("t") }
            if generator.next() % 4 == 0 { work.affected["t"] = [] }
            let seq: Int64 = 2
            var buffer = SnapshotBuffer(seq: seq, resnapshot: false)
            var arrived: [VersionedRow] = []
            for _ in 0..<Int(generator.next() % 4) {
                let rows = (0..<Int(generator.next() % 40)).map { _ in
                    let n = generator.next() % 48
                    return self.versioned(
                        point("p\(n)", "v\(generator.next() % 3)", Int64(n)), Int64(generator.next() % 4))
                }
                buffer.stage(rows)
                arrived += rows
            }
            #expect(buffer.received == arrived.count)

            var adopted = replica
            // "t" is of the same entity: it is to be told of new rows unless it is being reset too.
            let expectAdopted = (replica.rows["Point"]?.isEmpty ?? true) && work.resets.contains("t")
            let didAdopt = adopted.adoptFirstLoad(buffer.rows, in: "s", work: work)
            #expect(didAdopt == expectAdopted)
            var stored = replica
            var storedWork = work
            for row in arrived { stored.store(row, in: "s", seq: seq, work: &storedWork) }
            guard didAdopt else {
                refusals += 1
                #expect(adopted.rows.mapValues(\.count) == replica.rows.mapValues(\.count), "refused: nothing changed")
                #expect(adopted.memberSets == replica.memberSets)
                continue
            }
            adoptions += 1
            #expect(replica.rows["Point"]?.isEmpty ?? true, "adopted only with nothing of the entity cached")
            #expect(storedWork.affected == work.affected, "no other subscription was to be told")
            #expect(adopted.memberSets == stored.memberSets)
            self.expectSameRowsAndChanges(&adopted, &stored)
            if let cache = adopted.rows["Point"] {
                #expect(cache.keys.elements.capacity < cache.count + 8, "the cache is held at its size")
                #expect(cache.values.elements.capacity < cache.count + 8)
            }
        }
        #expect(adoptions > 50)
        #expect(refusals > 50)
    }
}

extension ReplicaState {
    /// Every subscription's members as a set, however it keeps them.
    var memberSets: [String: MemberSet] {
        Dictionary(uniqueKeysWithValues: self.subscriptions.keys.map { ($0, self.members(of: $0)!) })
    }
}
