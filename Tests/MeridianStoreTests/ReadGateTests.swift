import Testing

@testable import MeridianStore

/// The store's gate in front of its readers: waits in arrival order, for at most the read timeout.
@Suite("Read gate", .timeLimit(.minutes(1)))
struct ReadGateTests {
    @Test("a wait that gets its permit ends its timer at once; a wait that does not gets false after its timeout")
    func timeouts() async throws {
        let gate = ReadGate(permits: 1)
        #expect(await gate.acquire(timeout: .seconds(60)))
        // A second read waits; its 60 s timer must not outlive the wait (it held a task per read that ever waited).
        let waiting = Task { await gate.acquire(timeout: .seconds(60)) }
        while gate.waitingCount == 0 { try await Task.sleep(for: .milliseconds(1)) }
        #expect(gate.runningTimerCount == 1)
        gate.release()
        #expect(await waiting.value)
        let deadline = ContinuousClock.now + .seconds(10)
        while gate.runningTimerCount > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(gate.runningTimerCount == 0)
        // A wait that runs out of time: false, and nothing left behind.
        #expect(!(await gate.acquire(timeout: .milliseconds(20))))
        #expect(gate.waitingCount == 0)
        gate.release()
        #expect(await gate.acquire(timeout: nil))
        gate.release()
    }
}
