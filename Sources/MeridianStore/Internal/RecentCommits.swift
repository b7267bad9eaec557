// MARK: - RecentCommits: the store's own latest commits, handed to the change feed

internal import MeridianCore
internal import Synchronization

/// The log entries of the store's own latest group commits, kept in memory from the moment they commit until the
/// change feed has read past them, so that the feed (the server's fan-out, which reads the log after every commit)
/// does not read back from SQLite what the committer has just written: a 20,000-row commit's fan-out spent more CPU
/// reading its entries and joining each insert to its row (format 2 logs inserts without an image) than the commit
/// itself took.
///
/// What the feed gets from here is what the log read gives — the same ``Change`` values, seq for seq: updates and
/// deletes carry the very images the committer wrote into the log, parsed the same way; an insert's row is made from
/// its operation as the table read would give it (the schema's attribute order, defaults filled in, each value as
/// SQLite stores it in its column). Where that cannot be sure (a value of another type than its attribute's, a NaN),
/// or the entries do not cover the range asked for exactly (another process's commit in between, a commit that was
/// too large to keep, the store's own writes outside the committer), the reader reads the log as before. Pinned
/// against the log read on random transactions (`RecentCommitsTests`).
///
/// Kept only while a change feed is open (``enable()``, once per feed; ``disable()`` when it closes), and at most
/// ``capacity`` entries: older commits are dropped first, and a larger commit is not kept. The feeds of one store
/// share what is kept: a read drops what lies before it, so a second feed reading behind the first reads the log.
final class RecentCommits: Sendable {
    /// One log entry as the committer wrote it.
    struct Entry: Sendable {
        /// The operation: its entity and id, and an insert's values.
        var op: PreparedOperation
        var kind: Change.Kind
        var version: Int64
        /// The images written with an update or a delete (JSON, `StoreDDL.image`).
        var before: String?
        var after: String?
    }

    /// One group commit's entries, whose seqs are `first...through` in order.
    struct Commit: Sendable {
        var first: Int64
        var through: Int64
        var committedAt: Int64
        var entries: [Entry]
    }

    private struct State {
        /// The open change feeds.
        var feeds = 0
        var enabled: Bool { self.feeds > 0 }
        var commits: [Commit] = []
        /// The entries in `commits`.
        var count = 0
        /// Reads answered from here (for the tests).
        var hits = 0
    }

    /// The most entries kept.
    static let capacity = 1 << 16

    private let state = Mutex(State())

    /// Whether commits are kept (a change feed is open).
    var isEnabled: Bool { self.state.withLock { $0.enabled } }

    /// How many reads were answered from memory.
    var hits: Int { self.state.withLock { $0.hits } }

    /// How many entries are kept.
    var count: Int { self.state.withLock { $0.count } }

    /// Keeps commits from now on: one more change feed is open.
    func enable() { self.state.withLock { $0.feeds += 1 } }

    /// One change feed closed: when it was the last, keeps none any more.
    func disable() {
        self.state.withLock { state in
            state.feeds = max(0, state.feeds - 1)
            if state.feeds == 0 { state = State() }
        }
    }

    /// Keeps a commit's entries, the committer being about to commit seqs `first...through` (called inside the write
    /// transaction, before its COMMIT: a reader that sees the commit must find them; one that does not see it yet is
    /// not given them, see ``changes(after:through:plans:)``; ``withdraw(first:through:)`` takes them back if the
    /// COMMIT fails). Entries that do not match the range (the committer's count and the log's disagree) are not
    /// kept, and neither is anything before them: a reader then finds a gap and reads the log.
    func keep(_ entries: [Entry], first: Int64, through: Int64, committedAt: Int64) {
        self.state.withLock { state in
            guard state.enabled else { return }
            guard through - first + 1 == Int64(entries.count), entries.count <= Self.capacity else {
                state.commits.removeAll()
                state.count = 0
                return
            }
            guard !entries.isEmpty else { return }
            state.commits.append(Commit(first: first, through: through, committedAt: committedAt, entries: entries))
            state.count += entries.count
            var dropped = 0
            while state.count > Self.capacity {
                state.count -= state.commits[dropped].entries.count
                dropped += 1
            }
            if dropped > 0 { state.commits.removeFirst(dropped) }
        }
    }

    /// Takes back the entries kept for seqs `first...through`, whose COMMIT failed: no reader saw that commit, and
    /// the next commit hands out the same seqs again.
    func withdraw(first: Int64, through: Int64) {
        self.state.withLock { state in
            guard let last = state.commits.last, last.first == first, last.through == through else { return }
            state.count -= last.entries.count
            state.commits.removeLast()
        }
    }

    /// Lets go of the commits at or before `seq`.
    func drop(through seq: Int64) {
        self.state.withLock { Self.drop(through: seq, &$0) }
    }

    private static func drop(through seq: Int64, _ state: inout State) {
        var stale = 0
        while stale < state.commits.count, state.commits[stale].through <= seq {
            state.count -= state.commits[stale].entries.count
            stale += 1
        }
        if stale > 0 { state.commits.removeFirst(stale) }
    }

