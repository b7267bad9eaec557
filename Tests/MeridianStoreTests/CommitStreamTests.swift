import Foundation
import MeridianCore
import MeridianStore
import Synchronization
import Testing

@Suite struct CommitStreamTests {
    @Test(
        "commits() yields the latest seq now and after each of the store's own commits", .timeLimit(.minutes(5)),
        arguments: StoreVariant.allCases)
    func ownCommits(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            try await store.apply([.insert("Tag", id: "a", ["name": "x"])])
            var iterator = store.commits().makeAsyncIterator()
            #expect(await iterator.next() == 1)
            try await store.apply([.insert("Tag", id: "b", ["name": "x"])])
            #expect(await iterator.next() == 2)
            try await store.apply([.update("Tag", id: "b", ["name": "y"]), .delete("Tag", id: "a")])
            #expect(await iterator.next() == 4)
        }
    }

    @Test(
        "the commit observer sees each of the store's own commits, before commits() offers it",
        .timeLimit(.minutes(5)), arguments: StoreVariant.allCases)
    func observer(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            let observed = Mutex<[Int64]>([])
            store.observeCommits { seq in observed.withLock { $0.append(seq) } }
            var iterator = store.commits().makeAsyncIterator()
            #expect(await iterator.next() == 0)
            var committed: [Int64] = []
            for name in ["a", "b", "c"] {
                committed.append(try await store.apply([.insert("Tag", id: name, ["name": "x"])]).seq)
                let offered = await iterator.next()
                #expect(offered == committed.last)
                #expect(observed.withLock { $0.last } == offered)
            }
            #expect(observed.withLock { $0 } == committed)
        }
    }

    /// The observer was a `Mutex`'s value and every commit's `withLock` wrapped it in two more reabstraction thunks:
    /// after n commits, a call ran 2n frames deep (and a long enough run would overflow the committing thread's stack).
    @Test(
        "the commit observer runs as deep in the stack after 300 commits as after the first", .timeLimit(.minutes(5)),
        arguments: StoreVariant.allCases)
    func observerDoesNotDeepen(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            let depths = Mutex<[Int]>([])
            store.observeCommits { _ in
                let depth = Thread.callStackReturnAddresses.count
                depths.withLock { $0.append(depth) }
            }
            for i in 0..<300 { try await store.apply([.insert("Tag", id: "t\(i)", ["name": "x"])]) }
            // A commit is answered before its observer runs: wait for the last one.
            let deadline = ContinuousClock.now + .seconds(60)
            while depths.withLock({ $0.count }) < 300, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(1))
            }
            let seen = depths.withLock { $0 }
            #expect(seen.count == 300)
            #expect(seen.first == seen.last, "the observer's stack depth grew: \(seen.first ?? 0) → \(seen.last ?? 0)")
        }
    }

    @Test(
        "a follower is offered each lone commit on the committing thread; what it handles is not yielded, the rest is",
        .timeLimit(.minutes(5)), arguments: StoreVariant.allCases)
    func follower(variant: StoreVariant) async throws {
        try await withStore(variant) { store in
            let offered = Mutex<[Int64]>([])
            let handles = Atomic<Bool>(true)
            let observed = Mutex<[Int64]>([])
            store.observeCommits { seq in observed.withLock { $0.append(seq) } }
            // A long poll: the poller offers the latest seq once at the start, and not again during the test.
            let observedFirst = Mutex(true)
            let commits = store.commits(pollInterval: .seconds(600)) { seq, _ in
                // After the observer: the commit is durable and observed before its follower runs.
                if observed.withLock({ $0.last }) != seq { observedFirst.withLock { $0 = false } }
                offered.withLock { $0.append(seq) }
                return handles.load(ordering: .relaxed)
            }
            // Every element, as it comes (a reader that lags could see two of them coalesced into the newest).
            let yielded = Mutex<[Int64]>([])
            let reader = Task { for await seq in commits { yielded.withLock { $0.append(seq) } } }
            defer { reader.cancel() }
            // Each wait has a minute of its own (they shared one, which a loaded full run used up), and says so
            // when it runs out rather than leaving the expectations after it to fail.
            func wait(for what: String, until done: () -> Bool) async throws {
                let deadline = ContinuousClock.now + .seconds(60)
                while !done(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
                if !done() { Issue.record("waited a minute in vain for \(what)") }
            }
            try await wait(for: "the first seq") { yielded.withLock { $0 } == [0] }
            // Handled: offered, never yielded. The answer may come before the follower ran: wait for it.
            let a = try await store.apply([.insert("Tag", id: "a", ["name": "x"])]).seq
            try await wait(for: "a to be offered") { offered.withLock { $0 } == [a] }
            #expect(offered.withLock { $0 } == [a])
            // Declined: offered, then yielded — and the handled one before it was not.
            handles.store(false, ordering: .relaxed)
            let b = try await store.apply([.insert("Tag", id: "b", ["name": "x"])]).seq
            try await wait(for: "b to be yielded") { yielded.withLock { $0.last } == b }
            #expect(yielded.withLock { $0 } == [0, b])
            #expect(offered.withLock { $0 } == [a, b])
            // Handled again: nothing is yielded for it (a reader would have had it within the pause).
            handles.store(true, ordering: .relaxed)
            let c = try await store.apply([.insert("Tag", id: "c", ["name": "x"])]).seq
            try await wait(for: "c to be offered") { offered.withLock { $0 }.count == 3 }
            try await Task.sleep(for: .milliseconds(100))
            #expect(yielded.withLock { $0 } == [0, b])
            handles.store(false, ordering: .relaxed)
            let d = try await store.apply([.insert("Tag", id: "d", ["name": "x"])]).seq
            try await wait(for: "d to be yielded") { yielded.withLock { $0.last } == d }
            #expect(yielded.withLock { $0 } == [0, b, d])
            #expect(offered.withLock { $0 } == [a, b, c, d])
            #expect(observedFirst.withLock { $0 })
        }
    }

    @Test("commits() sees commits by another process (the sqlite3 shell) through polling", .timeLimit(.minutes(5)))
    func externalCommits() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        var iterator = store.commits(pollInterval: .milliseconds(2)).makeAsyncIterator()
        #expect(await iterator.next() == 0)
        try ChildProcess.sqlite3(directory.storePath, "INSERT INTO Tag (id, name) VALUES ('ext', 'shell');")
        #expect(await iterator.next() == 1)
        try ChildProcess.sqlite3(directory.storePath, "UPDATE Tag SET name = 'again'; DELETE FROM Tag;")
        var seq = await iterator.next()
        while let s = seq, s < 3 { seq = await iterator.next() }
        #expect(seq == 3)
        try store.close()
    }

    @Test(
        "while nothing writes the store's files, its poller waits for a write instead of polling; a write wakes it",
        .timeLimit(.minutes(5)))
    func idlePollerWaits() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        defer { try? store.close() }
        // Every 2 ms while the files are written, and at the least once a minute while they are not: long past this
        // test's waits, so that only a write can wake the poller in time.
        var iterator = store.commits(pollInterval: .milliseconds(2), idlePoll: .seconds(60), follower: nil)
            .makeAsyncIterator()
        #expect(await iterator.next() == 0)
        // Past the poller's first window of polls (a second), with nothing written since.
        try await Task.sleep(for: .milliseconds(1_500))
        let before = store.commitPolls
        try await Task.sleep(for: .milliseconds(500))
        let idle = store.commitPolls - before
        #expect(idle <= 1, "\(idle) polls in 500 ms while nothing was written (every 2 ms would be ~250)")
        // Another process's commit wakes it, long before the minute.
        let start = ContinuousClock.now
        try ChildProcess.sqlite3(directory.storePath, "INSERT INTO Tag (id, name) VALUES ('ext', 'shell');")
        #expect(await iterator.next() == 1)
        #expect(start.duration(to: .now) < .seconds(30), "the commit was seen only by the idle poll")
        // And the next one, while the poller still polls after the last write.
        try ChildProcess.sqlite3(directory.storePath, "UPDATE Tag SET name = 'again';")
        #expect(await iterator.next() == 2)
    }

    @Test("ending the iteration stops the subscription; closing the store ends the others", .timeLimit(.minutes(5)))
    func termination() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        let task = Task {
            var count = 0
            for await _ in store.commits(pollInterval: .milliseconds(1)) { count += 1 }
            return count
        }
        let watcher = store.commits()
        var iterator = watcher.makeAsyncIterator()
        #expect(await iterator.next() == 0)
        task.cancel()
        _ = await task.value
        try store.close()
        #expect(await iterator.next() == nil)
    }

    @Test("a subscription's poller thread ends when the iteration ends or the store closes", .timeLimit(.minutes(5)))
    func pollerThreadsEnd() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store.open(path: directory.storePath, schema: Fixtures.schema())
        let task = Task {
            for await _ in store.commits(pollInterval: .seconds(30)) {}
        }
        var iterator = store.commits(pollInterval: .seconds(30)).makeAsyncIterator()
        #expect(await iterator.next() == 0)
        try await Self.waitFor(store, pollers: 2)
        #expect(store.runningCommitPollers == 2)
        // A poller sleeping its 30 s wakes when stopped: its thread ends at once, not after the interval.
        task.cancel()
        await task.value
        try await Self.waitFor(store, pollers: 1)
        #expect(store.runningCommitPollers == 1)
        try store.close()
        #expect(await iterator.next() == nil)
        try await Self.waitFor(store, pollers: 0)
        #expect(store.runningCommitPollers == 0)
    }

    /// Waits (at most 10 s, far less than the pollers' 30 s interval) until `pollers` poller threads run.
    static func waitFor(_ store: Store, pollers: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while store.runningCommitPollers != pollers, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}
