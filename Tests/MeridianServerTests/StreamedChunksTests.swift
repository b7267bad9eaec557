// MARK: - A streamed snapshot's chunks, written from the store's cursor

import MeridianCore
import MeridianProto
import MeridianStore
import SwiftProtobuf
import Testing

@testable import MeridianServer

@Suite("Streamed snapshot chunks")
struct StreamedChunksTests {
    /// An entity with an attribute of every type, optional ones among them.
    static let schema = try! Schema(
        version: 1,
        entities: [
            EntitySchema(
                name: "Item",
                attributes: [
                    Attribute(name: "title", type: .string),
                    Attribute(name: "price", type: .double, isOptional: true),
                    Attribute(name: "qty", type: .int, defaultValue: .int(0)),
                    Attribute(name: "active", type: .bool, isOptional: true),
                    Attribute(name: "due", type: .timestamp, isOptional: true),
                    Attribute(name: "data", type: .bytes, isOptional: true),
                    Attribute(name: "note", type: .string, isOptional: true),
                ])
        ])

    /// Rows of every type and size: empty and long texts (past the one-byte length of a field), non-ASCII, nulls,
    /// numbers at their edges, long ids.
    static func store() async throws -> Store {
        let store = try Store.temporary(schema: Self.schema)
        var operations: [WriteOperation] = [
            .insert(
                "Item", id: "a",
                [
                    "title": "Café ☕️", "price": .double(-2.5), "qty": .int(Int64.min), "active": .bool(true),
                    "due": .timestamp(Timestamp(microseconds: 1_700_000_000_000_000)), "data": .bytes([0, 255, 7]),
                    "note": "",
                ]),
            .insert(
                "Item", id: "b", ["title": "", "qty": .int(Int64.max), "active": .bool(false), "data": .bytes([])]),
            .insert(
                "Item", id: String(repeating: "long-id-", count: 20),
                ["title": .string(String(repeating: "ü", count: 300)), "price": .double(.infinity)]),
        ]
        for i in 0..<40 {
            operations.append(
                .insert(
                    "Item", id: "r\(i)",
                    ["title": .string(String(repeating: "x", count: i * 7)), "qty": .int(Int64(i))]))
        }
        try await store.apply(operations)
        // Every row at version 2 or more but some: versions of one and several varint bytes.
        try await store.apply([.update("Item", id: "a", ["qty": .int(1)])])
        return store
    }

    /// The rows of a snapshot of `Item` as Core rows, in the order the snapshot reads them.
    static func coreRows(_ store: Store) async throws -> [(row: Row, version: Int64)] {
        let snapshot = try await store.snapshot(entity: "Item")
        return Array(zip(snapshot.rows, snapshot.versions))
    }

    /// What a streamed read's reader holds (touched by the store's reader thread only, as the hub's pieces are).
    private final class Pieces: @unchecked Sendable {
        var chunks: StreamedChunks
        var messages: [[UInt8]] = []
        init(_ chunks: StreamedChunks) { self.chunks = chunks }
    }

    /// The chunks `StreamedChunks` writes for a snapshot of `Item`, as a server's streamed read makes them.
    static func streamedChunks(_ store: Store, maxBytes: Int) async throws -> [[UInt8]] {
        try await Self.messages(
            store, StreamedChunks(subscriptionID: "sub ü", epoch: 3, resnapshot: true, maxBytes: maxBytes))
    }

    /// The `QueryResponse`s `StreamedChunks` writes for a query of every `Item`, as the server's streamed query does.
    static func queryChunks(_ store: Store, maxBytes: Int) async throws -> [[UInt8]] {
        try await Self.messages(store, StreamedChunks(.query, maxBytes: maxBytes))
    }

    /// The messages `chunks` writes for every `Item`, read from the store's cursor.
    static func messages(_ store: Store, _ chunks: StreamedChunks) async throws -> [[UInt8]] {
        let pieces = Pieces(chunks)
        _ = try await store.streamSnapshotColumns(entity: "Item") { seq, row in
            if let row {
                if let message = pieces.chunks.append(row, seq: seq) { pieces.messages.append(message) }
            } else {
                pieces.messages.append(pieces.chunks.finish(seq: seq))
            }
            return true
        }
        return pieces.messages
    }

