// A stream that fails while its client reads nothing (its writer held in a write) still ends.

import Foundation
import GRPCCore
import MeridianCore
import MeridianProto
import MeridianServer
import MeridianStore
import MeridianTestSupport
import Testing

@Suite("A failed stream whose client reads nothing", .timeLimit(.minutes(2)))
struct StalledWriterTests {
    @Test("a bad request from a client that stopped reading ends its stream --query-timeout later, not never")
    func badRequestWhileStalled() async throws {
        var storeConfiguration = Store.Configuration()
        storeConfiguration.readTimeout = .seconds(1)
        let store = try Store.temporary(schema: Fixtures.demoSchema(), configuration: storeConfiguration)
        let padding = String(repeating: "x", count: 1_000)
        try await commit(
            store, (0..<2_000).map { WriteOperation.insert("Point", id: "p\($0)", Fixtures.point("\(padding)\($0)")) })
        try await withTestServer(store: store, configuration: Fixtures.configuration()) { server, port in
            try await withHTTP2Client(port: port, windowSize: 65_535) { client in
                try await withSyncStream(Meridian_V1_Meridian.Client(wrapping: client), capacity: 1) { stream in
                    // Chunks of 16 KiB: the transport's buffers hold a few dozen messages, not a few dozen MiB.
                    stream.hello(maxBatchBytes: 16 << 10, name: "stalled")
                    _ = try await stream.nextMessage()
                    #expect(server.status().streams.count == 1)
                    // From here on the client reads nothing: the snapshot's 2 MB fill its buffers and the windows,
                    // and the server's writer is held in a write.
                    stream.subscribe("all", Fixtures.fetch("Point"))
                    try await Task.sleep(for: .seconds(1))
                    // A second Hello is a bad request: the stream fails.
                    stream.hello(name: "again")
                    let start = ContinuousClock.now
                    while !server.status().streams.isEmpty, ContinuousClock.now - start < .seconds(20) {
                        try await Task.sleep(for: .milliseconds(50))
                    }
                    #expect(server.status().streams.isEmpty, "the failed stream is still open")
                }
            }
        }
    }
}
