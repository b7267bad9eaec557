// MARK: - A Query's chunks as the client library reads them

import GRPCCore
import GRPCNIOTransportHTTP2
import MeridianClient
import MeridianCore
import MeridianProto
import MeridianTestSupport
import SwiftProtobuf
import Synchronization
import Testing

/// `MeridianConnection.query` reads a chunk's rows straight into Core rows; a chunk it does not take (an unknown
/// field, a value no Core row holds) goes through swift-protobuf and the conversion, which says what is wrong. A
/// server that answers `Query` with canned bytes puts both paths under test, and one that stops answering puts the
/// query's patience (``MeridianConnection/callTimeout`` for each part of the answer) under test.
@Suite("Query chunks read by the client", .timeLimit(.minutes(2)))
struct QueryChunkTests {
    /// Answers every `Query` with `chunks`, as they are, then (with `stall`) sends nothing more until cancelled.
    struct CannedQueryServer: RegistrableRPCService {
        let chunks: [[UInt8]]
        let stall: Bool

        func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
            let (chunks, stall) = (self.chunks, self.stall)
            router.registerHandler(
                forMethod: Meridian_V1_Meridian.Method.Query.descriptor, deserializer: RawMessageBytes(),
                serializer: RawMessageBytes(),
                handler: { request, _ in
                    for try await _ in request.messages {}
                    return StreamingServerResponse { writer in
                        for chunk in chunks { try await writer.write(chunk) }
                        if stall { try await Task.sleep(for: .seconds(3_600)) }
                        return [:]
                    }
                })
        }

