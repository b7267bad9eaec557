// MARK: - The checker's parts: digests, sections, map region candidates, seeded randomness

import MeridianCore
import Testing

@testable import MeridianCheck

@Suite struct CheckerPartsTests {
    static func row(_ id: String, category: Int64, latitude: Double? = nil) -> Row {
        var values: [String: Value] = ["title": .string("t\(id)"), "category": .int(category), "score": .int(1)]
        values["latitude"] = latitude.map(Value.double) ?? .null
        return Row(id: id, values: values)
    }

    @Test("digests differ on order, values and sections, and ignore explicit nulls")
    func digests() {
        let a = Self.row("a", category: 1)
        let b = Self.row("b", category: 1)
        let base = StateDigest.of(SectionedList(unsectioned: [a, b]))
        #expect(StateDigest.of(SectionedList(unsectioned: [a, b])) == base)
        #expect(StateDigest.of(SectionedList(unsectioned: [b, a])) != base)
        var changed = b
        changed["score"] = .int(2)
        #expect(StateDigest.of(SectionedList(unsectioned: [a, changed])) != base)
        var asDouble = b
        asDouble["score"] = .double(1)
        #expect(StateDigest.of(SectionedList(unsectioned: [a, asDouble])) != base)
        var withoutNull = b
        withoutNull.values["latitude"] = nil
        #expect(StateDigest.of(SectionedList(unsectioned: [a, withoutNull])) == base)
        let sectioned = SectionedList(sections: [ListSection(key: .int(1), name: "1", elements: [a, b])])
        #expect(StateDigest.of(sectioned) != base)
        // However a row keeps its values: compact in another order, with an absent one as null.
        let layout = RowLayout(names: ["score", "latitude", "category", "title"])
        let compact = Row(id: "b", layout: layout, values: [.int(1), .null, .int(1), .string("tb")])
        #expect(StateDigest.of(SectionedList(unsectioned: [a, compact])) == base)
        let swapped = Row(id: "b", layout: layout, values: [.int(1), .null, .string("tb"), .int(1)])
        #expect(StateDigest.of(SectionedList(unsectioned: [a, swapped])) != base)
    }

    @Test("the oracle cuts sorted rows into sections where the key changes, as LiveResults does")
    func sections() throws {
        let request = try FetchRequest(entity: "Item", sortedBy: "category,title", sectionKey: "category")
        let bound = try request.bind(to: Workload.schema)
        let rows = [Self.row("c", category: 2), Self.row("a", category: 1), Self.row("b", category: 2)]
        let mine = Oracle.sectioned(bound.evaluate(rows), by: "category")
        var engine = try LiveResults(
            predicate: bound.predicate, order: bound.order, sectionKey: bound.sectionKey, limit: bound.limit)
        engine.reset(rows: rows)
        #expect(mine.sections.map(\.key) == [.int(1), .int(2)])
        #expect(StateDigest.of(mine) == StateDigest.of(engine.snapshot))
    }

    @Test("map region candidates follow from the seqs each move returned at")
    func regionCandidates() {
        let r0: [Double] = [0, 0, 1, 1]
        let r1: [Double] = [1, 1, 2, 2]
        let r2: [Double] = [2, 2, 3, 3]
        let regions = RegionState(r0)
        #expect(regions.candidates(at: 5) == [r0])
        regions.begin(r1)
        #expect(regions.candidates(at: 5) == [r0, r1])
        regions.finish(atSeq: 10)
        #expect(regions.candidates(at: 9) == [r0, r1])
        #expect(regions.candidates(at: 10) == [r0, r1])
        regions.begin(r2)
        regions.finish(atSeq: 20)
        // At 15, r1 was in force (r2's replace took effect at a seq in [10, 20]), or r2 already.
        #expect(regions.candidates(at: 15) == [r1, r2])
        #expect(regions.candidates(at: 25) == [r2])
        #expect(regions.candidates(at: 3) == [r0, r1])
        regions.begin([9, 9, 9, 9])
        regions.abandon()
        #expect(regions.candidates(at: 25) == [r2])
    }

    /// A client refuses a Batch naming a snapshot it did not get whole, and reconnects: nothing wrong shows, so the
    /// soak learns of it from the client's log.
    @Test("a change set that failed validation and a stream that broke the protocol are violations; a lost one is not")
    func loggedViolations() {
        #expect(ViolationLogHandler.isViolation("change set failed validation"))
        #expect(ViolationLogHandler.isViolation("the Sync stream broke the protocol; reconnecting"))
        #expect(!ViolationLogHandler.isViolation("connection lost"))
    }

    @Test("the same seed gives the same workload")
    func seeded() {
        var a = SeededRandom(seed: 42, stream: 3)
        var b = SeededRandom(seed: 42, stream: 3)
        var c = SeededRandom(seed: 42, stream: 4)
        let first = (0..<20).map { _ in a.int(in: 0...1000) }
        #expect(first == (0..<20).map { _ in b.int(in: 0...1000) })
        #expect(first != (0..<20).map { _ in c.int(in: 0...1000) })
        #expect(Workload.controllers.count >= 5)
    }
}
