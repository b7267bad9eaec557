// MARK: - SIGINT and SIGTERM

internal import Dispatch
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#elseif canImport(Musl)
    internal import Musl
#elseif canImport(Darwin)
    internal import Darwin
#endif

/// Turns SIGINT and SIGTERM into an awaitable event, so that `watch` and `map` can stop cleanly (restore the
/// terminal, exit 0) instead of being killed.
enum Signals {
    /// Returns when the process receives SIGINT or SIGTERM (their default actions are disabled from the first call).
    static func interruption() async {
        let sources = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            return DispatchSource.makeSignalSource(signal: number, queue: .global())
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = OnceFlag()
            for source in sources {
                source.setEventHandler {
                    if once.claim() { continuation.resume() }
                }
                source.resume()
            }
        }
        for source in sources { source.cancel() }
    }
}

/// A flag that can be claimed once, from any thread.
private final class OnceFlag: Sendable {
    private let claimed = Mutex(false)

    func claim() -> Bool {
        self.claimed.withLock { claimed in
            defer { claimed = true }
            return !claimed
        }
    }
}
