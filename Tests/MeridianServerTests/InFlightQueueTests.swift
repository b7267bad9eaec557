import Synchronization
import Testing

@testable import MeridianServer

/// `ApplyStream`'s hand-off from its reader to its writer (`InFlightQueue`): every element once, in order; the
/// producer waits while `capacity` wait; finishing ends the consumer after what was queued; a waiting producer whose
/// task is cancelled returns at once.
@Suite struct InFlightQueueTests {
    /// Waits (polling, at most 60 s: the whole suite running at once can starve these tasks) until `condition` holds.
    func eventually(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
    }

    @Test("every element reaches the consumer once, in order, whichever side waits")
    func order() async throws {
        let queue = InFlightQueue<Int>(capacity: 3)
        let producer = Task { () async throws -> Void in
            for i in 0..<500 {
                #expect(try await queue.put(i))
                if i % 7 == 0 { await Task.yield() }
            }
            queue.finish()
        }
        var received: [Int] = []
        while let element = await queue.next() {
            received.append(element)
            if element % 5 == 0 { try await Task.sleep(for: .microseconds(20)) }
        }
        try await producer.value
        #expect(received == Array(0..<500))
    }

    @Test("the producer waits while capacity elements wait, and goes on when the consumer takes one")
    func bound() async throws {
        let queue = InFlightQueue<Int>(capacity: 4)
        let put = Mutex(0)
        let producer = Task {
            for i in 0..<6 {
                _ = try await queue.put(i)
                put.withLock { $0 += 1 }
            }
        }
        try await self.eventually { put.withLock { $0 } == 4 }
        // Give the producer time to pass its bound, if it could.
        try await Task.sleep(for: .milliseconds(50))
        #expect(put.withLock { $0 } == 4)
        #expect(await queue.next() == 0)
        try await self.eventually { put.withLock { $0 } == 5 }
        try await Task.sleep(for: .milliseconds(50))
        #expect(put.withLock { $0 } == 5)
        #expect(await queue.next() == 1)
        try await producer.value
        #expect(put.withLock { $0 } == 6)
        queue.finish()
        var rest: [Int] = []
        while let element = await queue.next() { rest.append(element) }
        #expect(rest == [2, 3, 4, 5])
    }

    @Test("finish ends a waiting consumer, and a later put is refused")
    func finish() async throws {
        let queue = InFlightQueue<Int>(capacity: 2)
        let consumer = Task { await queue.next() }
        try await Task.sleep(for: .milliseconds(20))
        queue.finish()
        #expect(await consumer.value == nil)
        #expect(try await queue.put(1) == false)
        #expect(await queue.next() == nil)
    }

    @Test("a producer waiting on a full queue returns when its task is cancelled")
    func cancelledProducer() async throws {
        let queue = InFlightQueue<Int>(capacity: 1)
        #expect(try await queue.put(0))
        let producer = Task { try await queue.put(1) }
        try await Task.sleep(for: .milliseconds(20))
        producer.cancel()
        await #expect(throws: CancellationError.self) { try await producer.value }
        // Its element was dropped: only the first is there.
        queue.finish()
        #expect(await queue.next() == 0)
        #expect(await queue.next() == nil)
    }

    @Test("a producer already cancelled does not wait on a full queue")
    func producerCancelledBeforePut() async throws {
        let queue = InFlightQueue<Int>(capacity: 1)
        #expect(try await queue.put(0))
        let producer = Task { () async throws -> Bool in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await queue.put(1)
        }
        await #expect(throws: CancellationError.self) { try await producer.value }
        queue.finish()
        #expect(await queue.next() == 0)
        #expect(await queue.next() == nil)
    }
}
