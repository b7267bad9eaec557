// MARK: - ViewStore
//
// The state every results controller of one cache context reads: the results engines, the applied seq and the
// pending ids, behind one lock. The context mutates it in one critical section per commit, so a reader (which takes
// the same lock) sees every controller at the same seq at all times, and change events are queued to their sinks in
// the same critical section, so a sink registered under the lock misses nothing and sees nothing twice.

internal import MeridianCore
internal import Synchronization

/// A change as the context produces it, before a typed controller decodes its rows.
struct RawChange: Sendable {
    var seq: Int64
    var changeSet: ChangeSet<Row>
    var cause: ResultsChangeCause
    var error: ClientError?
    var pendingIDs: Set<String>
    /// The controller shows cached rows its subscription's server answer has not confirmed (see
    /// ``ResultsChange/isProvisional``).
    var provisional = false
}

/// One controller's engine and sinks; a class so that it is mutated in place inside the lock.
///
/// `@unchecked Sendable`: every field is only read or written inside `ViewStore`'s lock (instances are created by
/// the context and handed straight to the locked state; they never escape a `withLock` body).
final class EngineBox: @unchecked Sendable {
    /// The results engine (O(log n) per changed row).
    var results: LiveResults
    /// The entity the controller reads.
    let entity: String
    /// Whether the controller shows complete data (a snapshot or the persisted cache).
    var isLoaded: Bool
    /// Whether what it shows now is complete for its current request (false after a region moved offline or before
    /// the first snapshot, until the server's answer).
    var isComplete: Bool
    /// The error that ended the controller's subscription, if any.
    var error: ClientError?
    /// Ids with pending writes that the controller shows.
    var pendingIDs: Set<String> = []
    /// The change streams consuming this controller, by registration number.
    var sinks: [UInt64: AsyncThrowingStream<RawChange, any Error>.Continuation] = [:]
    /// Waiters for the first complete data.
    var loadWaiters: [CheckedContinuation<Void, any Error>] = []
    /// The controller's Observation registrar (`Sendable`; told outside the lock, after a change).
    let observation: ResultsObservation

    init(results: LiveResults, entity: String, isLoaded: Bool, observation: ResultsObservation) {
        self.results = results
        self.entity = entity
        self.isLoaded = isLoaded
        self.isComplete = isLoaded
        self.observation = observation
    }

    /// Queues a change to every sink.
    func deliver(_ change: RawChange) {
        for sink in self.sinks.values { sink.yield(change) }
    }

    /// Ends every sink and waiter with an error (the subscription failed) or normally (closed).
    func finish(throwing error: ClientError?) {
        for sink in self.sinks.values { sink.finish(throwing: error) }
        self.sinks = [:]
        for waiter in self.loadWaiters {
            waiter.resume(throwing: error ?? ClientError(.closed, "the controller was closed"))
        }
        self.loadWaiters = []
    }
}

/// Everything controllers read, guarded by ``ViewStore``'s lock.
struct ViewState {
    /// The seq every controller is at.
    var seq: Int64 = 0
    /// The engines, by controller id.
    var engines: [UInt64: EngineBox] = [:]
    /// The next sink registration number.
    var nextSink: UInt64 = 0
}

/// The lock-protected view state shared by a context and its controllers.
final class ViewStore: Sendable {
    // `state` is only touched inside `withLock`; EngineBox instances never escape the lock.
    private let state = Mutex(ViewState())

    /// Runs `body` with exclusive access to the state.
    func withLock<T>(_ body: (inout ViewState) throws -> T) rethrows -> T {
        try self.state.withLock { state in try body(&state) }
    }

    /// Reads one controller's engine under the lock.
    func read<T>(_ controller: UInt64, _ body: (EngineBox?, Int64) -> T) -> T {
        self.state.withLock { state in body(state.engines[controller], state.seq) }
    }
}
