// MARK: - ConnectionLimiter

internal import Logging
internal import NIOCore
internal import Synchronization

/// Counts the server's open connections and closes those past `--max-connections` as soon as they are accepted.
///
/// It hangs off the transport's accept callback (grpc-swift-nio-transport's `onAcceptTCPConnection`, the one place a
/// connection is seen before any call on it): a connection over the limit is closed before its HTTP/2 preface is read,
/// so it costs a descriptor for a moment and nothing else. The client sees its call fail `UNAVAILABLE`.
final class ConnectionLimiter: Sendable {
    private let limit: Int
    private let open = Atomic<Int>(0)
    private let logger: Logger

    init(limit: Int, logger: Logger) {
        self.limit = limit
        self.logger = logger
    }

    /// The number of connections open now.
    var count: Int { self.open.load(ordering: .relaxed) }

    /// Counts an accepted connection until it closes, or closes it when the limit is reached.
    func accept(_ channel: any Channel) -> EventLoopFuture<Void> {
        let count = self.open.wrappingAdd(1, ordering: .relaxed).newValue
        channel.closeFuture.whenComplete { _ in self.open.wrappingSubtract(1, ordering: .relaxed) }
        if count > self.limit {
            self.logger.warning(
                "refusing a connection: \(count - 1) are open, the most allowed (--max-connections)",
                metadata: ["meridian.peer": "\(channel.remoteAddress.map { "\($0)" } ?? "unknown")"])
            channel.close(promise: nil)
        }
        return channel.eventLoop.makeSucceededVoidFuture()
    }
}
