// MARK: - CacheContext: for tests

internal import Foundation
internal import MeridianCore

extension CacheContext {
    /// Holds the context's actor for `duration` without yielding its thread, as applying a very large message does
    /// (tests: the connection's watchdog must not take that time for the server's silence).
    package func occupy(for duration: Duration) {
        Thread.sleep(forTimeInterval: Double(duration.nanoseconds) / 1e9)
    }
}
