// MARK: - MapModel

public import MeridianCore
public import Observation

/// A geographic coordinate in degrees.
public struct Coordinate: Sendable, Hashable, CustomStringConvertible {
    /// The latitude, in [-90, 90] when valid.
    public var latitude: Double
    /// The longitude, in [-180, 180] when valid.
    public var longitude: Double

    /// Creates a coordinate.
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    /// Whether the coordinate can be placed: finite, latitude in [-90, 90], longitude in [-180, 180].
    public var isValid: Bool {
        self.latitude.isFinite && self.longitude.isFinite && (-90...90).contains(self.latitude)
            && (-180...180).contains(self.longitude)
    }

    public var description: String { "(\(self.latitude), \(self.longitude))" }
}

/// A latitude/longitude box. When `west > east` the box crosses the antimeridian.
public struct MapRegion: Sendable, Hashable, CustomStringConvertible {
    /// The southern edge (included).
    public var south: Double
    /// The northern edge (included).
    public var north: Double
    /// The western edge (included).
    public var west: Double
    /// The eastern edge (included).
    public var east: Double

    /// Creates a region from its edges.
    public init(south: Double, west: Double, north: Double, east: Double) {
        self.south = min(south, north)
        self.north = max(south, north)
        self.west = west
        self.east = east
    }

    /// Creates the smallest region holding two corners (never crossing the antimeridian).
    public init(_ a: Coordinate, _ b: Coordinate) {
        self.init(
            south: min(a.latitude, b.latitude), west: min(a.longitude, b.longitude),
            north: max(a.latitude, b.latitude), east: max(a.longitude, b.longitude))
    }

    /// Whether the region holds a coordinate (edges included).
    public func contains(_ coordinate: Coordinate) -> Bool {
        guard coordinate.latitude >= self.south, coordinate.latitude <= self.north else { return false }
        if self.west <= self.east {
            return coordinate.longitude >= self.west && coordinate.longitude <= self.east
        }
        return coordinate.longitude >= self.west || coordinate.longitude <= self.east
    }

    public var description: String { "[\(self.south), \(self.west)] – [\(self.north), \(self.east)]" }
}

/// One annotation: a row placed on the map.
public struct Annotation: Sendable, Hashable, Identifiable {
    /// The row's id.
    public var id: String
    /// Where it is placed.
    public var coordinate: Coordinate
    /// The title attribute's text, if configured and not null.
    public var title: String?
    /// The subtitle attribute's text, if configured and not null.
    public var subtitle: String?

    /// Creates an annotation.
    public init(id: String, coordinate: Coordinate, title: String? = nil, subtitle: String? = nil) {
        self.id = id
        self.coordinate = coordinate
        self.title = title
        self.subtitle = subtitle
    }
}

/// What happened to one annotation in one commit.
public struct MapEvent: Sendable, Hashable, CustomStringConvertible {
    /// The kind of event.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        let name: String

        /// A row was placed (it entered with a valid coordinate, or its coordinate became valid).
        public static let add = Kind(name: "add")
        /// A placed row left (deleted, out of the predicate or region), or its coordinate became invalid.
        public static let remove = Kind(name: "remove")
        /// A placed row's coordinate changed (the annotation carries its current title too).
        public static let move = Kind(name: "move")
        /// Only a placed row's title or subtitle changed.
        public static let retitle = Kind(name: "retitle")
        /// A row entered (or changed) without a valid coordinate: it is not placed.
        public static let unplaced = Kind(name: "unplaced")

        public var description: String { self.name }
    }

    /// The kind.
    public var kind: Kind
    /// The row's id.
    public var id: String
    /// The annotation after the event (`nil` for remove and unplaced).
    public var annotation: Annotation?

    /// Creates an event.
    public init(_ kind: Kind, id: String, annotation: Annotation? = nil) {
        self.kind = kind
        self.id = id
        self.annotation = annotation
    }

    public var description: String {
        "\(self.kind) \(self.id)" + (self.annotation.map { " at \($0.coordinate) \($0.title ?? "")" } ?? "")
    }
}

/// Which attributes a map model reads.
public struct MapConfiguration: Sendable, Hashable {
    /// The latitude attribute.
    public var latitude: String
    /// The longitude attribute.
    public var longitude: String
    /// The title attribute, if any.
    public var title: String?
    /// The subtitle attribute, if any.
    public var subtitle: String?

    /// Names the attributes explicitly.
    public init(latitude: String, longitude: String, title: String? = nil, subtitle: String? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.title = title
        self.subtitle = subtitle
    }

