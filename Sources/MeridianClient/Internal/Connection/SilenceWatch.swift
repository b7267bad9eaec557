// MARK: - SilenceWatch

/// When a stream's silence means its connection is lost: no message for three periods (the server's heartbeat
/// interval), seen by a watchdog that wakes once a period. A pure state machine; the connection's watchdog sleeps a
/// period and asks it.
///
/// Silence is held against the server only while the watchdog wakes on time. One that wakes more than a period late
/// was itself kept off the CPU — a loaded machine, a process stopped for a while — and so, most likely, was the task
/// that reads the stream: the server's messages may be waiting unread. The silence before such a wake is not
/// counted, and the connection counts as lost after three more periods heard nothing — or once the silence reaches
/// ``limit(period:)`` however late the wakes were, so that a peer gone for good is still found by a watchdog that
/// never wakes on time (a very short interval on a loaded machine). (Counted from the last message
/// alone, a client on a loaded machine took its own stall for the server's: with 200 ms heartbeats it dropped and
/// reconnected a healthy stream every few seconds, each reconnection's resume costing the server and the client
/// more.)
struct SilenceWatch: Sendable {
    /// The period before the stream's Welcome has said the server's heartbeat interval: connecting, the schema and
    /// the Welcome have three of them. Never the previous connection's interval, which may be far shorter than what
    /// a loaded server takes to accept a reconnection.
    static let handshakePeriod = Duration.seconds(5)

    /// How many periods of silence mean the connection is lost.
    static let periods = 3

    /// The silence that means a lost connection however late the watchdog woke: ten periods, and at least 30 s.
    static func limit(period: Duration) -> Duration {
        max(.seconds(30), period * 10)
    }

    /// Silence before this instant is not counted (a late wake's).
    private(set) var countedFrom: ContinuousClock.Instant

    /// A watch over a stream opened at `start` (its silence counts from there).
    init(start: ContinuousClock.Instant) {
        self.countedFrom = start
    }

    /// The watchdog woke at `now` for a wake due at `due` (a period after the one before, or less); the last message
    /// was heard at `lastHeard`. A wake more than `period` late was starved.
    ///
    /// - Returns: The stream's silence when it means the connection is lost; `nil` to watch on.
    mutating func check(
        now: ContinuousClock.Instant, due: ContinuousClock.Instant, lastHeard: ContinuousClock.Instant,
        period: Duration
    ) -> Duration? {
        if now - lastHeard >= Self.limit(period: period) { return now - lastHeard }
        if now - due > period {
            // Starved: what was not heard meanwhile may not have been read.
            self.countedFrom = max(self.countedFrom, now)
            return nil
        }
        let counted = now - max(lastHeard, self.countedFrom)
        return counted > period * Self.periods ? now - lastHeard : nil
    }
}
