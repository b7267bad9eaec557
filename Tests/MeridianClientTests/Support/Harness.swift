// MARK: - Harness
//
// A container whose "connection" is the test: outgoing Sync messages are collected from the context's outbound
// stream and answered by a FakeServer, and the answers are fed to the context with `receive`, in order — exactly
// what the real connection does, minus the sockets.

import Foundation
import MeridianClient
import MeridianCore
import MeridianProto
import Testing

/// The schema every client test uses.
let testSchema: Schema = {
    let yaml = """
        version: 1
        entities:
          Point:
            attributes:
              title: { type: string, default: "" }
              category: { type: int, default: 0 }
              latitude: double?
              longitude: double?
              note: string?
            derived:
              coordinate: { coordinate: [latitude, longitude] }
        """
    return try! Schema.parse(yaml: yaml)
}()

/// A typed model of the test entity.
struct Point: MeridianModel, Hashable {
    static let entityName = "Point"
    var id: String
    var title: String
    var category: Int
    var latitude: Double?
    var longitude: Double?
    var note: String?

    enum Attr {
        static let title = AttributeRef<Point, String>("title")
        static let category = AttributeRef<Point, Int>("category")
        static let latitude = AttributeRef<Point, Double?>("latitude")
        static let note = AttributeRef<Point, String?>("note")
    }
}

/// A row of the test entity.
func point(
    _ id: String, _ title: String, _ category: Int64, lat: Double? = nil, lon: Double? = nil, note: String? = nil
) -> Row {
    var values: [String: Value] = ["title": .string(title), "category": .int(category)]
    if let lat { values["latitude"] = .double(lat) }
    if let lon { values["longitude"] = .double(lon) }
    if let note { values["note"] = .string(note) }
    return Row(id: id, values: values)
}

/// A unique temporary directory for cache files.
func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "meridian-client-tests-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// A container connected to a FakeServer through the test.
final class Harness {
    let container: MeridianContainer
    let server: FakeServer
    private var continuation: AsyncStream<Meridian_V1_SyncRequest>.Continuation?
    private var iterator: AsyncStream<Meridian_V1_SyncRequest>.Iterator?

    var context: CacheContext { self.container.context }

    init(server: FakeServer? = nil, cachePath: String? = nil, validatesChangeSets: Bool = true) async throws {
        var configuration = try MeridianContainer.Configuration(
            server: "127.0.0.1:1", cache: cachePath.map { .file($0) } ?? .inMemory, schema: testSchema)
        configuration.validatesChangeSets = validatesChangeSets
        self.container = try await MeridianContainer(configuration)
        self.server = server ?? FakeServer(schema: testSchema)
    }

    /// Opens a "stream": Hello and the subscriptions go to the server, and its answers come back.
    func connect() async throws {
        let (stream, continuation) = AsyncStream<Meridian_V1_SyncRequest>.makeStream()
        self.continuation = continuation
        self.iterator = stream.makeAsyncIterator()
        await self.context.connectionOpened(outbound: continuation)
        try await self.pump()
    }

    /// Loses the stream.
    func disconnect() async {
        await self.context.connectionClosed()
        self.continuation = nil
        self.iterator = nil
    }

    /// Answers every message the context has sent, until it sends nothing more.
    func pump() async throws {
        guard let continuation else { return }
        while true {
            continuation.yield(Meridian_V1_SyncRequest())  // marker: no case set
            var answers: [Meridian_V1_SyncResponse] = []
            var sawMessage = false
            while let message = await self.iterator?.next() {
                if message.kind == nil { break }
                if case .ack = message.kind {} else { sawMessage = true }
                answers += try self.server.handle(message)
            }
            for answer in answers { try await self.context.receive(answer) }
            if !sawMessage && answers.isEmpty { return }
        }
    }

    /// Waits for the context's next message other than an Ack, answers it, and feeds the answers back.
    func pumpNext() async throws {
        while let message = await self.iterator?.next() {
            if case .ack = message.kind { continue }
            for answer in try self.server.handle(message) { try await self.context.receive(answer) }
            return
        }
    }

    /// Waits for the context's next message other than an Ack and answers it on the server, but returns the answers
    /// instead of feeding them back: messages still on their way, to deliver later.
    func answerNextInFlight() async throws -> [Meridian_V1_SyncResponse] {
        while let message = await self.iterator?.next() {
            if case .ack = message.kind { continue }
            return try self.server.handle(message)
        }
        return []
    }

    /// Feeds one server message to the context, then answers what it sent.
    func deliver(_ response: Meridian_V1_SyncResponse?) async throws {
        guard let response else { return }
        try await self.context.receive(response)
        try await self.pump()
    }

    /// Commits on the server and delivers the batch.
    func commit(_ mutations: [RowMutation], entity: String = "Point") async throws {
        // A commit that touches no subscription is followed, on a real server, by a heartbeat at its seq.
        try await self.deliver(self.server.commit(entity, mutations) ?? self.server.heartbeat())
    }

    /// Sends the context's next queued transaction to the server; returns the batch (not yet delivered).
    func sendNextTransaction() async throws -> (
        id: Int64, response: Meridian_V1_ApplyResponse, batch: Meridian_V1_SyncResponse?
    )? {
        guard let (id, request) = await self.context.nextTransactionToSend() else { return nil }
        let (response, batch) = self.server.apply(request)
        return (id, response, batch)
    }
}

/// Collects a controller's changes as they are delivered.
final class ChangeLog<Element: RowConvertible>: @unchecked Sendable {
    // Only touched by the one task that iterates (the test's), never concurrently.
    private var iterator: ResultsChanges<Element>.Iterator
    private(set) var list: ListModel<Element>

    init(_ controller: ResultsController<Element>) {
        self.iterator = controller.changes(includingInitial: true).makeAsyncIterator()
        self.list = ListModel(for: controller)
    }

    /// Applies every remaining change until the stream ends (the controller was closed).
    func drain() async throws {
        while let change = try await self.iterator.next() { try self.list.apply(change) }
    }

    /// The next change, applied to the list model (which validates it).
    func next() async throws -> ResultsChange<Element> {
        let change = try #require(try await self.iterator.next())
        try self.list.apply(change)
        return change
    }
}
