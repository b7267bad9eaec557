import Synchronization
import Testing

@testable import MeridianServer

/// A stream's subscription reads (`ReadJobs`): one at a time, in the order asked, in a task that exists only while
/// there are reads, and none outliving the stream.
@Suite struct ReadJobsTests {
    /// What the jobs did, in order.
    final class Journal: Sendable {
        private let state = Mutex((events: [String](), running: 0, mostAtOnce: 0))

        func start(_ job: Int) {
            self.state.withLock {
                $0.events.append("start \(job)")
                $0.running += 1
                $0.mostAtOnce = max($0.mostAtOnce, $0.running)
            }
        }

        func end(_ job: Int, _ how: String = "end") {
            self.state.withLock {
                $0.events.append("\(how) \(job)")
                $0.running -= 1
            }
        }

        var events: [String] { self.state.withLock { $0.events } }
        var mostAtOnce: Int { self.state.withLock { $0.mostAtOnce } }
    }

    /// Waits (polling, at most 60 s: the whole suite running at once can starve these tasks) until `condition` holds.
    func eventually(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
    }

    @Test("jobs run one at a time, in the order asked, also when asked while one runs")
    func order() async throws {
        let journal = Journal()
        let jobs = ReadJobs { job in
            journal.start(job)
            for _ in 0..<(job % 3) { await Task.yield() }
            journal.end(job)
        }
        for job in 0..<60 {
            jobs.yield(job)
            if job % 7 == 0 { try await Task.sleep(for: .microseconds(50)) }
        }
        try await self.eventually { journal.events.count == 120 }
        #expect(journal.events == (0..<60).flatMap { ["start \($0)", "end \($0)"] })
        #expect(journal.mostAtOnce == 1)
        await jobs.stop()
    }

    @Test("stop cancels the running read and returns only after it ended; nothing runs after it")
    func stop() async throws {
        let journal = Journal()
        let jobs = ReadJobs { job in
            journal.start(job)
            do {
                try await Task.sleep(for: .seconds(60))
                journal.end(job)
            } catch {
                // A moment more, so that a stop that did not wait would return before this.
                for _ in 0..<100 { await Task.yield() }
                journal.end(job, "cancelled")
            }
        }
        jobs.yield(1)
        jobs.yield(2)
        try await self.eventually { journal.events == ["start 1"] }
        await jobs.stop()
        #expect(journal.events == ["start 1", "cancelled 1"])
        jobs.yield(3)
        try await Task.sleep(for: .milliseconds(20))
        #expect(journal.events == ["start 1", "cancelled 1"])
    }

    @Test("finish drops the queued reads and lets the running one end on its own")
    func finish() async throws {
        let journal = Journal()
        let released = Mutex(false)
        let jobs = ReadJobs { job in
            journal.start(job)
            while !released.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(1)) }
            journal.end(job)
        }
        jobs.yield(1)
        jobs.yield(2)
        try await self.eventually { journal.events == ["start 1"] }
        jobs.finish()
        released.withLock { $0 = true }
        try await self.eventually { journal.events.count == 2 }
        await jobs.stop()
        #expect(journal.events == ["start 1", "end 1"])
    }
}
