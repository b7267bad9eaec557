// MARK: - Backoff

/// Reconnection delays: exponential, capped, with full jitter (each delay is uniform in [base/2, base]), reset once
/// a connection is established. A pure state machine; the connection sleeps for what it returns.
struct Backoff: Sendable {
    /// The first delay.
    let initial: Duration
    /// The largest delay.
    let maximum: Duration
    /// The factor between consecutive delays.
    let multiplier: Double
    /// The next base delay.
    private(set) var current: Duration

    init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(10), multiplier: Double = 2) {
        self.initial = initial
        self.maximum = maximum
        self.multiplier = multiplier
        self.current = initial
    }

    /// The delay before the next attempt; grows the following one.
    mutating func next<G: RandomNumberGenerator>(using generator: inout G) -> Duration {
        let base = self.current
        let grown = base * self.multiplier
        self.current = grown > self.maximum ? self.maximum : grown
        let fraction = Double.random(in: 0.5...1.0, using: &generator)
        return base * fraction
    }

    /// The delay before the next attempt, with the system's random numbers.
    mutating func next() -> Duration {
        var generator = SystemRandomNumberGenerator()
        return self.next(using: &generator)
    }

    /// A connection succeeded: start again from the first delay.
    mutating func reset() {
        self.current = self.initial
    }
}