    /// Uses an entity's derived `coordinate` attribute (its declared latitude and longitude dependencies).
    ///
    /// - Returns: `nil` when the entity declares no coordinate.
    public init?(coordinateOf entity: EntitySchema, title: String? = nil, subtitle: String? = nil) {
        for derived in entity.derived {
            if case .coordinate(let latitude, let longitude) = derived.kind {
                self.init(latitude: latitude, longitude: longitude, title: title, subtitle: subtitle)
                return
            }
        }
        return nil
    }

    /// The annotation for a row, or `nil` when its coordinate is missing or out of range.
    public func annotation(for row: Row) -> Annotation? {
        guard let latitude = Self.degrees(row[self.latitude]), let longitude = Self.degrees(row[self.longitude])
        else { return nil }
        let coordinate = Coordinate(latitude: latitude, longitude: longitude)
        guard coordinate.isValid else { return nil }
        return Annotation(
            id: row.id, coordinate: coordinate,
            title: self.title.flatMap { Self.text(row[$0]) },
            subtitle: self.subtitle.flatMap { Self.text(row[$0]) })
    }

    private static func degrees(_ value: Value) -> Double? {
        switch value {
        case .int(let i): Double(i)
        case .double(let d): d.isNaN ? nil : d
        default: nil
        }
    }

    private static func text(_ value: Value) -> String? {
        value.isNull ? nil : value.stringValue ?? value.displayText
    }
}

/// Annotations keyed by row id, maintained from a results controller's change sets the way a map view needs them:
/// add, remove, move (the coordinate changed), retitle (only the title or subtitle changed), and nothing at all for
/// a change to attributes the map does not show.
///
/// The model is `@Observable`: a SwiftUI `Map` that reads ``annotations`` redraws once per change that changed an
/// annotation, and not at all for a change the map does not show; the events of that change are ``lastEvents`` (or,
/// for MapKit's `MKMapView`, handed to `follow(_:isolation:onEvents:)`'s closure as each change is applied).
///
/// ```swift
/// let map = MapModel(MapConfiguration(latitude: "latitude", longitude: "longitude", title: "title"))
/// try await map.follow(points) { events in
///     for event in events { mapView.handle(event) }
/// }
/// map.annotations(in: visibleRegion)
/// ```
///
/// - Note: The model is not `Sendable`: it belongs to the isolation that made it (a view's main actor, or a task);
///   `follow(_:isolation:onEvents:)` runs on its caller's executor.
@Observable
public final class MapModel {
    /// The attributes read.
    public let configuration: MapConfiguration
    /// Everything the model shows, changed in place, in one access, by each change that changes it: one observation
    /// per change.
    private var state = State()

    /// Creates an empty map model.
    public init(_ configuration: MapConfiguration) {
        self.configuration = configuration
    }

    // MARK: - Reading

    /// The placed annotations, by row id.
    public var annotations: [String: Annotation] { self.state.annotations }
    /// The rows shown without a valid coordinate (not placed).
    public var unplacedIDs: Set<String> { self.state.unplacedIDs }
    /// The events of the last change that changed the model (empty before the first). Observation may coalesce
    /// several changes into one redraw, so a consumer that must see every event takes them from `apply(_:)`
    /// or `follow(_:isolation:onEvents:)`, not from this property.
    public var lastEvents: [MapEvent] { self.state.lastEvents }

    /// The placed annotations inside a region, sorted by id.
    public func annotations(in region: MapRegion) -> [Annotation] {
        self.state.annotations.values.filter { region.contains($0.coordinate) }.sorted {
            $0.id.utf8.lexicographicallyPrecedes($1.id.utf8)
        }
    }

    // MARK: - Changing

    /// Applies one commit's change set and returns its events: removals first, then the rest in change order.
    /// A deleted row's annotation is removed in the same commit. Observers are told once when the model changed,
    /// and not at all when it did not (a change to attributes the map does not show).
    @discardableResult
    public func apply(_ changeSet: ChangeSet<Row>) -> [MapEvent] {
        self.apply(changeSet, replacing: false)
    }

    /// Applies a typed controller's change set (rows are re-encoded from the model values).
    @discardableResult
    public func apply<Element: RowConvertible>(_ changeSet: ChangeSet<Element>) -> [MapEvent] {
        self.apply(Self.rows(changeSet), replacing: false)
    }

    /// Applies a controller's change. An ``ResultsChangeCause/initial`` change replaces the content: annotations it
    /// does not show are removed, the others are added, moved or retitled against what the model showed.
    @discardableResult
    public func apply<Element: RowConvertible>(_ change: ResultsChange<Element>) -> [MapEvent] {
        self.apply(Self.rows(change.changeSet), replacing: change.cause == .initial)
    }

