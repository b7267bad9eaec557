// MARK: - Change

public import MeridianCore

/// One captured change of one row, as recorded in the change log.
public struct Change: Sendable, Hashable {
    /// The kind of change.
    public enum Kind: Int, Sendable, Hashable {
        /// A new row (`after` set).
        case insert = 1
        /// A changed row (`before` and `after` set).
        case update = 2
        /// A removed row (`before` set).
        case delete = 3
    }

    /// The change's sequence number, strictly increasing across all changes.
    public var seq: Int64
    /// The entity.
    public var entity: String
    /// The row's id.
    public var id: String
    /// Insert, update or delete.
    public var kind: Kind
    /// The row's version after the change (for a delete, one more than the deleted row's).
    public var version: Int64
    /// The row before the change (updates and deletes).
    public var before: Row?
    /// The row after the change (inserts and updates).
    public var after: Row?
    /// For an update, the attributes whose values differ between `before` and `after` (sorted); empty otherwise.
    public var changedAttributes: [String]
    /// When the change was written.
    public var committedAt: Timestamp

    /// Creates a change.
    public init(
        seq: Int64, entity: String, id: String, kind: Kind, version: Int64, before: Row?, after: Row?,
        changedAttributes: [String], committedAt: Timestamp
    ) {
        self.seq = seq
        self.entity = entity
        self.id = id
        self.kind = kind
        self.version = version
        self.before = before
        self.after = after
        self.changedAttributes = changedAttributes
        self.committedAt = committedAt
    }
}

// MARK: - ChangeBatch

/// The changes after a sequence number, read in one read transaction.
public struct ChangeBatch: Sendable, Hashable {
    /// The changes, in `seq` order (only those of the requested entities, if any were named).
    public var changes: [Change]
    /// The sequence number the batch brings its reader to: continue with `changes(after: throughSeq)`.
    ///
    /// When ``hasMore`` is false this is the latest commit at the time of the read, a commit boundary: the state
    /// after applying the batch is a state the store really had.
    public var throughSeq: Int64
    /// True when the limit cut the batch short; `throughSeq` may then be inside a commit, so read on before
    /// treating the state as committed.
    public var hasMore: Bool

    /// Creates a batch.
    public init(changes: [Change], throughSeq: Int64, hasMore: Bool) {
        self.changes = changes
        self.throughSeq = throughSeq
        self.hasMore = hasMore
    }
}

/// The answer to a request for the changes after a sequence number.
public enum ChangesResult: Sendable, Hashable {
    /// The log holds every change after the requested `seq`.
    case changes(ChangeBatch)
    /// The log was pruned past the requested `seq`: changes up to `prunedThrough` are gone; take a fresh snapshot.
    case tooOld(prunedThrough: Int64)
}

// MARK: - Snapshot

/// The rows of a query together with the sequence number they are consistent with.
public struct Snapshot: Sendable, Hashable {
    /// The rows, in the query's order (the id breaks ties).
    public var rows: [Row]
    /// Each row's version, parallel to `rows`.
    public var versions: [Int64]
    /// The latest `seq` in the same read transaction: the rows are the query's result at `seq`.
    public var seq: Int64

    /// Creates a snapshot.
    public init(rows: [Row], versions: [Int64], seq: Int64) {
        self.rows = rows
        self.versions = versions
        self.seq = seq
    }
}

// MARK: - PruneResult

/// What a call to `Store.prune(keepingLast:olderThan:)` removed.
public struct PruneResult: Sendable, Hashable {
    /// Changes up to and including this `seq` are gone from the log (0 when nothing was ever pruned).
    public var prunedThrough: Int64
    /// How many changes this call removed.
    public var removed: Int

    /// Creates a result.
    public init(prunedThrough: Int64, removed: Int) {
        self.prunedThrough = prunedThrough
        self.removed = removed
    }
}