        /// Runs the server on 127.0.0.1 (a port the OS picks) for the duration of `body`, then shuts it down
        /// gracefully, cancelling it after 5 seconds (`withRunning`).
        static func run<Result: Sendable>(
            _ chunks: [[UInt8]], stall: Bool = false, _ body: (ServerAddress) async throws -> Result
        ) async throws -> Result {
            let transport = HTTP2ServerTransport.Posix(
                address: .ipv4(host: "127.0.0.1", port: 0), transportSecurity: .plaintext)
            let server = GRPCServer(transport: transport, services: [CannedQueryServer(chunks: chunks, stall: stall)])
            @Sendable func serve() async throws { try await server.serve() }
            return try await withRunning(serve, shutdown: server.beginGracefulShutdown) {
                let port = try #require(try await transport.listeningAddress.ipv4?.port)
                return try await body(try ServerAddress(parsing: "127.0.0.1:\(port)"))
            }
        }
    }

    static func row(_ id: String, _ values: [String: Meridian_V1_Value]) -> Meridian_V1_Row {
        var row = Meridian_V1_Row()
        row.id = id
        row.version = 1
        row.values = values
        return row
    }

    @Test("plain chunks and a chunk with an unknown field give the same rows, in order, at the chunks' seq")
    func bothPaths() async throws {
        var first = Meridian_V1_QueryResponse()
        first.seq = 7
        first.rows = [Self.row("a", ["title": .with { $0.stringValue = "A" }])]
        var second = Meridian_V1_QueryResponse()
        second.seq = 7
        second.rows = [Self.row("b", ["n": .with { $0.intValue = 2 }]), Self.row("c", [:])]
        second.last = true
        // Field 9 of QueryResponse is unknown to this client: swift-protobuf skips it, the hand reader leaves the
        // chunk to it.
        let chunks: [[UInt8]] = [try first.serializedBytes(), try second.serializedBytes() + [0x48, 0x01]]
        guard case .rows = try QueryChunkDeserializer().deserialize(chunks[0]),
            case .message = try QueryChunkDeserializer().deserialize(chunks[1])
        else {
            Issue.record("the chunks do not take the two paths")
            return
        }
        try await CannedQueryServer.run(chunks) { address in
            try await MeridianConnection.with(address) { connection in
                let (seq, rows) = try await connection.query(FetchRequest(entity: "Item"))
                #expect(seq == 7)
                #expect(rows == [Row(id: "a", values: ["title": "A"]), Row(id: "b", values: ["n": 2]), Row(id: "c")])
            }
        }
    }

    @Test("a row no Core row can hold (a NaN) fails the query with the conversion's reason")
    func invalidRow() async throws {
        var chunk = Meridian_V1_QueryResponse()
        chunk.seq = 3
        chunk.rows = [Self.row("bad", ["x": .with { $0.doubleValue = .nan }])]
        chunk.last = true
        try await CannedQueryServer.run([try chunk.serializedBytes()]) { address in
            try await MeridianConnection.with(address) { connection in
                let error = await #expect(throws: ClientError.self) {
                    try await connection.query(FetchRequest(entity: "Item"))
                }
                #expect(error?.code == .internal)
                #expect(
                    error?.message.hasPrefix("the server sent an invalid row") == true, "\(String(describing: error))")
            }
        }
    }

    static func chunk(seq: Int64, _ rows: [Meridian_V1_Row], last: Bool) throws -> [UInt8] {
        var chunk = Meridian_V1_QueryResponse()
        chunk.seq = seq
        chunk.rows = rows
        chunk.last = last
        return try chunk.serializedBytes()
    }

    @Test("a server that takes the query and sends nothing, or stops halfway: unavailable after callTimeout")
    func silentServer() async throws {
        let first = try Self.chunk(seq: 4, [Self.row("a", [:])], last: false)
        for chunks in [[], [first]] {
            try await CannedQueryServer.run(chunks, stall: true) { address in
                try await MeridianConnection.with(address, callTimeout: .seconds(2)) { connection in
                    let start = ContinuousClock.now
                    let error = await #expect(throws: ClientError.self) {
                        try await connection.query(FetchRequest(entity: "Item"))
                    }
                    #expect(error?.code == .unavailable)
                    #expect(error?.message == "the server sent no part of the query's answer for 2 s")
                    #expect(ContinuousClock.now - start < .seconds(20))
                    // The streaming form too, after the part it was handed.
                    let handed = Mutex(0)
                    let streamed = await #expect(throws: ClientError.self) {
                        try await connection.query(FetchRequest(entity: "Item")) { rows in
                            handed.withLock { $0 += rows.count }
                        }
                    }
                    #expect(streamed?.code == .unavailable)
                    #expect(handed.withLock { $0 } == chunks.count)
                }
            }
        }
    }

    @Test("an answer that ends without its last part is not taken for the whole answer")
    func endsEarly() async throws {
        let first = try Self.chunk(seq: 4, [Self.row("a", [:])], last: false)
        try await CannedQueryServer.run([first]) { address in
            try await MeridianConnection.with(address) { connection in
                let error = await #expect(throws: ClientError.self) {
                    try await connection.query(FetchRequest(entity: "Item"))
                }
                #expect(error?.code == .internal)
                #expect(error?.message == "the server ended the query's answer before its last part")
            }
        }
    }

    @Test("the time the caller takes with a part is not the server's: a slow body outlasts callTimeout")
    func slowCaller() async throws {
        let chunks = [
            try Self.chunk(seq: 9, [Self.row("a", [:])], last: false),
            try Self.chunk(seq: 9, [Self.row("b", [:])], last: true),
        ]
        try await CannedQueryServer.run(chunks) { address in
            try await MeridianConnection.with(address, callTimeout: .seconds(2)) { connection in
                let ids = Mutex<[String]>([])
                let seq = try await connection.query(FetchRequest(entity: "Item")) { rows in
                    if rows.first?.id == "a" { try await Task.sleep(for: .seconds(5)) }
                    ids.withLock { $0 += rows.map(\.id) }
                }
                #expect(seq == 9)
                #expect(ids.withLock { $0 } == ["a", "b"])
            }
        }
    }
}
