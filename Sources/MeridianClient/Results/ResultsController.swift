// MARK: - ResultsController

public import MeridianCore
internal import Synchronization

/// A live, sorted, filtered, optionally sectioned query over a container's cache — the replicated
/// `NSFetchedResultsController`.
///
/// A controller shows its fetch request evaluated on the server's store at the context's applied seq, with pending
/// local writes on top. It never re-runs the query: each changed row costs O(log n). Every controller of one
/// container reads the same lock-protected state, so all of them are at the same ``seq`` at all times.
///
/// ```swift
/// let points = try await container.controller(
///     for: FetchRequest(Point.self, where: Point.Attr.category < 3,
///                       sortedBy: [.ascending(Point.Attr.category), .ascending(Point.Attr.title)],
///                       sectionedBy: Point.Attr.category))
/// points.sections            // [ResultsSection(key: 1, name: "1", count: 12), …]
/// points.object(at: ListIndexPath(0, 0))   // a Point
/// for try await change in points.changes() {
///     tableModel.apply(change)  // one change set per commit
/// }
/// ```
///
/// Change delivery: ``changes(includingInitial:)`` (an `AsyncSequence`, consumed on any executor, the main actor
/// included) or a ``delegate`` (called on the main actor, with will-change and did-change around each commit).
///
/// Observation: the controller is `Observable`, so a SwiftUI view that reads ``objects`` or ``sections`` in its
/// body redraws when they change. Every read registers; each commit that changes what the controller shows notifies
/// once (not once per row), after the change, from the context's executor; a commit that does not touch the
/// controller's query notifies nobody — so ``seq`` read under tracking moves with the controller's content, not
/// with every commit.
///
/// ```swift
/// struct PointList: View {
///     let points: ResultsController<Point>
///     var body: some View {
///         List(points.objects) { Text($0.title) }   // redraws once per commit that changes it
///     }
/// }
/// ```
///
/// - Note: Reads (``objects``, ``object(at:)``) always show the latest applied state. A UI whose data source must
///   match exactly the change sets it has animated keeps a ``ListModel`` fed from the change stream or delegate.
public final class ResultsController<Element: RowConvertible>: Sendable {
    /// The context the controller reads.
    public let context: CacheContext
    /// The fetch request the controller shows (for a region-mode map controller, the latest region's).
    public var request: FetchRequest { self.currentRequest.withLock { $0 } }
    /// The controller's id in the context.
    let id: UInt64
    let view: ViewStore
    let currentRequest: Mutex<FetchRequest>
    let delegateBox: DelegateBox<Element>
    /// The Observation registrar every read registers with (see `ResultsController+Observation.swift`).
    let observation: ResultsObservation

    init(context: CacheContext, id: UInt64, request: FetchRequest, observation: ResultsObservation) {
        self.context = context
        self.id = id
        self.view = context.view
        self.currentRequest = Mutex(request)
        self.delegateBox = DelegateBox()
        self.observation = observation
    }

    /// Reads the controller's engine under the view lock, and registers the read with Observation tracking.
    private func read<T>(_ body: (EngineBox?, Int64) -> T) -> T {
        self.observation.access()
        return self.view.read(self.id, body)
    }

    // MARK: - Reading

    /// The seq the controller (and every controller of its container) is at.
    public var seq: Int64 {
        self.read { _, seq in seq }
    }

    /// The number of objects shown.
    public var count: Int {
        self.read { box, _ in box?.results.count ?? 0 }
    }

    /// The objects, in order. O(n).
    public var objects: [Element] {
        self.rows.map(Self.decode)
    }

    /// The rows, in order. O(n).
    public var rows: [Row] {
        self.read { box, _ in box?.results.rows ?? [] }
    }

    /// The sections: key, display name and row count. Without a section key, one section named `""`.
    public var sections: [ResultsSection] {
        self.read { box, _ in box?.results.sections ?? [] }
    }

    /// The object at an index path. O(log n).
    ///
    /// - Precondition: The path addresses an object of the controller.
    public func object(at indexPath: ListIndexPath) -> Element {
        Self.decode(self.row(at: indexPath))
    }

