// MARK: - LockedValue

internal import Synchronization

/// A small value shared between the tasks of one session (a client's connection, a server's `Sync` stream).
package final class LockedValue<Value: Sendable>: Sendable {
    private let state: Mutex<Value>
    package init(_ value: Value) { self.state = Mutex(value) }
    package var value: Value { self.state.withLock { $0 } }
    package func set(_ value: Value) { self.state.withLock { $0 = value } }
}
