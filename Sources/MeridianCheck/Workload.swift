// MARK: - Workload: the schema, the controllers and the random values every role shares

internal import Foundation
public import MeridianCore

/// What the checker's processes agree on: the schema, the named fetch requests every client holds, the map's
/// configuration, and the value ranges writers draw from. The oracle evaluates exactly these requests.
public enum Workload {
    /// The one entity every role reads and writes.
    public static let entity = "Item"

    /// The checker's schema (written to the run directory and given to the server).
    public static let schemaYAML = """
        # meridian-check's schema: one entity whose attributes move rows into and out of predicates, across
        # sections, and on and off the map.
        version: 1
        entities:
          Item:
            id: client
            attributes:
              title: string
              category: { type: int, default: 0 }
              score: int
              latitude: double?
              longitude: double?
              ownerId: { type: string, default: "" }
            indexes:
              - [category, title]
            derived:
              coordinate: { coordinate: [latitude, longitude] }
        """

    /// The schema of `meridian-check --auth`: the same entity with rules. A reader sees the rows it owns and those of
    /// the categories its token shares with it (so principals' visibility overlaps, and an owner change moves a row
    /// out of one principal's view and into another's at one seq); writers see and write everything. Its
    /// fingerprint is the plain schema's (rules are not part of it), so clients and the oracle use ``schema``.
    public static let authSchemaYAML =
        Self.schemaYAML.replacingOccurrences(
            of: "version: 1\n",
            with: """
                version: 1
                auth:
                  claims: { sub: string, role: string, shared: "[int]" }

                """)
            + """

                rules:
                  read: '@role == "writer" OR ownerId == @sub OR category IN @shared'
                  insert: '@role == "writer"'
                  update: '@role == "writer"'
                  delete: '@role == "writer"'
            """

    /// ``authSchemaYAML``, parsed.
    public static let authSchema: Schema = {
        do {
            return try Schema.parse(yaml: Self.authSchemaYAML, file: "meridian-check auth schema")
        } catch {
            preconditionFailure("meridian-check's built-in auth schema does not parse: \(error)")
        }
    }()

    /// The owners writers give rows: the readers' subjects and one nobody reads as owner.
    public static let owners = ["p0", "p1", "p2", "nobody"]

    /// The principal of client `index` under `--auth`: three subjects (clients 0 and 3 share one), each sharing two
    /// categories, one of them with another subject.
    public static func readerPrincipal(client index: Int) -> Principal {
        let k = index % 3
        return Principal(
            subject: "p\(k)",
            claims: ["role": .string("reader"), "shared": .list([.int(Int64(k)), .int(Int64((k + 2) % 6))])])
    }

    /// The principal every writer commits as under `--auth`.
    public static let writerPrincipal = Principal(
        subject: "writer", claims: ["role": .string("writer"), "shared": .list([])])

    /// What `principal` may read under the auth schema's rules.
    public static func access(_ principal: Principal) -> BoundAccess {
        Self.authSchema.access!.bind(principal, schema: Self.authSchema)
    }

    /// The schema, parsed.
    public static let schema: Schema = {
        do {
            return try Schema.parse(yaml: Self.schemaYAML, file: "meridian-check schema")
        } catch {
            preconditionFailure("meridian-check's built-in schema does not parse: \(error)")
        }
    }()

    /// A named controller every client creates; `narrows` names the controller it narrows locally, if any.
    public struct ControllerSpec: Sendable {
        public var name: String
        public var request: FetchRequest
        public var narrows: String?
    }

    /// Different predicates, sorts, sections and limits, one of them narrowing another without a subscription.
    public static let controllers: [ControllerSpec] = {
        func spec(
            _ name: String, _ predicate: String, _ sort: String, section: String? = nil, limit: Int? = nil,
            narrows: String? = nil
        ) -> ControllerSpec {
            do {
                let request = try FetchRequest(
                    entity: Self.entity, where: predicate, sortedBy: sort, sectionKey: section, limit: limit)
                _ = try request.bind(to: Self.schema)
                return ControllerSpec(name: name, request: request, narrows: narrows)
            } catch {
                preconditionFailure("meridian-check's controller '\(name)' does not bind: \(error)")
            }
        }
        return [
            spec("all-by-id", "", ""),
            spec("low-categories", "category < 3", "category,title", section: "category"),
            spec("top-scores", "", "-score", limit: 15),
            spec("titles-a", "title BEGINSWITH[c] \"a\"", "title"),
            spec("mid-scores", "score BETWEEN {20, 60}", "-category,-score", section: "category", limit: 40),
            spec("unplaced", "latitude == nil OR latitude > 90", "-latitude,title"),
            spec("category-4", "category == 4", "score", narrows: "all-by-id"),
        ]
    }()