    /// The row at an index path. O(log n).
    public func row(at indexPath: ListIndexPath) -> Row {
        self.read { box, _ in
            guard let box else { preconditionFailure("the controller is closed") }
            return box.results.object(at: indexPath)
        }
    }

    /// The index path of the object with this id, or `nil` when the controller does not show it. O(log n).
    public func indexPath(for id: String) -> ListIndexPath? {
        self.read { box, _ in box?.results.indexPath(for: id) }
    }

    /// The index path of an object, or `nil` when the controller does not show it. O(log n).
    public func indexPath(for object: Element) -> ListIndexPath? {
        self.indexPath(for: object.id)
    }

    /// The object with this id, or `nil` when the controller does not show it.
    public func object(id: String) -> Element? {
        self.read { box, _ in box?.results.row(id: id) }.map(Self.decode)
    }

    /// The shown ids whose writes the server has not confirmed yet.
    public var pendingIDs: Set<String> {
        self.read { box, _ in box?.pendingIDs ?? [] }
    }

    /// Whether the object with this id has a write the server has not confirmed yet.
    public func isPending(_ id: String) -> Bool {
        self.pendingIDs.contains(id)
    }

    /// Whether the controller shows complete data (a snapshot, or rows restored from the cache file).
    public var isLoaded: Bool {
        self.read { box, _ in box?.isLoaded ?? false }
    }

    /// The error that ended the controller's subscription (the server rejected its request), if any.
    public var error: ClientError? {
        self.read { box, _ in box?.error }
    }

    /// The controller's state as a sectioned list, with the seq it is at, read atomically. O(n).
    public func snapshot() -> (seq: Int64, list: SectionedList<Element>) {
        let (seq, rows) = self.read { box, seq in (seq, box?.results.snapshot ?? SectionedList()) }
        return (
            seq,
            SectionedList(
                sections: rows.sections.map { section in
                    ListSection(key: section.key, name: section.name, elements: section.elements.map(Self.decode))
                })
        )
    }

    // MARK: - Change delivery

    /// The controller's changes, one element per commit, in order, from now on.
    ///
    /// The stream is registered when this method returns, so nothing is missed between the call and the first
    /// `next()`. With `includingInitial`, the first element (cause ``ResultsChangeCause/initial``) inserts
    /// everything shown at registration, so a consumer can build its state from the stream alone. The buffer is
    /// unbounded (a change set is never dropped: dropping one would break every later one); the stream ends when the
    /// controller is closed, and throws when the server rejects the controller's subscription.
    ///
    /// - Parameter includingInitial: Start with the current state as inserts (default `true`).
    public func changes(includingInitial: Bool = true) -> ResultsChanges<Element> {
        ResultsChanges(raw: self.registerSink(includingInitial: includingInitial))
    }

    /// Registers a raw change stream under the view lock.
    func registerSink(includingInitial: Bool) -> AsyncThrowingStream<RawChange, any Error> {
        let (stream, continuation) = AsyncThrowingStream<RawChange, any Error>.makeStream(
            bufferingPolicy: .unbounded)
        let view = self.view
        let id = self.id
        let sinkID: UInt64? = view.withLock { state in
            guard let box = state.engines[id] else { return nil }
            if let error = box.error {
                continuation.finish(throwing: error)
                return nil
            }
            let sinkID = state.nextSink
            state.nextSink += 1
            box.sinks[sinkID] = continuation
            if includingInitial {
                let empty =
                    box.results.sectionKey == nil ? SectionedList<Row>(unsectioned: []) : SectionedList<Row>()
                let initial = (try? ChangeSet.between(old: empty, new: box.results.snapshot)) ?? ChangeSet()
                continuation.yield(
                    RawChange(
                        seq: state.seq, changeSet: initial, cause: .initial, error: nil, pendingIDs: box.pendingIDs,
                        provisional: !box.isComplete))
            }
            return sinkID
        }
        guard let sinkID else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { _ in
            view.withLock { state in _ = state.engines[id]?.sinks.removeValue(forKey: sinkID) }
        }
        return stream
    }

