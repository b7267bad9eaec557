// MARK: - The README's client example, run against a real server

import Foundation
import MeridianClient
import MeridianCore
import MeridianServer
import MeridianStore
import MeridianTestSupport
import Testing

// README client example begins
/// A place of the demo schema's `Point` entity, as the app's own `Codable` type.
struct Place: MeridianModel {
    static let entityName = "Point"
    var id: String
    var title: String
    var category: Int
    var latitude: Double?
    var longitude: Double?

    /// Attribute names, written once: predicates and sort keys never spell them.
    enum Attr {
        static let title = AttributeRef<Place, String>("title")
        static let category = AttributeRef<Place, Int>("category")
    }
}

/// Lists places by category, puts those near the Chiado on a map, and adds one.
func showPlaces(server: String, cachePath: String) async throws {
    // 1. The stack: a server and a cache file (instant restarts, a persisted offline write queue). Its connection
    //    runs — connecting, resuming, reconnecting with backoff — until the body returns.
    try await withMeridianContainer(.init(server: server, cache: .file(cachePath))) { container in
        // 2. A live query with sections: the first three categories, by category then title.
        let places = try await container.controller(
            for: FetchRequest(
                Place.self, where: Place.Attr.category < 3,
                sortedBy: [.ascending(Place.Attr.category), .ascending(Place.Attr.title)],
                sectionedBy: Place.Attr.category),
            as: Place.self)
        try await places.waitUntilLoaded()
        print(places.sections.map { "\($0.name): \($0.count)" }, places.objects.first?.title ?? "-")

        // 3. A list model: changed only by the controller's change sets, each checked the way a table view checks its
        //    batch updates (UIKit: hand each change set to the table view in the same step). It is @Observable, so
        //    SwiftUI redraws from it too (`PlacesView`, below).
        let list = ListModel(for: places)
        var changes = places.changes().makeAsyncIterator()
        try list.apply(try await changes.next()!)  // the current state, as inserts

        // 4. A map of the Chiado: annotations placed by latitude and longitude, titled by title.
        let map = try await container.mapController(
            for: FetchRequest(Place.self),
            configuration: MapConfiguration(latitude: "latitude", longitude: "longitude", title: "title"),
            region: MapRegion(south: 38.705, west: -9.150, north: 38.715, east: -9.135))
        var mapUpdates = map.updates().makeAsyncIterator()
        _ = try await mapUpdates.next()  // the annotations in the region now, as adds

        // 5. A write: the context is a transaction; every controller shows it at once, marked pending.
        try await container.context.insert(
            Place(id: "aurora", title: "Café Aurora", category: 0, latitude: 38.7139, longitude: -9.1394))
        let transaction = await container.context.save()
        let change = try await changes.next()!
        try list.apply(change)  // checked the way a table view checks its batch updates
        print(change.changeSet.rowChanges.map(\.operation), places.isPending("aurora"))  // ["insert"] true
        print(places.indexPath(for: "aurora")!, list[places.indexPath(for: "aurora")!].title)

        let event = try await mapUpdates.next()!.events[0]
        print(event.kind, event.id, event.annotation!.coordinate)  // add aurora …

        // Confirmed once the server committed it and this client applied that commit (or reverted, with the
        // server's typed error, e.g. a conflict naming the attributes).
        let seq = try await transaction.confirmed()
        print("committed at", seq, places.isPending("aurora"))  // committed at … false
    }
}

#if canImport(SwiftUI)
    import SwiftUI

    /// The same list in SwiftUI: the list model is the view's state, fed by the controller while the view is shown;
    /// the view redraws once per commit that changes it, and never for one that does not.
    struct PlacesView: View {
        let places: ResultsController<Place>
        @State private var list: ListModel<Place>

        init(places: ResultsController<Place>) {
            self.places = places
            self._list = State(initialValue: ListModel(for: places))
        }

        var body: some View {
            List {
                ForEach(self.list.sections, id: \.key) { section in
                    Section(section.name) {
                        ForEach(section.elements) { place in Text(place.title) }
                    }
                }
            }
            .task { @MainActor in try? await self.list.follow(self.places) }
        }
    }
