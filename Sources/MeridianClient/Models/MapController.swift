// MARK: - MapController

public import MeridianCore
internal import Synchronization

/// A map over a subscription of its own, optionally restricted to a region: moving the region replaces the
/// subscription on the server (`Replace`), and only the annotations that entered or left are reported.
///
/// ```swift
/// let map = try await container.mapController(
///     for: FetchRequest(entity: "Point"), configuration: MapConfiguration(latitude: "latitude",
///     longitude: "longitude", title: "title"), region: MapRegion(south: 48.8, west: 2.2, north: 48.9, east: 2.4))
/// let updates = map.updates()
/// try await map.setRegion(MapRegion(south: 48.85, west: 2.3, north: 48.95, east: 2.5))
/// for try await update in updates { for event in update.events { … } }   // adds and removes only
/// ```
public final class MapController: Sendable {
    /// The controller behind the map (its request includes the region).
    public let controller: ResultsController<Row>
    /// The attributes read.
    public let configuration: MapConfiguration
    /// The request without the region.
    public let baseRequest: FetchRequest
    private let currentRegion: Mutex<MapRegion?>

    init(controller: ResultsController<Row>, configuration: MapConfiguration, base: FetchRequest, region: MapRegion?) {
        self.controller = controller
        self.configuration = configuration
        self.baseRequest = base
        self.currentRegion = Mutex(region)
    }

    /// The region in force (`nil`: everywhere).
    public var region: MapRegion? { self.currentRegion.withLock { $0 } }

    /// Moves the region (`nil`: everywhere). Connected, the subscription is replaced on the server and this
    /// returns once the controllers show the new region; offline, the cached rows inside the new region show at
    /// once and the rest arrive on reconnection.
    ///
    /// - Throws: ``ClientError`` when the server rejects the new request (the old region stays in force).
    public func setRegion(_ region: MapRegion?) async throws(ClientError) {
        let request = Self.request(self.baseRequest, configuration: self.configuration, region: region)
        try await self.controller.replaceRequest(request)
        self.currentRegion.withLock { $0 = region }
    }

    /// The placed annotations, by id, as the controller shows them now. O(n).
    public var annotations: [String: Annotation] {
        var result: [String: Annotation] = [:]
        for row in self.controller.rows {
            if let annotation = self.configuration.annotation(for: row) { result[row.id] = annotation }
        }
        return result
    }

    /// The placed annotations inside a region, sorted by id. O(n).
    public func annotations(in region: MapRegion) -> [Annotation] {
        self.annotations.values.filter { region.contains($0.coordinate) }
            .sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
    }

    /// The map's events, one ``MapUpdate`` per commit that changed an annotation, starting with the current
    /// annotations as adds (cause ``ResultsChangeCause/initial``).
    public func updates() -> MapUpdates {
        MapUpdates(changes: self.controller.changes(includingInitial: true), configuration: self.configuration)
    }

    /// Closes the map's controller and subscription.
    public func close() async {
        await self.controller.close()
    }

