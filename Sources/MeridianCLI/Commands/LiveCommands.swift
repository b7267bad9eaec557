#if canImport(MeridianClient)
    // MARK: - meridian watch / map: live commands on top of MeridianClient

    internal import ArgumentParser
    internal import Logging
    internal import MeridianClient
    internal import MeridianCore

    /// `meridian watch ENTITY [--where PRED] [--sort KEYS] [--section KEY] [--format table|jsonl]`.
    struct WatchCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "watch",
            abstract: "Show a live query: its rows, then every change, until interrupted.",
            discussion: """
                table is a live view redrawn in place. jsonl prints {"event":"snapshot",…} once, then one \
                {"event":"change",…} line per commit (docs/cli.md). Reconnects and resumes by itself; SIGINT or \
                SIGTERM exit 0.
                """)

        enum Format: String, ExpressibleByArgument, CaseIterable {
            case table, jsonl
        }

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The entity.")
        var entity: String

        @OptionGroup var fetch: FetchOptions

        @Option(help: ArgumentHelp("Group rows by this attribute (it must be the first sort key).", valueName: "key"))
        var section: String?

        @Option(help: "Output format.")
        var format: Format = .table

        func run() async throws {
            let address = try self.connection.address()
            let (schema, entity) = try await LiveSession.schema(address: address, entity: self.entity)
            let request = try self.fetch.fetchRequest(for: entity, sectionKey: self.section)
            let events = WatchEvents(entity: entity, sectioned: self.section != nil)
            let format = self.format
            let view = LiveTable(entity: entity, title: LiveSession.title(entity, self.fetch), sectionKey: self.section)
            try await LiveSession.run(address: address, schema: schema, liveScreen: format == .table) { container in
                let controller = try await container.controller(for: request)
                try await controller.waitUntilLoaded()
                var list = request.sectionKey == nil ? SectionedList<Row>(unsectioned: []) : SectionedList<Row>()
                var first = true
                // The table's highlights (ids changed, and when) and footer (the last change sets).
                var changedAt: [String: ContinuousClock.Instant] = [:]
                var recent: [String] = []
                for try await change in controller.changes(includingInitial: true) {
                    // JSON lines print the whole list once, then change sets: the list is kept for the table only.
                    if format != .jsonl || first { try list.apply(change.changeSet) }
                    switch format {
                    case .jsonl:
                        if first {
                            Terminal.writeOut(bytes: events.snapshotBytes(seq: change.seq, list: list, line: true))
                        } else if !change.changeSet.isEmpty {
                            Terminal.writeOut(
                                bytes: events.changeBytes(seq: change.seq, changeSet: change.changeSet, line: true))
                        }
                    case .table:
                        let now = ContinuousClock.now
                        if !first, !change.changeSet.isEmpty {
                            for rowChange in change.changeSet.rowChanges { changedAt[rowChange.id] = now }
                            recent = Array((recent + [LiveTable.describe(change.changeSet, seq: change.seq)]).suffix(5))
                        }
                        changedAt = changedAt.filter { now - $0.value < LiveTable.highlightFor }
                        let size = Terminal.size() ?? (100, 40)
                        Terminal.writeOut(
                            LiveScreen.frame(
                                view.render(
                                    list, seq: change.seq, columns: size.columns, rows: size.rows,
                                    highlighted: Set(changedAt.keys), recent: recent)))
                    }
                    first = false
                }
            }
        }
    }

    /// `meridian map ENTITY --lat ATTR --lon ATTR [--title ATTR] [--where PRED] [--region …] [--format ascii|jsonl]`.
    struct MapCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "map",
            abstract: "Show a live map of the rows' coordinates, until interrupted.",
            discussion: """
                ascii draws the annotations in the terminal. jsonl prints {"event":"snapshot",…} once, then one \
                {"event":"add|remove|move|retitle","id":…,"lat":…,"lon":…,"title":…,"seq":…} line per annotation \
                event; a change to an attribute that is neither the coordinate nor the title prints nothing.
                """)

        enum Format: String, ExpressibleByArgument, CaseIterable {
            case ascii, jsonl
        }

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The entity.")
        var entity: String

        @Option(help: ArgumentHelp("The latitude attribute (degrees).", valueName: "attr"))
        var lat: String

        @Option(help: ArgumentHelp("The longitude attribute (degrees).", valueName: "attr"))
        var lon: String

        @Option(help: ArgumentHelp("The attribute shown as the title.", valueName: "attr"))
        var title: String?

        @Option(
            name: .customLong("where"),
            help: ArgumentHelp("A predicate selecting rows (docs/predicates.md).", valueName: "predicate"))
        var predicate: String?

        @Option(
            parsing: .unconditional,
            help: ArgumentHelp("Only this box, given by two opposite corners.", valueName: "lat1,lon1,lat2,lon2"))
        var region: String?

        @Option(help: "Output format.")
        var format: Format = .ascii

        func validate() throws {
            guard let region else { return }
            do {
                _ = try Self.parseRegion(region)
            } catch {
                throw ValidationError(error.message)
            }
        }

        /// `LAT1,LON1,LAT2,LON2` as a region.
        static func parseRegion(_ text: String) throws(CLIError) -> MapRegion {
            let parts = text.split(separator: ",", omittingEmptySubsequences: false).map {
                Double(String($0).trimmingSpaces)
            }
            guard parts.count == 4, let lat1 = parts[0], let lon1 = parts[1], let lat2 = parts[2], let lon2 = parts[3]
            else { throw CLIError.badInput("--region: expected LAT1,LON1,LAT2,LON2 (four numbers), not '\(text)'") }
            for lat in [lat1, lat2] where !(-90...90).contains(lat) {
                throw CLIError.badInput("--region: latitude \(lat) is outside -90…90")
            }
            for lon in [lon1, lon2] where !(-180...180).contains(lon) {
                throw CLIError.badInput("--region: longitude \(lon) is outside -180…180")
            }
            return MapRegion(Coordinate(latitude: lat1, longitude: lon1), Coordinate(latitude: lat2, longitude: lon2))
        }

        func run() async throws {
            let address = try self.connection.address()
            let (schema, entity) = try await LiveSession.schema(address: address, entity: self.entity)
            for (option, name) in [("--lat", self.lat), ("--lon", self.lon)] {
                guard let attribute = entity.attribute(named: name) else {
                    throw CLIError.badInput("\(option): " + NameSuggestion.unknownAttribute(name, in: entity))
                }
                guard attribute.type.isNumeric else {
                    throw CLIError.badInput("\(option): '\(name)' is \(attribute.type), not a number of degrees")
                }
            }
            if let title = self.title, entity.attribute(named: title) == nil, title != EntitySchema.idAttribute {
                throw CLIError.badInput("--title: " + NameSuggestion.unknownAttribute(title, in: entity))
            }
            let fetch = try FetchOptions.parse(self.predicate.map { ["--where", $0] } ?? [])
            let request = try fetch.fetchRequest(for: entity)
            let region = try self.region.map { text throws(CLIError) in try Self.parseRegion(text) }
            let configuration = MapConfiguration(latitude: self.lat, longitude: self.lon, title: self.title)
            let format = self.format
            let title = LiveSession.title(entity, fetch)
            try await LiveSession.run(address: address, schema: schema, liveScreen: format == .ascii) { container in
                let map = try await container.mapController(for: request, configuration: configuration, region: region)
                try await map.controller.waitUntilLoaded()
                var shown: [String: Annotation] = [:]
                var recent: [String] = []
                for try await update in map.updates() {
                    if update.cause == .initial {
                        shown.reserveCapacity(update.events.count)
                        var added: [String] = []
                        for event in update.events where event.kind == .add {
                            shown[event.id] = event.annotation
                            added.append(event.id)
                        }
                        if format == .jsonl {
                            Terminal.writeOut(bytes: MapEvents.snapshot(seq: update.seq, shown: shown, added: added))
                        }
                    } else {
                        var out = JSONBytes(capacity: 0)
                        for event in update.events {
                            guard MapEvents.write(event, shown: &shown, seq: update.seq, to: &out) else { continue }
                            recent.append(
                                "\(event.kind) \(shown[event.id]?.title ?? event.annotation?.title ?? event.id)")
                        }
                        if format == .jsonl, !out.isEmpty { Terminal.writeOut(bytes: out.bytes) }
                        recent = Array(recent.suffix(20))
                    }
                    if format == .ascii {
                        let size = Terminal.size() ?? (100, 40)
                        let points = shown.values.map {
                            MapPoint(
                                id: $0.id, latitude: $0.coordinate.latitude, longitude: $0.coordinate.longitude,
                                title: $0.title)
                        }
                        let box = region.map { (south: $0.south, west: $0.west, north: $0.north, east: $0.east) }
                        Terminal.writeOut(
                            LiveScreen.frame(
                                AsciiMap.render(
                                    points, region: box, title: title, seq: update.seq, recentEvents: recent,
                                    columns: size.columns, rows: size.rows)))
                    }
                }
            }
        }
    }

    /// The JSON lines of `map --format jsonl`, written straight to UTF-8 bytes (a `JSON` tree per annotation, then
    /// its text through `String` appends, was half of a 200,000-annotation map's CPU until its first line; the tests
    /// pin the text against the tree's).
    enum MapEvents {
        /// `{"event":"snapshot","seq":S,"annotations":[{"id":ID,"lat":…,"lon":…,"title":…},…]}` and a line break:
        /// the annotations shown, by id (UTF-8 order). `added` are their ids in the order the initial change added
        /// them: the controller's order, the ids' own for a map's request (no sort keys), taken as it is when it is
        /// that order (a sort of 200,000 ids was a third of this line's time), else sorted.
        static func snapshot(seq: Int64, shown: [String: Annotation], added: [String]) -> [UInt8] {
            let ids: [String]
            if added.count == shown.count, zip(added, added.dropFirst()).allSatisfy({ $0.utf8Compare($1) < 0 }) {
                ids = added
            } else {
                // The ids sorted, not the annotations: moving whole annotations was most of the sort's time.
                ids = shown.keys.sorted { $0.utf8Compare($1) < 0 }
            }
            var out = JSONBytes(capacity: 64 + ids.count * 80)
            out.append("{\"event\":\"snapshot\",\"seq\":")
            out.append(integer: seq)
            out.append(",\"annotations\":[")
            for (i, id) in ids.enumerated() {
                let annotation = shown[id]!
                if i > 0 { out.append(",") }
                out.append("{\"id\":")
                out.append(string: annotation.id)
                Self.writePlace(annotation, to: &out)
                out.append("}")
            }
            out.append("]}\n")
            return out.bytes
        }

        /// The line for one event and a line break, updating `shown`: `{"event":KIND,"id":ID,"lat":…,"lon":…,
        /// "title":…,"seq":S}`; `false`, writing nothing, for events the contract does not print (unplaced).
        static func write(
            _ event: MapEvent, shown: inout [String: Annotation], seq: Int64, to out: inout JSONBytes
        ) -> Bool {
            let annotation: Annotation?
            switch event.kind {
            case .remove:
                annotation = shown.removeValue(forKey: event.id)
            case .add, .move, .retitle:
                annotation = event.annotation
                shown[event.id] = event.annotation
            default:
                return false
            }
            out.append("{\"event\":")
            out.append(string: event.kind.description)
            out.append(",\"id\":")
            out.append(string: event.id)
            Self.writePlace(annotation, to: &out)
            out.append(",\"seq\":")
            out.append(integer: seq)
            out.append("}\n")
            return true
        }

        /// `,"lat":…,"lon":…,"title":…` of an annotation (each null without one, the title null when it has none).
        private static func writePlace(_ annotation: Annotation?, to out: inout JSONBytes) {
            out.append(",\"lat\":")
            out.append(value: annotation.map { .double($0.coordinate.latitude) } ?? .null)
            out.append(",\"lon\":")
            out.append(value: annotation.map { .double($0.coordinate.longitude) } ?? .null)
            out.append(",\"title\":")
            if let title = annotation?.title { out.append(string: title) } else { out.append("null") }
        }
    }

    /// What `watch` and `map` share: checking the server and the request first (exit 2 or 3 before anything is
    /// shown), running a container until SIGINT or SIGTERM, and the terminal's alternate screen for the live views.
    enum LiveSession {
        /// The served schema and the entity, from a one-shot connection (exit 3 when the server cannot be reached).
        static func schema(address: ServerEndpoint, entity name: String) async throws(CLIError) -> (
            Schema, EntitySchema
        ) {
            let schema = try await ServerConnection.with(address) { try await $0.schema().schema }
            return (schema, try schema.cliEntity(name))
        }

        /// The status-line title: `Point where category == 1, by title`.
        static func title(_ entity: EntitySchema, _ fetch: FetchOptions) -> String {
            var text = entity.name
            if let predicate = fetch.predicate, !predicate.isEmpty { text += " where \(predicate)" }
            if let sort = fetch.sort, !sort.isEmpty { text += ", by \(sort)" }
            return text
        }

        /// Runs `body` with a connected container until it returns, fails, or SIGINT/SIGTERM arrives (then returns
        /// normally: exit 0). With `liveScreen`, the terminal's alternate screen is used and restored.
        static func run(
            address: ServerEndpoint,
            schema: Schema,
            liveScreen: Bool,
            _ body: @escaping @Sendable (MeridianContainer) async throws -> Void
        ) async throws {
            let configuration: MeridianContainer.Configuration
            do {
                var made = try MeridianContainer.Configuration(
                    server: address.description, schema: schema, clientName: "meridian-cli",
                    logger: Logger(label: "meridian.client"))
                made.credentials = address.credentials
                configuration = made
            } catch {
                throw CLIError.badInput(error.message, cause: error)
            }
            let screen = liveScreen && Terminal.isTerminal(1)
            if screen { Terminal.writeOut(LiveScreen.enter) }
            defer { if screen { Terminal.writeOut(LiveScreen.leave) } }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await Signals.interruption() }
                group.addTask {
                    do {
                        try await withMeridianContainer(configuration) { container in try await body(container) }
                    } catch let error as ClientError {
                        throw LiveSession.map(error)
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }

        /// The CLI error for a client-library error: a request the server refused exits 2, anything else 1.
        static func map(_ error: ClientError) -> CLIError {
            let badInput: [ClientError.Code] = [
                .badPredicate, .unknownEntity, .unknownAttribute, .malformedRequest, .tooManySubscriptions,
            ]
            if badInput.contains(error.code) { return CLIError(.badInput, error.message, cause: error) }
            if error.code == .unavailable || error.code == .shuttingDown {
                return CLIError(.unreachable, error.message, cause: error)
            }
            if error.code == .unauthenticated { return CLIError(.unauthenticated, error.message, cause: error) }
            return CLIError(.failure, error.message, cause: error)
        }
    }
#endif