#endif
// README client example ends

@Suite("The README's examples", .timeLimit(.minutes(3)))
struct ReadmeExampleTests {
    /// The repository's root (this file is Tests/MeridianClientTests/ReadmeExampleTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("the client example runs as written against a server with the demo schema; a restart shows its write at once")
    func clientExample() async throws {
        let schema = try Schema.load(contentsOf: Self.root.appendingPathComponent("Schemas/demo.yaml").path)
        let store = try Store.temporary(schema: schema)
        defer { try? store.close() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cachePath = directory + "/places.sqlite"
        try await withTestServer(store: store) { _, port in
            try await showPlaces(server: "127.0.0.1:\(port)", cachePath: cachePath)
        }
        let rows = try await store.snapshot(try FetchRequest(entity: "Point").bind(to: schema)).rows
        #expect(rows.map(\.id) == ["aurora"])
        // Offline now (the server is gone): the cache file shows the confirmed write at once.
        var configuration = try MeridianContainer.Configuration(server: "127.0.0.1:1", cache: .file(cachePath))
        configuration.validatesChangeSets = true
        let container = try await MeridianContainer(configuration)
        let request = FetchRequest(
            Place.self, where: Place.Attr.category < 3,
            sortedBy: [.ascending(Place.Attr.category), .ascending(Place.Attr.title)], sectionedBy: Place.Attr.category)
        let places = try await container.controller(for: request, as: Place.self)
        #expect(places.isLoaded)
        #expect(places.objects.map(\.title) == ["Café Aurora"])
        #expect(places.pendingIDs.isEmpty)
    }

    @Test("README.md shows exactly the examples the tests run")
    func readmeMatchesTests() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let examples: [(marker: String, file: String, begin: String, end: String)] = [
            (
                "<!-- example: Tests/MeridianStoreTests/ReadmeExampleTests.swift -->",
                "Tests/MeridianStoreTests/ReadmeExampleTests.swift", "// README example begins",
                "// README example ends"
            ),
            (
                "<!-- example: Tests/MeridianClientTests/ReadmeExampleTests.swift -->",
                "Tests/MeridianClientTests/ReadmeExampleTests.swift", "// README client example begins",
                "// README client example ends"
            ),
        ]
        for example in examples {
            let block = try #require(
                Self.codeBlock(after: example.marker, in: readme), "no block after \(example.marker)")
            let source = try String(contentsOf: Self.root.appendingPathComponent(example.file), encoding: .utf8)
            let region = try #require(Self.region(of: source, from: example.begin, to: example.end))
            #expect(
                Self.dedented(block.filter { !$0.hasPrefix("import ") }) == Self.dedented(region), "\(example.file)")
        }
    }

    /// The lines of the first fenced block after `marker`, without its fences and blank leading/trailing lines.
    static func codeBlock(after marker: String, in text: String) -> [String]? {
        guard let start = text.range(of: marker) else { return nil }
        let lines = text[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let open = lines.firstIndex(where: { $0.hasPrefix("```") }),
            let close = lines[(open + 1)...].firstIndex(where: { $0.hasPrefix("```") })
        else { return nil }
        return Array(lines[(open + 1)..<close])
    }

    /// The lines strictly between the `begin` and `end` marker lines.
    static func region(of text: String, from begin: String, to end: String) -> [String]? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let b = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == begin }),
            let e = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == end }), b < e
        else { return nil }
        return Array(lines[(b + 1)..<e])
    }

    /// Lines without their common indentation and without blank lines at either end.
    static func dedented(_ lines: [String]) -> [String] {
        var lines = lines
        while lines.first?.trimmingCharacters(in: .whitespaces).isEmpty == true { lines.removeFirst() }
        while lines.last?.trimmingCharacters(in: .whitespaces).isEmpty == true { lines.removeLast() }
        let indent =
            lines.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            .map { $0.prefix(while: { $0 == " " }).count }.min() ?? 0
        return lines.map { $0.trimmingCharacters(in: .whitespaces).isEmpty ? "" : String($0.dropFirst(indent)) }
    }
}