    /// Shows a map controller: applies its current annotations, then each change as it comes (region moves
    /// included), until the controller is closed or the task is cancelled. Runs on the caller's executor.
    ///
    /// - Parameters:
    ///   - map: The map controller to show.
    ///   - isolation: Where the model is changed and `onEvents` called: the caller's actor, by default.
    ///   - onEvents: Called after each change that changed the model, with its events.
    /// - Throws: ``ClientError`` when the server rejects the subscription; what `onEvents` throws.
    public func follow(
        _ map: MapController,
        isolation: isolated (any Actor)? = #isolation,
        onEvents: ([MapEvent]) throws -> Void = { _ in }
    ) async throws {
        try await self.follow(map.controller, isolation: isolation, onEvents: onEvents)
    }

    /// Shows a results controller's rows as annotations: applies its current state, then each change as it comes,
    /// until the controller is closed or the task is cancelled. Runs on the caller's executor.
    ///
    /// - Parameters:
    ///   - controller: The controller to show.
    ///   - isolation: Where the model is changed and `onEvents` called: the caller's actor, by default.
    ///   - onEvents: Called after each change that changed the model, with its events.
    /// - Throws: ``ClientError`` when the server rejects the subscription; what `onEvents` throws.
    public func follow<Element: RowConvertible>(
        _ controller: ResultsController<Element>,
        isolation: isolated (any Actor)? = #isolation,
        onEvents: ([MapEvent]) throws -> Void = { _ in }
    ) async throws {
        for try await change in controller.changes(includingInitial: true) {
            let events = self.apply(change)
            if !events.isEmpty { try onEvents(events) }
        }
    }

    /// Works a change set out against the state, then writes it in place (one observation) when it changes anything.
    private func apply(_ changeSet: ChangeSet<Row>, replacing: Bool) -> [MapEvent] {
        // Worked out against the state as it is, then written in one access to it, in place: a copy of the state
        // held while writing made every change copy every annotation. A change that changes nothing writes nothing,
        // so no one is told.
        let edit = Self.edit(changeSet, replacing: replacing, of: self.state, configuration: self.configuration)
        guard edit.changed || !edit.events.isEmpty else { return edit.events }
        self.state.apply(edit)
        return edit.events
    }

    /// What `changeSet` does to a model showing `state`: its events and the writes that make them, `state` unchanged.
    private static func edit(
        _ changeSet: ChangeSet<Row>, replacing: Bool, of state: borrowing State, configuration: MapConfiguration
    ) -> Edit {
        var edit = Edit()
        // The changes are read in place, by index: `for change in` and `change.element` copied each whole change.
        let changes = changeSet.rowChanges
        // A model that shows nothing has nothing a replacement could remove (a first load: no set of every id).
        if replacing, !state.annotations.isEmpty || !state.unplacedIDs.isEmpty {
            var shown = Set<String>(minimumCapacity: changes.count)
            for i in 0..<changes.count {
                switch changes[i] {
                case .insert(let id, _, _), .move(let id, _, _, _, _), .update(let id, _, _, _, _): shown.insert(id)
                case .delete: break
                }
            }
            for id in state.annotations.keys.sorted(by: { $0.utf8Compare($1) < 0 }) where !shown.contains(id) {
                edit.place(id, nil, over: state)
                edit.events.append(MapEvent(.remove, id: id))
            }
            for id in state.unplacedIDs where !shown.contains(id) {
                edit.unplace(id, false, over: state)
                edit.changed = true
            }
        }
        var inserts = 0
        for i in 0..<changes.count {
            switch changes[i] {
            case .delete(let id, _):
                if edit.annotation(id, over: state) != nil {
                    edit.place(id, nil, over: state)
                    edit.events.append(MapEvent(.remove, id: id))
                }
                if edit.unplace(id, false, over: state) { edit.changed = true }
            case .insert: inserts += 1
            case .move, .update: break
            }
        }
        // Room for the inserted rows at once, instead of growing (and rehashing) as a large load comes in.
        if inserts > 0 { edit.placed.reserveCapacity(inserts) }
        for i in 0..<changes.count {
            let row: Row
            switch changes[i] {
            case .insert(_, _, let element), .move(_, _, _, let element, _), .update(_, _, _, let element, _):
                row = element
            case .delete:
                continue
            }
            let old = edit.annotation(row.id, over: state)
            let new = configuration.annotation(for: row)
            switch (old, new) {
            case (nil, let new?):
                edit.unplace(row.id, false, over: state)
                edit.place(row.id, new, over: state)
                edit.events.append(MapEvent(.add, id: row.id, annotation: new))
            case (_?, nil):
                edit.place(row.id, nil, over: state)
                edit.unplace(row.id, true, over: state)
                edit.events.append(MapEvent(.remove, id: row.id))
                edit.events.append(MapEvent(.unplaced, id: row.id))
            case (let old?, let new?):
                if old.coordinate != new.coordinate {
                    edit.place(row.id, new, over: state)
                    edit.events.append(MapEvent(.move, id: row.id, annotation: new))
                } else if old.title != new.title || old.subtitle != new.subtitle {
                    edit.place(row.id, new, over: state)
                    edit.events.append(MapEvent(.retitle, id: row.id, annotation: new))
                }
            case (nil, nil):
                if edit.unplace(row.id, true, over: state) { edit.events.append(MapEvent(.unplaced, id: row.id)) }
            }
        }
        return edit
    }