    /// The attributes the map reads.
    public static let mapAttributes = (latitude: "latitude", longitude: "longitude", title: "title")

    /// The world the workload lives in: coordinates fall in [-10, 10] (some rows have none, or an impossible one).
    public static let span = 10.0

    /// The ids writers draw from (a small space, so transactions collide).
    public static func randomID(_ random: inout SeededRandom) -> String {
        "r" + String(random.int(in: 0...299))
    }

    /// Titles chosen so that byte order, case folding and non-ASCII letters all matter.
    public static let titles = ["apple", "Apple", "avocado", "banana", "Äpfel", "éclair", "zebra", "a", "ab", "B"]

    /// A random full row for an insert.
    public static func randomValues(_ random: inout SeededRandom) -> [String: Value] {
        var values: [String: Value] = [
            "title": .string(random.element(of: Self.titles)),
            "category": .int(Int64(random.int(in: 0...5))),
            "score": .int(Int64(random.int(in: 0...99))),
            "ownerId": .string(random.element(of: Self.owners)),
        ]
        let (latitude, longitude) = Self.randomPosition(&random)
        values["latitude"] = latitude
        values["longitude"] = longitude
        return values
    }

    /// A random position: mostly inside the world, sometimes missing, sometimes out of range.
    public static func randomPosition(_ random: inout SeededRandom) -> (Value, Value) {
        switch random.int(in: 0...9) {
        case 0: return (.null, .null)
        case 1: return (.double(95.5), .double(random.double(in: -Self.span...Self.span)))
        default:
            return (
                .double(random.double(in: -Self.span...Self.span)),
                .double(random.double(in: -Self.span...Self.span))
            )
        }
    }

    /// A random change of one to three attributes, moving rows into and out of predicates and sections (and, under
    /// `--auth`, from one owner's view to another's).
    public static func randomUpdate(_ random: inout SeededRandom) -> [String: Value] {
        var values: [String: Value] = [:]
        for _ in 0..<random.int(in: 1...3) {
            switch random.int(in: 0...4) {
            case 0: values["title"] = .string(random.element(of: Self.titles))
            case 1: values["category"] = .int(Int64(random.int(in: 0...5)))
            case 2: values["score"] = .int(Int64(random.int(in: 0...99)))
            case 3: values["ownerId"] = .string(random.element(of: Self.owners))
            default:
                let (latitude, longitude) = Self.randomPosition(&random)
                values["latitude"] = latitude
                values["longitude"] = longitude
            }
        }
        return values
    }

    /// A random map region inside the world (a box between 4 and 12 degrees on a side).
    public static func randomRegion(_ random: inout SeededRandom) -> [Double] {
        let height = random.double(in: 4...12)
        let width = random.double(in: 4...12)
        let south = random.double(in: -Self.span...(Self.span - height))
        let west = random.double(in: -Self.span...(Self.span - width))
        return [south, west, south + height, west + width]
    }

    /// The fetch request the oracle evaluates for a map region `[south, west, north, east]`.
    public static func mapRequest(region: [Double]) -> FetchRequest {
        do {
            return try FetchRequest(
                entity: Self.entity,
                where: "latitude BETWEEN $lat AND longitude BETWEEN $lon",
                variables: [
                    "lat": .list([.double(region[0]), .double(region[2])]),
                    "lon": .list([.double(region[1]), .double(region[3])]),
                ]
            )
        } catch {
            preconditionFailure("meridian-check's map predicate does not parse: \(error)")
        }
    }
}

// MARK: - SeededRandom

/// SplitMix64: a small, fast generator whose whole sequence follows from the seed, so a run's workload and fault
/// schedule replay from `--seed`.
public struct SeededRandom: Sendable {
    private var state: UInt64

    /// Creates a generator; different `stream`s of one seed give unrelated sequences.
    public init(seed: UInt64, stream: UInt64 = 0) {
        self.state = seed &+ stream &* 0x9E37_79B9_7F4A_7C15 &+ 0x2545_F491_4F6C_DD1D
        _ = self.next()
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform integer in `range`.
    public mutating func int(in range: ClosedRange<Int>) -> Int {
        let width = UInt64(range.upperBound - range.lowerBound) + 1
        return range.lowerBound + Int(self.next() % width)
    }

    /// A uniform double in `range`.
    public mutating func double(in range: ClosedRange<Double>) -> Double {
        let unit = Double(self.next() >> 11) / Double(1 << 53)
        return range.lowerBound + unit * (range.upperBound - range.lowerBound)
    }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool {
        self.double(in: 0...1) < p
    }

    /// A uniform element of a non-empty array.
    public mutating func element<T>(of array: [T]) -> T {
        array[self.int(in: 0...(array.count - 1))]
    }
}
