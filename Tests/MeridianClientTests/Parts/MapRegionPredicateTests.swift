// MARK: - The map's region predicate, alone

import MeridianCore
import Testing

@testable import MeridianClient

@Suite("Map region predicate")
struct MapRegionPredicateTests {
    let configuration = MapConfiguration(latitude: "latitude", longitude: "longitude", title: "title")

    @Test(
        "the region is added to the request as the tree its text parses to",
        arguments: [
            (
                MapRegion(south: 1, west: 2, north: 3, east: 4),
                "latitude BETWEEN $meridianRegionLatitudes AND longitude BETWEEN $meridianRegionLongitudes"
            ),
            (
                MapRegion(south: 1, west: 170, north: 3, east: -170),
                "latitude BETWEEN $meridianRegionLatitudes AND "
                    + "(longitude >= $meridianRegionWest OR longitude <= $meridianRegionEast)"
            ),
        ])
    func regionTree(region: MapRegion, text: String) throws {
        let everywhere = try FetchRequest(entity: "Point")
        let regional = MapController.request(everywhere, configuration: self.configuration, region: region)
        #expect(regional.predicate.withoutPositions == (try PredicateExpression.parse(text)).withoutPositions)
        #expect(regional.predicateText == (try FetchRequest(entity: "Point", where: text)).predicateText)

        let filtered = try FetchRequest(entity: "Point", where: "category < 3 OR title == \"x\"")
        let both = MapController.request(filtered, configuration: self.configuration, region: region)
        let expected = try PredicateExpression.parse("(category < 3 OR title == \"x\") AND \(text)")
        #expect(both.predicate.withoutPositions == expected.withoutPositions)
        _ = try both.bind(to: testSchema)

        if region.west <= region.east {
            #expect(both.variables["meridianRegionLongitudes"] == .list([.double(2), .double(4)]))
            #expect(!both.variables.keys.contains("meridianRegionWest"))
            #expect(!both.variables.keys.contains("meridianRegionEast"))
        } else {
            #expect(both.variables["meridianRegionWest"] == .value(.double(170)))
            #expect(both.variables["meridianRegionEast"] == .value(.double(-170)))
            #expect(!both.variables.keys.contains("meridianRegionLongitudes"))
        }
        #expect(both.variables["meridianRegionLatitudes"] == .list([.double(1), .double(3)]))
    }

    @Test("no region leaves the request as it is")
    func noRegion() throws {
        let request = try FetchRequest(entity: "Point", where: "category < 3")
        #expect(MapController.request(request, configuration: self.configuration, region: nil) == request)
    }
}