    /// A typed change set with its rows re-encoded from the model values.
    private static func rows<Element: RowConvertible>(_ changeSet: ChangeSet<Element>) -> ChangeSet<Row> {
        if let rows = changeSet as? ChangeSet<Row> { return rows }
        var rows = ChangeSet<Row>(
            deletedSections: changeSet.deletedSections, insertedSections: changeSet.insertedSections)
        for change in changeSet.rowChanges {
            switch change {
            case .delete(let id, let from):
                rows.rowChanges.append(.delete(id: id, from: from))
            case .insert(let id, let to, let element):
                guard let row = try? element.row() else { continue }
                rows.rowChanges.append(.insert(id: id, to: to, element: row))
            case .move(let id, let from, let to, let element, let changed):
                guard let row = try? element.row() else { continue }
                rows.rowChanges.append(.move(id: id, from: from, to: to, element: row, changed: changed))
            case .update(let id, let from, let to, let element, let changed):
                guard let row = try? element.row() else { continue }
                rows.rowChanges.append(.update(id: id, from: from, to: to, element: row, changed: changed))
            }
        }
        return rows
    }
}

/// A map model belongs to one isolation domain (see ``MapModel``).
@available(*, unavailable)
extension MapModel: Sendable {}

extension MapModel {
    /// What a map model shows, as one value, so that a change is one mutation.
    struct State {
        var annotations: [String: Annotation] = [:]
        var unplacedIDs: Set<String> = []
        var lastEvents: [MapEvent] = []

        /// Writes an edit worked out against this state, in place.
        mutating func apply(_ edit: Edit) {
            for id in edit.removed { self.annotations.removeValue(forKey: id) }
            if self.annotations.isEmpty {
                self.annotations = edit.placed  // a first load: the edit's table is the model's
            } else {
                // Room for the new annotations at once, instead of growing (and rehashing) as a large load comes in.
                self.annotations.reserveCapacity(self.annotations.count + edit.placed.count)
                for (id, annotation) in edit.placed { self.annotations[id] = annotation }
            }
            for id in edit.unplacedRemoved { self.unplacedIDs.remove(id) }
            self.unplacedIDs.formUnion(edit.unplacedAdded)
            self.lastEvents = edit.events
        }
    }

    /// What one change set does to a model: the annotations and unplaced ids it writes, over the state it was worked
    /// out against (which it reads, and never holds: see `MapModel.apply`), and its events.
    struct Edit {
        /// Annotations added or changed (never in `removed`).
        var placed: [String: Annotation] = [:]
        /// Annotations of the state removed.
        var removed: Set<String> = []
        /// Unplaced ids added (not in the state's) and removed (of the state's).
        var unplacedAdded: Set<String> = []
        var unplacedRemoved: Set<String> = []
        var events: [MapEvent] = []
        /// Whether the unplaced ids changed where no event says so (a deleted or no longer shown unplaced row).
        var changed = false

        /// The annotation of `id` after the edit so far.
        func annotation(_ id: String, over state: borrowing State) -> Annotation? {
            if let annotation = self.placed[id] { return annotation }
            if self.removed.contains(id) { return nil }
            return state.annotations[id]
        }

        /// Sets (or, for nil, removes) the annotation of `id`.
        mutating func place(_ id: String, _ annotation: Annotation?, over state: borrowing State) {
            if let annotation {
                self.placed[id] = annotation
                self.removed.remove(id)
            } else {
                self.placed[id] = nil
                if state.annotations[id] != nil { self.removed.insert(id) }
            }
        }

        /// Makes `id` unplaced or not; whether that changed it (as `Set.insert`'s `inserted`, `Set.remove`'s result).
        @discardableResult
        mutating func unplace(_ id: String, _ unplaced: Bool, over state: borrowing State) -> Bool {
            let inState = state.unplacedIDs.contains(id)
            if unplaced {
                if inState { return self.unplacedRemoved.remove(id) != nil }
                return self.unplacedAdded.insert(id).inserted
            }
            if inState { return self.unplacedRemoved.insert(id).inserted }
            return self.unplacedAdded.remove(id) != nil
        }
    }
}