    @Test("a chunk written from the cursor is the chunk written from the same rows read as Core rows, byte for byte")
    func sameBytes() async throws {
        let store = try await Self.store()
        let rows = try await Self.coreRows(store)
        let seq = try await store.latestSeq()
        // One chunk of every row, then chunks of a few hundred bytes.
        for maxBytes in [1 << 20, 400] {
            let messages = try await Self.streamedChunks(store, maxBytes: maxBytes)
            var next = 0
            for (index, message) in messages.enumerated() {
                let response = try Meridian_V1_SyncResponse(serializedBytes: message)
                let count = response.snapshotChunk.rows.count
                let expected = DeltaWireEncoding.snapshotChunkResponse(
                    subscriptionID: "sub ü", seq: seq, rowCount: count, last: index == messages.count - 1,
                    resnapshot: true, chunkIndex: UInt32(index), epoch: 3, row: { rows[next + $0] })
                #expect(message == expected, "chunk \(index) of \(messages.count), \(maxBytes) bytes at most")
                next += count
            }
            #expect(next == rows.count)
            #expect(maxBytes == 400 ? messages.count > 5 : messages.count == 1)
        }
    }

    @Test("a chunk of several rows stays within the largest message; a larger row goes alone; none is lost")
    func cutToSize() async throws {
        let store = try await Self.store()
        let rows = try await Self.coreRows(store)
        for maxBytes in [0, 100, 300, 1_000, 4_096] {
            let messages = try await Self.streamedChunks(store, maxBytes: maxBytes)
            let room = maxBytes - DeltaWireEncoding.snapshotChunkFraming(subscriptionID: "sub ü")
            var ids: [String] = []
            for (index, message) in messages.enumerated() {
                let chunk = try Meridian_V1_SyncResponse(serializedBytes: message).snapshotChunk
                #expect(chunk.chunkIndex == UInt32(index))
                #expect(chunk.last == (index == messages.count - 1))
                #expect(chunk.epoch == 3 && chunk.resnapshot && chunk.subscriptionID == "sub ü")
                #expect(
                    message.count <= maxBytes || chunk.rows.count == 1,
                    "chunk \(index): \(message.count) bytes, \(chunk.rows.count) rows, at most \(maxBytes)")
                ids += chunk.rows.map(\.id)
                // Full: its rows fit the message's room, and the next chunk's first row did not.
                let rowBytes = try chunk.rows.reduce(0) { $0 + (try Self.fieldSize($1)) }
                #expect(rowBytes <= room || chunk.rows.count == 1)
                if index + 1 < messages.count {
                    let next = try Meridian_V1_SyncResponse(serializedBytes: messages[index + 1]).snapshotChunk.rows[0]
                    #expect(rowBytes + (try Self.fieldSize(next)) > room, "chunk \(index) was cut early")
                }
            }
            #expect(ids == rows.map(\.row.id), "\(maxBytes) bytes")
        }
    }

    /// The bytes of `row` as a chunk's row field.
    static func fieldSize(_ row: Meridian_V1_Row) throws -> Int {
        let length = (try row.serializedBytes() as [UInt8]).count
        return 1 + (length < 0x80 ? 1 : length < 0x4000 ? 2 : 3) + length
    }

    @Test("a query's chunks written from the cursor decode to the rows' messages; cut to size; none lost")
    func queryChunks() async throws {
        let store = try await Self.store()
        let rows = try await Self.coreRows(store)
        let seq = try await store.latestSeq()
        for maxBytes in [1 << 20, 400, 100, 0] {
            let messages = try await Self.queryChunks(store, maxBytes: maxBytes)
            var next = 0
            for (index, message) in messages.enumerated() {
                let response = try Meridian_V1_QueryResponse(serializedBytes: message)
                let count = response.rows.count
                var expected = Meridian_V1_QueryResponse()
                expected.seq = seq
                expected.rows = rows[next..<(next + count)].map { Meridian_V1_Row($0.row, version: $0.version) }
                expected.last = index == messages.count - 1
                // swift-protobuf writes a map's entries in its dictionary's order: the messages are compared.
                #expect(response == expected, "chunk \(index), \(maxBytes) bytes at most")
                #expect(
                    message
                        == DeltaWireEncoding.queryResponse(seq: seq, rowCount: count, last: expected.last) {
                            rows[next + $0]
                        })
                #expect(message.count <= maxBytes || count == 1, "chunk \(index): \(message.count) bytes")
                next += count
            }
            #expect(next == rows.count)
            #expect(maxBytes == 1 << 20 ? messages.count == 1 : messages.count > 5)
        }
        // No rows: one last chunk without rows.
        let empty = try await Self.queryChunks(try Store.temporary(schema: Self.schema), maxBytes: 1 << 20)
        #expect(empty.count == 1)
        #expect(try Meridian_V1_QueryResponse(serializedBytes: empty[0]) == .with { $0.last = true })
    }

    @Test("a snapshot without rows is one last chunk without rows")
    func empty() async throws {
        let store = try Store.temporary(schema: Self.schema)
        let messages = try await Self.streamedChunks(store, maxBytes: 1 << 20)
        #expect(messages.count == 1)
        let chunk = try Meridian_V1_SyncResponse(serializedBytes: messages[0]).snapshotChunk
        #expect(chunk.rows.isEmpty && chunk.last && chunk.chunkIndex == 0)
    }
}
