import Foundation
import MeridianProcessIO
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

// MARK: - Pipe reads that a signal interrupts

/// How many SIGUSR2 the handler below has seen.
private let interruptions = Atomic<Int>(0)

/// Foundation's `availableData` and `readDataToEndOfFile()` stop the process when a signal interrupts their `read(2)`
/// (EINTR) — a test run died of it when a child's exit interrupted a read. Here a reader blocked on an empty pipe is
/// interrupted many times by a signal whose handler does not ask for restarted calls, then the data arrives: each of
/// MeridianProcessIO's readers must return the data, not an early end of file and not a crash.
@Suite("MeridianProcessIO", .serialized)
struct ProcessIOTests {
    enum Reader: String, CaseIterable, Sendable { case nextChunk, remainingData, nextByte }

    @Test(
        "a read interrupted by signals is retried and returns the bytes that come after", .timeLimit(.minutes(1)),
        arguments: Reader.allCases)
    func interruptedRead(reader: Reader) async throws {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in interruptions.add(1, ordering: .relaxed) }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0  // no SA_RESTART: a blocked read(2) returns EINTR
        var previous = sigaction()
        #expect(sigaction(SIGUSR2, &action, &previous) == 0)

        let pipe = Pipe()
        let thread = Mutex<pthread_t?>(nil)
        let result = Mutex<Data?>(nil)
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread {
            // Threads started from the test's threads inherit a mask that blocks most signals: let this one in.
            var usr2 = sigset_t()
            sigemptyset(&usr2)
            sigaddset(&usr2, SIGUSR2)
            pthread_sigmask(SIG_UNBLOCK, &usr2, nil)
            thread.withLock { $0 = pthread_self() }
            let data: Data =
                switch reader {
                case .nextChunk: handle.nextChunk()
                case .remainingData: handle.remainingData()
                case .nextByte: handle.nextByte().map { Data([$0]) } ?? Data()
                }
            result.withLock { $0 = data }
        }
        try await Self.waitUntil("the reader thread starts") { thread.withLock { $0 } != nil }
        let reading = try #require(thread.withLock { $0 })
        let before = interruptions.load(ordering: .relaxed)
        for _ in 0..<20 {
            try await Task.sleep(for: .milliseconds(10))
            try #require(result.withLock { $0 } == nil, "the reader returned before any data was written")
            #expect(pthread_kill(reading, SIGUSR2) == 0)
        }
        try await Self.waitUntil("20 signals are handled") { interruptions.load(ordering: .relaxed) >= before + 20 }
        // Restored only now that none is pending: SIGUSR2's default action ends the process. (A test that failed
        // before this leaves the counting handler installed, which is harmless.)
        sigaction(SIGUSR2, &previous, nil)
        #expect(result.withLock { $0 } == nil, "the reader waits for data through the interruptions")

        try pipe.fileHandleForWriting.write(contentsOf: Data("x".utf8))
        try pipe.fileHandleForWriting.close()
        try await Self.waitUntil("the reader returns") { result.withLock { $0 } != nil }
        #expect(result.withLock { $0 } == Data("x".utf8))
    }

    /// Polls `condition` every 5 ms; fails the test after 10 s.
    private static func waitUntil(_ what: Comment, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            try #require(ContinuousClock.now < deadline, "waited 10 s until \(what)")
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

// MARK: - Starting children with many descriptors open

/// Foundation's `Process.run()` lists /proc/self/fd with `readdir` and copies each entry's whole 256-byte name, past
/// the end of glibc's buffer when the entry is the buffer's last: the test process crashed in `Process.run()` now and
/// then. CMeridianProcessIO's `readdir` hands out whole records instead; this checks that it is the one this process
/// uses, and starts children with more descriptors open than one buffer of entries holds.
@Suite("Starting children", .serialized)
struct ProcessStartTests {
    @Test("readdir hands out whole records, and children start with thousands of descriptors open")
    func wholeRecords() throws {
        #expect(readdirHandsOutWholeRecords())
        #expect(readdirHandsOutWholeRecords(in: "/"))
        // 3,000 more entries in /proc/self/fd: 72 KiB of 24-byte records, more than glibc's 32 KiB buffer.
        let pipe = Pipe()
        let descriptors = (0..<3_000).map { _ in dup(pipe.fileHandleForReading.fileDescriptor) }
        defer { for descriptor in descriptors where descriptor >= 0 { close(descriptor) } }
        #expect(descriptors.allSatisfy { $0 >= 0 })
        #expect(readdirHandsOutWholeRecords())
        #expect(try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count > 3_000)
        for _ in 0..<20 {
            let child = Process()
            child.executableURL = URL(fileURLWithPath: "/bin/true")
            try child.run()
            child.waitUntilExit()
            #expect(child.terminationStatus == 0)
        }
    }
}
