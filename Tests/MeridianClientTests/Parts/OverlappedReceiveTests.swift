// MARK: - OverlappedReceive, alone
//
// The Sync stream hands a large snapshot chunk to the context in a child task while it reads the next message; the
// context must still see every event in the stream's order.

import MeridianCore
import Synchronization
import Testing

@testable import MeridianClient

@Suite("Overlapped receive")
struct OverlappedReceiveTests {
    /// A snapshot chunk large enough to be received in a child task.
    func chunk(_ index: UInt32, last: Bool = false) -> SyncEvent {
        let rows = (0..<OverlappedReceive.overlappedChunkRows).map {
            VersionedRow(row: point("p\($0)", "t", 1), version: 1)
        }
        return .snapshotChunk(
            SyncEvent.SnapshotChunk(
                subscriptionID: "s", epoch: 1, seq: 5, index: index, isLast: last, resnapshot: false, rows: rows))
    }

    func name(_ event: SyncEvent) -> String {
        switch event {
        case .snapshotChunk(let chunk): "chunk \(chunk.index)"
        case .heartbeat: "heartbeat"
        case .batch: "batch"
        default: "other"
        }
    }

    @Test("a large chunk is received while the caller goes on; every event still reaches the context in order")
    func order() async throws {
        let seen = Mutex<[String]>([])
        let events: [SyncEvent] = [
            self.chunk(0), self.chunk(1), .heartbeat(seq: 4), self.chunk(2, last: true),
            .batch(SyncEvent.Batch(seq: 5, deltas: [])),
        ]
        try await withThrowingTaskGroup(of: Void.self) { group in
            var receiving = OverlappedReceive { event in
                // The first chunk is slow to receive: the next one must wait for it.
                if case .snapshotChunk(let chunk) = event, chunk.index == 0 {
                    try await Task.sleep(for: .milliseconds(200))
                }
                seen.withLock { $0.append(self.name(event)) }
            }
            try await receiving.receive(events[0], in: &group)
            #expect(seen.withLock { $0 }.isEmpty, "the caller went on while the first chunk was received")
            for event in events.dropFirst() { try await receiving.receive(event, in: &group) }
            try await group.waitForAll()
        }
        #expect(seen.withLock { $0 } == ["chunk 0", "chunk 1", "heartbeat", "chunk 2", "batch"])
    }

    @Test("a chunk whose receive fails fails the stream before the next event is received")
    func failure() async throws {
        struct Refused: Error {}
        let seen = Mutex<[String]>([])
        await #expect(throws: Refused.self) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var receiving = OverlappedReceive { event in
                    if case .snapshotChunk = event { throw Refused() }
                    seen.withLock { $0.append(self.name(event)) }
                }
                try await receiving.receive(self.chunk(0), in: &group)
                try await receiving.receive(.heartbeat(seq: 1), in: &group)
                try await group.waitForAll()
            }
        }
        #expect(seen.withLock { $0 }.isEmpty, "an event was received after a chunk that failed")
    }
}