    /// The base request restricted to a region: the base predicate and a region predicate built as a syntax tree,
    /// `latitude BETWEEN $meridianRegionLatitudes AND longitude BETWEEN $meridianRegionLongitudes`, or, for a region
    /// across the antimeridian (west > east), `… AND (longitude >= $meridianRegionWest OR longitude <=
    /// $meridianRegionEast)`.
    static func request(_ base: FetchRequest, configuration: MapConfiguration, region: MapRegion?) -> FetchRequest {
        guard let region else { return base }
        func comparison(_ attribute: String, _ op: ComparisonOperator, _ variable: String) -> PredicateExpression {
            .comparison(PredicateComparison(attribute: attribute, op: op, operand: .variable(variable, .none)))
        }
        var request = base
        let latitude = comparison(configuration.latitude, .between, "meridianRegionLatitudes")
        request.variables["meridianRegionLatitudes"] = .list([.double(region.south), .double(region.north)])
        let longitude: PredicateExpression
        if region.west <= region.east {
            longitude = comparison(configuration.longitude, .between, "meridianRegionLongitudes")
            request.variables["meridianRegionLongitudes"] = .list([.double(region.west), .double(region.east)])
            request.variables["meridianRegionWest"] = nil
            request.variables["meridianRegionEast"] = nil
        } else {
            longitude = .or(
                comparison(configuration.longitude, .greaterOrEqual, "meridianRegionWest"),
                comparison(configuration.longitude, .lessOrEqual, "meridianRegionEast"))
            request.variables["meridianRegionWest"] = .value(.double(region.west))
            request.variables["meridianRegionEast"] = .value(.double(region.east))
            request.variables["meridianRegionLongitudes"] = nil
        }
        let regionPredicate = PredicateExpression.and(latitude, longitude)
        if case .constant(true, _) = base.predicate {
            request.predicate = regionPredicate
        } else {
            request.predicate = .and(base.predicate, regionPredicate)
        }
        return request
    }
}

/// The events of one commit on a map.
public struct MapUpdate: Sendable, Hashable {
    /// The seq the map is at.
    public var seq: Int64
    /// Why it changed.
    public var cause: ResultsChangeCause
    /// The events, removals first.
    public var events: [MapEvent]
    /// Whether the map shows cached annotations the server has not yet confirmed for its current region (see
    /// ``ResultsChange/isProvisional``).
    public var isProvisional = false
}

/// A map's updates: one per commit that changed an annotation.
public struct MapUpdates: AsyncSequence, Sendable {
    public typealias Failure = any Error
    let changes: ResultsChanges<Row>
    let configuration: MapConfiguration

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: self.changes.makeAsyncIterator(), model: MapModel(self.configuration))
    }

    /// The iterator; it keeps the map model the events are computed against.
    public struct Iterator: AsyncIteratorProtocol {
        var base: ResultsChanges<Row>.Iterator
        /// The annotations as of the last update returned (the iterator's own model: read it, don't apply to it).
        public let model: MapModel
        /// Whether the last change was provisional (an update is returned when that flips, events or not).
        var provisional = false

        public mutating func next() async throws -> MapUpdate? {
            while let change = try await self.base.next() {
                let events = self.model.apply(change)
                let provisionalChanged = change.isProvisional != self.provisional
                self.provisional = change.isProvisional
                if !events.isEmpty || change.cause == .initial || provisionalChanged {
                    return MapUpdate(
                        seq: change.seq, cause: change.cause, events: events, isProvisional: change.isProvisional)
                }
            }
            return nil
        }
    }
}

extension MeridianContainer {
    /// A map over a subscription of its own (never shared), optionally restricted to a region.
    ///
    /// - Parameters:
    ///   - request: What to show (the region is added to its predicate).
    ///   - configuration: The attributes read; by default the entity's derived `coordinate` and no title.
    ///   - region: The initial region, or `nil` for everywhere.
    /// - Throws: ``ClientError`` when the request does not bind, or no coordinate is configured or declared.
    public func mapController(
        for request: FetchRequest,
        configuration: MapConfiguration? = nil,
        region: MapRegion? = nil
    ) async throws(ClientError) -> MapController {
        let resolved: MapConfiguration
        if let configuration {
            resolved = configuration
        } else {
            let schema: Schema
            do {
                schema = try await self.context.requireSchema()
            } catch {
                throw ClientError(calling: error)
            }
            guard let entity = schema.entity(named: request.entity),
                let derived = MapConfiguration(coordinateOf: entity)
            else {
                throw ClientError(
                    .unknownAttribute, "\(request.entity) declares no coordinate; name the latitude and longitude",
                    entity: request.entity)
            }
            resolved = derived
        }
        let regional = MapController.request(request, configuration: resolved, region: region)
        let controller: ResultsController<Row> = try await self.makeController(
            for: regional, narrowing: nil, private: true)
        return MapController(controller: controller, configuration: resolved, base: request, region: region)
    }
}
