// MARK: - ResultsChange

public import MeridianCore

/// Why a results controller changed.
public struct ResultsChangeCause: Sendable, Hashable, CustomStringConvertible {
    enum Wrapped: String, Sendable, Hashable {
        case initial, remote, snapshot, replaced, localWrite, confirmed, reverted
    }

    let wrapped: Wrapped
    init(_ wrapped: Wrapped) { self.wrapped = wrapped }

    /// The first element of a change stream: everything the controller showed when the stream started, as inserts.
    public static let initial = ResultsChangeCause(.initial)
    /// Commits from the server (one `Batch`): the controller moved from one seq to a later one.
    public static let remote = ResultsChangeCause(.remote)
    /// A snapshot, or a resnapshot after a reconnect, diffed against what the controller showed.
    public static let snapshot = ResultsChangeCause(.snapshot)
    /// The subscription's fetch request was replaced (a map region moved): only what entered and left.
    public static let replaced = ResultsChangeCause(.replaced)
    /// A local write was saved: its rows show at once, marked pending.
    public static let localWrite = ResultsChangeCause(.localWrite)
    /// The server confirmed pending writes (their rows are no longer pending).
    public static let confirmed = ResultsChangeCause(.confirmed)
    /// The server rejected a transaction: its optimistic changes were undone (``ResultsChange/error`` says why).
    public static let reverted = ResultsChangeCause(.reverted)

    public var description: String { self.wrapped.rawValue }
}

/// One commit as a results controller saw it: the change set from its previous state to its new one.
///
/// The change set follows the fetched-results-controller contract (deleted rows and sections at their old index
/// paths, inserted ones at their new paths, moves and updates with both), so it drives a table view's batch updates
/// or a ``ListModel`` directly.
public struct ResultsChange<Element: RowConvertible>: Sendable {
    /// The server seq the controller is at after the change (unchanged by local writes).
    public var seq: Int64
    /// The transition.
    public var changeSet: ChangeSet<Element>
    /// Why the controller changed.
    public var cause: ResultsChangeCause
    /// For ``ResultsChangeCause/reverted``: the server's reason.
    public var error: ClientError?
    /// The ids the controller shows whose writes are not yet confirmed by the server.
    public var pendingIDs: Set<String>
    /// Whether the controller shows cached rows that the server has not yet confirmed for its current request: after
    /// a map region (or any request) was replaced while offline, or before the subscription's first snapshot, the
    /// cached rows the new request selects show at once, but they are not the store's result at ``seq`` — the rest
    /// arrive with the server's answer, in a later change with `isProvisional` false. Everything else a controller
    /// shows is the store's state at ``seq``.
    public var isProvisional: Bool

    /// Creates a change.
    public init(
        seq: Int64,
        changeSet: ChangeSet<Element>,
        cause: ResultsChangeCause,
        error: ClientError? = nil,
        pendingIDs: Set<String> = [],
        isProvisional: Bool = false
    ) {
        self.seq = seq
        self.changeSet = changeSet
        self.cause = cause
        self.error = error
        self.pendingIDs = pendingIDs
        self.isProvisional = isProvisional
    }
}

extension ResultsChange {
    /// Decodes a raw change's rows into the controller's element type.
    init(_ raw: RawChange) throws(ClientError) {
        self.init(
            seq: raw.seq,
            changeSet: try raw.changeSet.decoded(as: Element.self),
            cause: raw.cause,
            error: raw.error,
            pendingIDs: raw.pendingIDs,
            isProvisional: raw.provisional
        )
    }
}

extension ChangeSet where Element == Row {
    /// The same change set with every row decoded as `Model`.
    ///
    /// - Throws: ``ClientError`` with code `modelMismatch` when a row does not decode.
    public func decoded<Model: RowConvertible>(as model: Model.Type) throws(ClientError) -> ChangeSet<Model> {
        if let same = self as? ChangeSet<Model> { return same }
        var result = ChangeSet<Model>(deletedSections: self.deletedSections, insertedSections: self.insertedSections)
        result.rowChanges.reserveCapacity(self.rowChanges.count)
        for change in self.rowChanges {
            switch change {
            case .delete(let id, let from):
                result.rowChanges.append(.delete(id: id, from: from))
            case .insert(let id, let to, let row):
                result.rowChanges.append(.insert(id: id, to: to, element: try Model(row: row)))
            case .move(let id, let from, let to, let row, let changed):
                result.rowChanges.append(
                    .move(id: id, from: from, to: to, element: try Model(row: row), changed: changed))
            case .update(let id, let from, let to, let row, let changed):
                result.rowChanges.append(
                    .update(id: id, from: from, to: to, element: try Model(row: row), changed: changed))
            }
        }
        return result
    }
}
