// MARK: - ConnectionLimiter

internal import Logging
internal import NIOCore
internal import Synchronization

/// Counts the server's open connections and closes those past `--max-connections` as soon as they are accepted;
/// puts a ``SilentConnectionHandler`` in front of every other one.
///
/// It hangs off the transport's accept callback (grpc-swift-nio-transport's `onAcceptTCPConnection`, the one place a
/// connection is seen before any call on it): a connection over the limit is closed before its HTTP/2 preface is read,
/// so it costs a descriptor for a moment and nothing else. The client sees its call fail `UNAVAILABLE`.
final class ConnectionLimiter: Sendable {
    private let limit: Int
    private let firstBytesTimeout: Duration
    private let silenceTimeout: Duration
    private let idleTimeout: Duration
    private let open = Atomic<Int>(0)
    private let closed = Atomic<Int>(0)
    private let logger: Logger
    /// The subjects of the client certificates of mutual-TLS connections.
    let peerCertificates = PeerCertificates()

    /// - Parameters:
    ///   - limit: `--max-connections`.
    ///   - firstBytesTimeout: How long a new connection may send nothing.
    ///   - silenceTimeout: How long a connection that spoke may send nothing.
    ///   - idleTimeout: How long a connection may stay open with no call.
    init(limit: Int, firstBytesTimeout: Duration, silenceTimeout: Duration, idleTimeout: Duration, logger: Logger) {
        self.limit = limit
        self.firstBytesTimeout = firstBytesTimeout
        self.silenceTimeout = silenceTimeout
        self.idleTimeout = idleTimeout
        self.logger = logger
    }

    /// The number of connections open now.
    var count: Int { self.open.load(ordering: .relaxed) }

    /// The number of connections closed since the server started (refused ones included).
    var closedCount: Int { self.closed.load(ordering: .relaxed) }

    /// Counts an accepted connection until it closes, or closes it when the limit is reached.
    func accept(_ channel: any Channel) -> EventLoopFuture<Void> {
        let count = self.open.wrappingAdd(1, ordering: .relaxed).newValue
        channel.closeFuture.whenComplete { _ in
            self.open.wrappingSubtract(1, ordering: .relaxed)
            self.closed.wrappingAdd(1, ordering: .relaxed)
        }
        if count > self.limit {
            self.logger.warning(
                "refusing a connection: \(count - 1) are open, the most allowed (--max-connections)",
                metadata: ["meridian.peer": "\(channel.remoteAddress.map { "\($0)" } ?? "unknown")"])
            channel.close(promise: nil)
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        return channel.eventLoop.makeCompletedFuture {
            // A connection keeps its last read's buffer for the next read, so an idle one holds a buffer of the
            // size its reads had reached: NIO's default starts at 2 KiB. Starting at 256 bytes (and growing within
            // a few reads when they fill it) took 4–7 KiB off each idle client (`server --case regions`).
            try channel.syncOptions?.setOption(
                ChannelOptions.recvAllocator,
                value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 256, maximum: 65536))
            try channel.pipeline.syncOperations.addHandler(
                SilentConnectionHandler(
                    firstBytesTimeout: self.firstBytesTimeout, silenceTimeout: self.silenceTimeout,
                    idleTimeout: self.idleTimeout, logger: self.logger),
                position: .first)
        }
    }

    /// Tells the connection's ``SilentConnectionHandler`` that a call opened on it, and when it closes.
    func acceptStream(_ stream: any Channel) -> EventLoopFuture<Void> {
        stream.eventLoop.makeCompletedFuture {
            guard let connection = stream.parent,
                let handler = try? connection.pipeline.syncOperations.handler(type: SilentConnectionHandler.self)
            else { return }
            self.peerCertificates.register(connection)
            handler.streamOpened()
            stream.closeFuture.assumeIsolated().whenComplete { _ in handler.streamClosed() }
        }
    }
}