    /// The changes after `seq` through `latest`, when kept commits cover exactly that range; `nil` otherwise. Drops
    /// the commits at or before `seq` (the feed reads forward). A commit kept whose COMMIT the reader's transaction
    /// does not see lies after `latest`, and is not given.
    func changes(after seq: Int64, through latest: Int64, plans: ChangeDecoding.Plans) -> [Change]? {
        let commits = self.state.withLock { state -> [Commit]? in
            guard state.enabled else { return nil }
            Self.drop(through: seq, &state)
            guard seq < latest else { return [] }
            guard let start = state.commits.first, start.first <= seq + 1 else { return nil }
            var covering: [Commit] = []
            var next = seq + 1
            for commit in state.commits {
                guard commit.first <= next, commit.through >= next else { return nil }
                covering.append(commit)
                next = commit.through + 1
                if commit.through >= latest { break }
            }
            guard next == latest + 1 else { return nil }
            state.hits += 1
            return covering
        }
        guard let commits else { return nil }
        var changes: [Change] = []
        changes.reserveCapacity(Int(latest - seq))
        var misfits = 0
        // The last entity's plan: a commit's entries are mostly of one entity (a look-up hashes its name).
        var planEntity: SharedEntity?
        var plan: ChangeDecoding.Plans.Entity?
        for commit in commits {
            let committedAt = Timestamp(microseconds: commit.committedAt)
            for offset in Int(max(0, seq + 1 - commit.first))..<commit.entries.count {
                // The plan looked up again only for another entity's schema (compared by identity, not by name).
                let entity = commit.entries[offset].op.shared
                if planEntity !== entity {
                    planEntity = entity
                    plan = plans.entities[entity.schema.name]
                }
                guard
                    let change = Self.change(
                        commit.entries[offset], seq: commit.first + Int64(offset), committedAt: committedAt,
                        plan: plan, misfits: &misfits)
                else { return nil }
                changes.append(change)
            }
        }
        return misfits == 0 ? changes : nil
    }

    /// The change an entry stands for, as ``ChangeDecoding/change(_:schema:misfits:)`` and
    /// ``ChangeDecoding/completeInserts(_:cut:schema:plans:db:misfits:)`` read it from the log; `nil` for an insert
    /// whose row cannot be made with certainty.
    private static func change(
        _ entry: Entry, seq: Int64, committedAt: Timestamp, plan: ChangeDecoding.Plans.Entity?, misfits: inout Int
    ) -> Change? {
        // The entity's schema by reference: an `EntitySchema` copied out retains and releases its five arrays.
        let shared = entry.op.shared
        switch entry.kind {
        case .insert:
            guard let plan, let row = self.insertedRow(entry.op, plan) else { return nil }
            return Change(
                seq: seq, entity: shared.schema.name, id: entry.op.id, kind: .insert, version: entry.version,
                before: nil, after: row, changedAttributes: [], committedAt: committedAt)
        case .update, .delete:
            let entity = shared.schema
            return try? ChangeDecoding.change(
                seq: seq, entity: entity.name, id: entry.op.id, kind: entry.kind, version: entry.version,
                before: entry.before, after: entry.after, typedBy: entity, committedAt: committedAt,
                misfits: &misfits)
        }
    }

    /// An insert's row as reading it back from its table gives it (``ChangeDecoding/RowReader``): the entity's
    /// attributes in order, the operation's values and the defaults of the attributes it leaves out, each as SQLite
    /// keeps it in its column; `nil` when a value is one this cannot be sure of.
    static func insertedRow(_ op: PreparedOperation, _ plan: ChangeDecoding.Plans.Entity) -> Row? {
        guard let defaults = plan.insertDefaults else { return nil }
        let attributes = plan.schema.attributes
        let layout = plan.layout
        // The defaults copied into the row's own buffer, the operation's values written over them there.
        return defaults.withUnsafeBufferPointer { defaults in
            Row(id: op.id, layout: layout, copying: defaults) { values in
                for i in op.columns.indices {
                    guard let position = layout.position(of: op.columns[i], hint: i),
                        let stored = Self.stored(op.values[i], as: attributes[position].type)
                    else { return false }
                    values[position] = stored
                }
                return true
            }
        }
    }

    /// A value as its attribute's column keeps it and the table read types it back, when that is certain: a value
    /// of its attribute's type (not a NaN, which SQLite keeps as NULL).
    ///
    /// (`Value` is `ExpressibleByNilLiteral`: a `nil` here would be `.null`, not a refusal, so none is written.)
    static func stored(_ value: Value, as type: AttributeType) -> Value? {
        let fits: Bool
        switch value {
        case .null: fits = true
        case .int: fits = type == .int
        case .string: fits = type == .string
        case .bool: fits = type == .bool
        case .timestamp: fits = type == .timestamp
        case .double(let d): fits = type == .double && !d.isNaN
        case .bytes: fits = type == .bytes
        }
        return fits ? Optional.some(value) : Optional.none
    }
}