    /// The delegate, called on the main actor: will-change, the change, did-change, for each commit in order.
    ///
    /// Setting it starts delivery from the next commit; the controller holds it weakly.
    @MainActor
    public var delegate: (any ResultsControllerDelegate<Element>)? {
        get { self.delegateBox.delegate }
        set {
            self.delegateBox.delegate = newValue
            guard newValue != nil, self.delegateBox.task == nil else { return }
            let stream = self.registerSink(includingInitial: false)
            self.delegateBox.task = Task { @MainActor [weak self, delegateBox] in
                do {
                    for try await raw in stream {
                        guard let self, let delegate = delegateBox.delegate else { continue }
                        let change = try ResultsChange<Element>(raw)
                        delegate.controllerWillChangeContent(self)
                        delegate.controller(self, didChange: change)
                        delegate.controllerDidChangeContent(self)
                    }
                } catch {
                    // The subscription failed; `error` tells the delegate's owner why.
                }
            }
        }
    }

    // MARK: - Lifecycle

    /// Waits until the controller shows complete data: its first snapshot, or rows restored from the cache file.
    ///
    /// - Throws: ``ClientError`` when the server rejects the controller's request, or it is closed.
    public func waitUntilLoaded() async throws(ClientError) {
        do {
            try await self.context.waitUntilLoaded(self.id)
        } catch {
            throw ClientError(calling: error)
        }
    }

    /// Closes the controller: its streams end, and when it was the last controller of its subscription, the
    /// subscription is removed and its rows leave the cache.
    public func close() async {
        await self.context.unregisterController(self.id)
        await MainActor.run { [delegateBox] in
            delegateBox.task?.cancel()
            delegateBox.task = nil
        }
    }

    /// Replaces the controller's own subscription (region mode): only what entered and left is reported.
    func replaceRequest(_ request: FetchRequest) async throws(ClientError) {
        try await self.context.replaceRequest(of: self.id, with: request)
        self.currentRequest.withLock { $0 = request }
    }

    static func decode(_ row: Row) -> Element {
        do {
            return try Element(row: row)
        } catch {
            // Unreachable: the controller's creation checked (`checkFits`) that every row of the entity decodes.
            preconditionFailure("\(Element.self) does not decode row \(row.id): \(error)")
        }
    }
}

// MARK: - Delegate

/// Receives a results controller's changes on the main actor, bracketed like `NSFetchedResultsController`'s.
@MainActor
public protocol ResultsControllerDelegate<Element>: AnyObject {
    /// The element type of the controller.
    associatedtype Element: RowConvertible
    /// A commit is about to be reported.
    func controllerWillChangeContent(_ controller: ResultsController<Element>)
    /// The commit's change set (apply it to a table view or a ``ListModel``).
    func controller(_ controller: ResultsController<Element>, didChange change: ResultsChange<Element>)
    /// The commit has been reported.
    func controllerDidChangeContent(_ controller: ResultsController<Element>)
}

extension ResultsControllerDelegate {
    public func controllerWillChangeContent(_ controller: ResultsController<Element>) {}
    public func controllerDidChangeContent(_ controller: ResultsController<Element>) {}
}

/// The main-actor side of a controller: its delegate and the task delivering to it.
@MainActor
final class DelegateBox<Element: RowConvertible> {
    weak var delegate: (any ResultsControllerDelegate<Element>)?
    var task: Task<Void, Never>?

    nonisolated init() {}
}

// MARK: - ResultsChanges

/// A results controller's change stream: one ``ResultsChange`` per commit, in order.
///
/// Unbounded buffer (change sets are never dropped); ends when the controller closes; throws ``ClientError`` when
/// the server rejects the controller's subscription.
public struct ResultsChanges<Object: RowConvertible>: AsyncSequence, Sendable {
    public typealias Element = ResultsChange<Object>
    public typealias Failure = any Error
    let raw: AsyncThrowingStream<RawChange, any Error>

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: self.raw.makeAsyncIterator())
    }

    /// The iterator, decoding rows into `Element`.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<RawChange, any Error>.Iterator

        public mutating func next() async throws -> ResultsChange<Object>? {
            guard let raw = try await self.base.next() else { return nil }
            return try ResultsChange<Object>(raw)
        }
    }
}
