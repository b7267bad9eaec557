// MARK: - SilenceWatch, alone

import Testing

@testable import MeridianClient

@Suite("Silence watch")
struct SilenceWatchTests {
    let start = ContinuousClock.now
    let period = Duration.milliseconds(200)

    /// The instant `n` periods (and `extra`) after the start.
    func at(_ n: Int, _ extra: Duration = .zero) -> ContinuousClock.Instant {
        self.start + self.period * n + extra
    }

    @Test("on-time wakes that hear nothing: lost after three periods, with the silence since the last message")
    func onTime() {
        var watch = SilenceWatch(start: self.start)
        for n in 1...3 {
            #expect(watch.check(now: self.at(n), due: self.at(n), lastHeard: self.start, period: self.period) == nil)
        }
        let lost = watch.check(
            now: self.at(4, .milliseconds(5)), due: self.at(4), lastHeard: self.start, period: self.period)
        #expect(lost == self.period * 4 + .milliseconds(5))
    }

    @Test("a message heard resets the count")
    func heard() {
        var watch = SilenceWatch(start: self.start)
        let heard = self.at(2, .milliseconds(50))
        for n in 1...5 {
            let lastHeard = n >= 3 ? heard : self.start
            #expect(watch.check(now: self.at(n), due: self.at(n), lastHeard: lastHeard, period: self.period) == nil)
        }
        #expect(watch.check(now: self.at(6), due: self.at(6), lastHeard: heard, period: self.period) != nil)
    }

    @Test("a wake more than a period late forgives the silence before it: three more on-time periods are needed")
    func lateWake() {
        var watch = SilenceWatch(start: self.start)
        #expect(watch.check(now: self.at(1), due: self.at(1), lastHeard: self.start, period: self.period) == nil)
        // Due at 2 periods, woken at 5: the process was starved; 5 periods of silence are not held against the server.
        #expect(watch.check(now: self.at(5), due: self.at(2), lastHeard: self.start, period: self.period) == nil)
        for n in 6...8 {
            #expect(watch.check(now: self.at(n), due: self.at(n), lastHeard: self.start, period: self.period) == nil)
        }
        // Three on-time periods after the late wake, still nothing: lost, and the silence is the whole of it.
        let lost = watch.check(
            now: self.at(8, .milliseconds(10)), due: self.at(8), lastHeard: self.start, period: self.period)
        #expect(lost == self.period * 8 + .milliseconds(10))
    }

    @Test("a wake late by less than a period still counts the silence")
    func slightlyLate() {
        var watch = SilenceWatch(start: self.start)
        #expect(watch.check(now: self.at(2), due: self.at(1), lastHeard: self.start, period: self.period) == nil)
        let lost = watch.check(
            now: self.at(4, .milliseconds(100)), due: self.at(4), lastHeard: self.start, period: self.period)
        #expect(lost != nil)
    }

    @Test("wakes that are always late still find a silence of the limit: ten periods, and at least 30 s")
    func alwaysLate() {
        var watch = SilenceWatch(start: self.start)
        // Every wake two periods late: none counts, until the silence reaches the limit (30 s for 200 ms periods).
        var now = self.start
        var lost: Duration?
        while lost == nil, now - self.start < .seconds(60) {
            let due = now + self.period
            now = due + self.period * 2
            lost = watch.check(now: now, due: due, lastHeard: self.start, period: self.period)
        }
        #expect(lost.map { $0 >= .seconds(30) && $0 < .seconds(31) } == true, "\(String(describing: lost))")
        #expect(SilenceWatch.limit(period: .seconds(10)) == .seconds(100))
    }
}
