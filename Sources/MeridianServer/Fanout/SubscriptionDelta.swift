// MARK: - Deltas: net changes per row, a subscription's delta, encoded once

internal import MeridianCore
internal import MeridianProto
internal import MeridianStore
internal import SwiftProtobuf

/// A row with its version in the store.
struct VersionedRow: Sendable {
    var row: Row
    var version: Int64
}

/// The net effect of a run of changes on one row: its image before the run and after it.
struct NetChange: Sendable {
    var id: String
    /// The row before the first change of the run (`nil`: it did not exist).
    var before: Row?
    /// The row after the last change of the run (`nil`: it does not exist).
    var after: Row?
    /// The row's version after the run.
    var version: Int64

    /// The net changes of `changes` (in seq order) for one entity, in order of first appearance.
    ///
    /// Each change is read in place, field by field (`changes[i].id`): `for change in` copied every change — its id,
    /// its entity's name, its images and its changed attributes retained and released — before its fields were
    /// copied again into the net change.
    static func of(_ changes: some Collection<Change>) -> [NetChange] {
        var out: [NetChange] = []
        out.reserveCapacity(changes.underestimatedCount)
        // While every change is an insert, each is a row of its own (an id is inserted again only after a delete of
        // it), so no ids are indexed: a commit of inserts is most of a bulk load's fan-out, where hashing every id
        // cost a sixth of the deltas' work. The first other change indexes the ids so far.
        var index: [String: Int]?
        for i in changes.indices {
            if index == nil {
                if changes[i].kind == .insert {
                    out.append(
                        NetChange(
                            id: changes[i].id, before: changes[i].before, after: changes[i].after,
                            version: changes[i].version))
                    continue
                }
                // `init(minimumCapacity:)`: a dictionary's `reserveCapacity` is not inlinable, and runs unspecialized.
                var ids = [String: Int](minimumCapacity: max(out.count, changes.underestimatedCount))
                for (position, net) in out.enumerated() { ids[net.id] = position }
                index = ids
            }
            if let known = index![changes[i].id] {
                out[known].after = changes[i].after
                out[known].version = changes[i].version
            } else {
                index![changes[i].id] = out.count
                out.append(
                    NetChange(
                        id: changes[i].id, before: changes[i].before, after: changes[i].after,
                        version: changes[i].version))
            }
        }
        return out
    }
}

/// One row's change in a subscription's result, as a client receives it.
enum RowDelta: Sendable {
    /// The row entered the result.
    case entered(VersionedRow)
    /// The row left the result; `before` is its last image the client saw, when known (for coalescing).
    case left(id: String, before: Row?)
    /// The row stayed and changed.
    case updated(VersionedRow, changed: [String])
}

// MARK: - SharedDelta

/// One distinct subscription's delta for one batch: computed once, encoded once, shared by every client holding the
/// subscription (each client adds only its own subscription id in front of ``body``:
/// `SharedBatchEncoding.syncResponse(seq:parts:)`).
final class SharedDelta: Sendable {
    let entered: [VersionedRow]
    let left: [(id: String, before: Row?)]
    let updated: [(row: VersionedRow, changed: [String])]
    /// `SubscriptionDelta` fields 2–4 (entered, left, updated), serialized; field 1 (the id) is per client.
    let body: [UInt8]

    init(entered: [VersionedRow], left: [(id: String, before: Row?)], updated: [(row: VersionedRow, changed: [String])])
    {
        self.entered = entered
        self.left = left
        self.updated = updated
        var body: [UInt8] = []
        body.reserveCapacity(256)
        for row in entered { DeltaWireEncoding.appendEntered(row.row, version: row.version, to: &body) }
        for row in left { DeltaWireEncoding.appendLeft(row.id, to: &body) }
        for (row, changed) in updated {
            DeltaWireEncoding.appendUpdated(row.row, version: row.version, changed: changed, to: &body)
        }
        self.body = body
    }

    var isEmpty: Bool { self.entered.isEmpty && self.left.isEmpty && self.updated.isEmpty }
    var rowCount: Int { self.entered.count + self.left.count + self.updated.count }

    /// The changes in order, one per row.
    var rowDeltas: [(id: String, delta: RowDelta)] {
        self.left.map { ($0.id, .left(id: $0.id, before: $0.before)) }
            + self.entered.map { ($0.row.id, .entered($0)) }
            + self.updated.map { ($0.row.row.id, .updated($0.row, changed: $0.changed)) }
    }
}

// MARK: - Computing deltas

extension BoundFetchRequest {
    /// The names of the changed attributes of `after` against `before`, plus every derived attribute one of whose
    /// dependencies changed, sorted by UTF-8 bytes.
    func changedAttributes(_ after: Row, from before: Row) -> [String] {
        self.entity.derived.addingDependents(to: after.changedAttributes(from: before))
    }
}

