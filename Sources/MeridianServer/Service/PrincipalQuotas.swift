// MARK: - PrincipalQuotas: what one identity may hold and how fast it may write

internal import MeridianProto
internal import Synchronization

/// Per-principal quotas: the `Sync` streams one subject may hold open at once (`--max-streams-per-principal`), the
/// subscriptions it may hold over all of them (`--max-subscriptions-per-principal`), and the transactions it may
/// commit per second (`--apply-rate-per-principal`, a token bucket holding one second's worth), so that one user — or
/// one stolen token — cannot take the server from the others. Anonymous calls (a server without `--auth`) are not
/// counted.
final class PrincipalQuotas: Sendable {
    private struct Usage {
        var streams = 0
        var subscriptions = 0
        var tokens: Double
        var refilled: ContinuousClock.Instant
    }

    private let maxStreams: Int
    private let maxSubscriptions: Int
    private let applyRate: Double
    private let usage = Mutex<[String: Usage]>([:])

    /// - Parameters:
    ///   - maxStreams: The most streams one subject may hold (0: no limit).
    ///   - applyRate: Transactions per second one subject may commit, with bursts of as many (0: no limit).
    ///   - maxSubscriptions: The most subscriptions one subject may hold over all its streams (0: no limit).
    init(maxStreams: Int, maxSubscriptions: Int = 0, applyRate: Int) {
        self.maxStreams = maxStreams
        self.maxSubscriptions = maxSubscriptions
        self.applyRate = Double(applyRate)
    }

    /// Counts a subscription added by `subject`, or refuses it when the subject holds the most allowed.
    func addSubscription(_ subject: String) throws(DetailError) {
        let held = self.usage.withLock { usage -> Int? in
            var entry = usage[subject] ?? Usage(tokens: self.applyRate, refilled: .now)
            guard self.maxSubscriptions == 0 || entry.subscriptions < self.maxSubscriptions else {
                return entry.subscriptions
            }
            entry.subscriptions += 1
            usage[subject] = entry
            return nil
        }
        if let held {
            throw DetailError(
                .limitExceeded,
                "\(subject) holds \(held) subscriptions over its streams, the most one principal may hold "
                    + "(--max-subscriptions-per-principal)")
        }
    }

    /// Forgets `count` subscriptions `subject` held.
    func removeSubscriptions(_ subject: String, count: Int) {
        guard count > 0 else { return }
        self.usage.withLock { usage in
            guard var entry = usage[subject] else { return }
            entry.subscriptions = max(0, entry.subscriptions - count)
            usage[subject] = entry
        }
    }

    /// Counts a stream opened by `subject`, or refuses it when the subject holds the most allowed.
    func openStream(_ subject: String) throws(DetailError) {
        let held = self.usage.withLock { usage -> Int? in
            var entry = usage[subject] ?? Usage(tokens: self.applyRate, refilled: .now)
            guard self.maxStreams == 0 || entry.streams < self.maxStreams else { return entry.streams }
            entry.streams += 1
            usage[subject] = entry
            return nil
        }
        if let held {
            throw DetailError(
                .limitExceeded,
                "\(subject) holds \(held) Sync streams, the most one principal may hold (--max-streams-per-principal)")
        }
    }

    /// Forgets a stream `subject` held.
    func closeStream(_ subject: String) {
        self.usage.withLock { usage in
            guard var entry = usage[subject] else { return }
            entry.streams -= 1
            // An idle principal with a full bucket is forgotten, so the table holds only the active ones.
            if entry.streams == 0, entry.subscriptions == 0, self.refilled(&entry) >= self.applyRate {
                usage[subject] = nil
            } else {
                usage[subject] = entry
            }
        }
    }

    /// Takes one transaction from `subject`'s bucket; when it is empty, how long until it holds one again.
    func takeTransaction(_ subject: String) -> Duration? {
        guard self.applyRate > 0 else { return nil }
        return self.usage.withLock { usage -> Duration? in
            var entry = usage[subject] ?? Usage(tokens: self.applyRate, refilled: .now)
            let tokens = self.refilled(&entry)
            defer { usage[subject] = entry }
            guard tokens >= 1 else { return .milliseconds(Int64(((1 - tokens) / self.applyRate * 1000).rounded(.up))) }
            entry.tokens -= 1
            return nil
        }
    }

    /// Refills the bucket for the time since it was last refilled; returns the tokens it holds.
    private func refilled(_ entry: inout Usage) -> Double {
        let now = ContinuousClock.now
        let elapsed = now - entry.refilled
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        entry.tokens = min(self.applyRate, entry.tokens + seconds * self.applyRate)
        entry.refilled = now
        return entry.tokens
    }
}
