// MARK: - map --format jsonl

import MeridianClient
import MeridianCore
import Testing

@testable import MeridianCLI

/// The map's JSON lines are written as bytes; each must be the line the `JSON` tree of the contract writes.
@Suite struct MapEventsTests {
    /// `{"id":ID,"lat":…,"lon":…,"title":…}` as a tree.
    static func annotationTree(_ a: Annotation) -> JSON {
        .object([
            ("id", .string(a.id)), ("lat", .double(a.coordinate.latitude)), ("lon", .double(a.coordinate.longitude)),
            ("title", a.title.map(JSON.string) ?? .null),
        ])
    }

    /// An event's line as a tree (`annotation` is what `shown` held for a remove, else the event's).
    static func eventTree(_ event: MapEvent, annotation: Annotation?, seq: Int64) -> JSON {
        .object([
            ("event", .string(event.kind.description)), ("id", .string(event.id)),
            ("lat", annotation.map { .double($0.coordinate.latitude) } ?? .null),
            ("lon", annotation.map { .double($0.coordinate.longitude) } ?? .null),
            ("title", annotation?.title.map(JSON.string) ?? .null), ("seq", .integer(seq)),
        ])
    }

    @Test("snapshot and event lines written as bytes are the JSON tree's lines; unplaced events print nothing")
    func linesMatchJSONText() {
        var random = SplitMix(seed: 2_026_112_93)
        let titles: [String?] = [nil, "", "Café \"Aurora\"", "a\nb", "😀", "plain"]
        func annotation(_ id: String) -> Annotation {
            Annotation(
                id: id,
                coordinate: Coordinate(
                    latitude: Double(random.next(180_000)) / 1000 - 90, longitude: Double(random.next(3_600)) / 10 - 180
                ),
                title: titles[random.next(titles.count)])
        }
        var shown: [String: Annotation] = [:]
        for i in 0..<300 {
            let id = "p\(i)\(i % 7 == 0 ? "é" : "")"
            shown[id] = annotation(id)
        }
        let sorted = shown.values.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
        let expected =
            JSON.object([
                ("event", .string("snapshot")), ("seq", .integer(42)),
                ("annotations", .array(sorted.map(Self.annotationTree))),
            ]).text + "\n"
        // Added in id order (taken as it is), in another order (sorted), or not all of them (sorted).
        for added in [sorted.map(\.id), sorted.map(\.id).reversed(), Array(sorted.map(\.id).dropFirst())] {
            #expect(
                String(decoding: MapEvents.snapshot(seq: 42, shown: shown, added: added), as: UTF8.self) == expected)
        }
        #expect(
            String(decoding: MapEvents.snapshot(seq: 0, shown: [:], added: []), as: UTF8.self)
                == #"{"event":"snapshot","seq":0,"annotations":[]}"# + "\n")

        let kinds: [MapEvent.Kind] = [.add, .remove, .move, .retitle, .unplaced]
        for seq in 1...500 {
            let id = "p\(random.next(400))"
            let kind = kinds[random.next(kinds.count)]
            let event = MapEvent(kind, id: id, annotation: kind == .remove || kind == .unplaced ? nil : annotation(id))
            let before = shown
            var out = JSONBytes(capacity: 0)
            let printed = MapEvents.write(event, shown: &shown, seq: Int64(seq), to: &out)
            if kind == .unplaced {
                #expect(!printed && out.bytes.isEmpty && shown == before)
                continue
            }
            let annotation = kind == .remove ? before[id] : event.annotation
            #expect(printed)
            #expect(out.text == Self.eventTree(event, annotation: annotation, seq: Int64(seq)).text + "\n")
            #expect(shown[id] == (kind == .remove ? nil : event.annotation))
        }
    }
}