extension [DerivedAttribute] {
    /// `changed` (sorted by UTF-8 bytes) plus every derived attribute one of whose dependencies is in it, sorted.
    func addingDependents(to changed: [String]) -> [String] {
        guard !changed.isEmpty, !self.isEmpty else { return changed }
        var names = changed
        let set = Set(changed)
        for derived in self where derived.dependencies.contains(where: set.contains) {
            names.append(derived.name)
        }
        return names.sorted { $0.utf8Compare($1) < 0 }
    }
}

extension BoundFetchRequest {
    /// The delta of an unlimited subscription for a batch's net changes: membership decided from the before and
    /// after images, so an update can enter or leave (the fetched-results trap is impossible).
    func unlimitedDelta(_ changes: [NetChange]) -> SharedDelta? {
        var entered: [VersionedRow] = []
        var left: [(id: String, before: Row?)] = []
        var updated: [(row: VersionedRow, changed: [String])] = []
        for change in changes {
            // `if let`, not `.map(self.matches)`: the closure would copy the request twice per row.
            var was = false
            if let before = change.before { was = self.matches(before) }
            var now = false
            if let after = change.after { now = self.matches(after) }
            switch (was, now) {
            case (false, true):
                entered.append(VersionedRow(row: change.after!, version: change.version))
            case (true, false):
                left.append((change.id, change.before))
            case (true, true):
                // Sent even when no attribute changed (an update that wrote every value as it was, or changes
                // that undid each other within the batch): the row's version moved, and the client must hold the
                // store's, or its next write that expects a version is refused.
                let changed = self.changedAttributes(change.after!, from: change.before!)
                updated.append((VersionedRow(row: change.after!, version: change.version), changed))
            case (false, false):
                break
            }
        }
        if entered.isEmpty && left.isEmpty && updated.isEmpty { return nil }
        return SharedDelta(entered: entered, left: left, updated: updated)
    }

    /// Every row matching the request (limit ignored) after applying `changes` to `rows` (the matching rows in order
    /// at some earlier seq): O(n + k log k).
    func advance(_ rows: [VersionedRow], with changes: [NetChange]) -> [VersionedRow] {
        guard !changes.isEmpty else { return rows }
        let touched = Set(changes.map(\.id))
        var added: [VersionedRow] = []
        for change in changes {
            if let after = change.after, self.matches(after) {
                added.append(VersionedRow(row: after, version: change.version))
            }
        }
        let order = self.order
        added.sort { order.compare($0.row, $1.row) < 0 }
        var out: [VersionedRow] = []
        out.reserveCapacity(rows.count + added.count)
        var j = 0
        for row in rows where !touched.contains(row.row.id) {
            while j < added.count, order.compare(added[j].row, row.row) < 0 {
                out.append(added[j])
                j += 1
            }
            out.append(row)
        }
        out.append(contentsOf: added[j...])
        return out
    }

    /// How many rows the hub keeps for a limited request: its window and a margin, so that a row leaving the window
    /// is usually replaced from what is kept, without a read (`nil`: unlimited).
    var heldRows: Int? { self.limit.map { $0 + max(16, $0 / 2) } }

    /// `changes` for a prefix of the matching rows that ends at `boundary` (`nil`: the prefix is every matching
    /// row), with every row that now sorts after the boundary turned into a removal: the rows beyond it are not
    /// known, so the prefix stays exact — every matching row not kept sorts after every row kept.
    func clipped(_ changes: [NetChange], after boundary: Row?) -> [NetChange] {
        guard let boundary else { return changes }
        return changes.map { change in
            guard let after = change.after, self.order.compare(after, boundary) > 0 else { return change }
            var clipped = change
            clipped.after = nil
            return clipped
        }
    }

    /// A limited request's kept rows — `rows`, the first matching rows at some seq (every one when `complete`) —
    /// advanced with `changes` and cut back to ``heldRows``.
    ///
    /// - Returns: The rows and whether they are every matching row; `nil` when fewer than the window remain while
    ///   the store may hold more (read them again).
    func advancePrefix(
        _ rows: [VersionedRow], complete: Bool, with changes: [NetChange]
    ) -> (rows: [VersionedRow], complete: Bool)? {
        let advanced = self.advance(rows, with: self.clipped(changes, after: complete ? nil : rows.last?.row))
        guard let limit = self.limit, let held = self.heldRows else { return (advanced, complete) }
        if !complete && advanced.count < limit { return nil }
        if advanced.count > held { return (Array(advanced.prefix(held)), false) }
        return (advanced, complete)
    }

    /// The first `limit` rows (all without a limit).
    func window(_ rows: [VersionedRow]) -> [VersionedRow] {
        guard let limit, rows.count > limit else { return rows }
        return Array(rows.prefix(limit))
    }
}
