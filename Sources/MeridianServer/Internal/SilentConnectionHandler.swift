// MARK: - SilentConnectionHandler

internal import Logging
internal import MeridianCore
internal import NIOCore

/// Closes a connection whose peer sends nothing — no byte within `--hello-timeout` of being accepted, or nothing for
/// `--keepalive-interval` + `--hello-timeout` afterwards — and one with no call open for `--idle-timeout`.
///
/// gRPC's own timers do not close such connections. Its idle timer starts when a connection becomes active or its
/// last stream closes, and a connection that never opens a stream was seen never to be closed (a client reconnecting
/// without a call stayed open for good). Its idle timer and its keepalive timeout both start a graceful shutdown
/// (`GOAWAY` and a `PING`) that closes the connection only when the peer answers the `PING`, so a socket that never
/// speaks (or stops speaking) would hold a descriptor, its buffers and a `--max-connections` slot for ever. The
/// server's keepalive (a `PING` every `--keepalive-interval` of silence, which every HTTP/2 peer answers) makes a live
/// peer speak, so silence past the interval plus the time to answer means the peer is gone or hostile.
///
/// The handler sits first in the connection's pipeline (added from the transport's accept callback) and notes when a
/// read ends (one clock read per read loop); the transport's stream callback tells it when calls open and close.
/// A connection closed for idleness has no call open, so closing it at once loses nothing; clients connect again at
/// their next call.
final class SilentConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let firstBytesTimeout: TimeAmount
    private let silenceTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    private let logger: Logger
    private var lastRead = NIODeadline.now()
    private var spoke = false
    private var reading = false
    private var openStreams = 0
    /// When the last call closed (or the connection opened), while no call is open.
    private var idleSince = NIODeadline.now()
    private var check: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    /// - Parameters:
    ///   - firstBytesTimeout: How long a new connection may stay silent (`--hello-timeout`).
    ///   - silenceTimeout: How long a connection that spoke may stay silent (`--keepalive-interval` +
    ///     `--hello-timeout`).
    ///   - idleTimeout: How long a connection may stay open with no call (`--idle-timeout`).
    init(firstBytesTimeout: Duration, silenceTimeout: Duration, idleTimeout: Duration, logger: Logger) {
        self.firstBytesTimeout = TimeAmount(firstBytesTimeout)
        self.silenceTimeout = TimeAmount(silenceTimeout)
        self.idleTimeout = TimeAmount(idleTimeout)
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        self.lastRead = .now()
        self.idleSince = self.lastRead
        self.schedule(context, at: self.lastRead + min(self.firstBytesTimeout, self.idleTimeout))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.check?.cancel()
        self.check = nil
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.reading = true
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.reading {
            self.reading = false
            self.spoke = true
            self.lastRead = .now()
        }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.check?.cancel()
        self.check = nil
        context.fireChannelInactive()
    }

    /// A call (HTTP/2 stream) opened on the connection.
    func streamOpened() {
        self.openStreams += 1
    }

    /// A call closed; the last one starts the idle time.
    func streamClosed() {
        self.openStreams -= 1
        if self.openStreams == 0 { self.idleSince = .now() }
    }

    private func schedule(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        self.check = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.expire()
        }
    }

    /// Closes the connection when it has been silent or idle too long, else checks again when it would be.
    private func expire() {
        guard let context = self.context else { return }
        let silence = self.spoke ? self.silenceTimeout : self.firstBytesTimeout
        let silentDue = self.lastRead + silence
        let idleDue = self.openStreams == 0 ? self.idleSince + self.idleTimeout : nil
        let now = NIODeadline.now()
        let reason: String
        if now >= silentDue {
            reason =
                self.spoke
                ? "was silent for \(Duration(silence).spoken) (--keepalive-interval + --hello-timeout)"
                : "sent nothing within \(Duration(silence).spoken) (--hello-timeout)"
        } else if let idleDue, now >= idleDue {
            reason = "had no call open for \(Duration(self.idleTimeout).spoken) (--idle-timeout)"
        } else {
            self.schedule(context, at: min(silentDue, idleDue ?? silentDue))
            return
        }
        self.check = nil
        self.logger.info(
            "closing a connection that \(reason)",
            metadata: ["meridian.peer": "\(context.channel.remoteAddress.map { "\($0)" } ?? "unknown")"])
        context.close(promise: nil)
    }
}
