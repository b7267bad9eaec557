import Foundation
import Testing

@testable import MeridianCore

/// A base schema text and edits of it, each of which must change the fingerprint.
private let baseText = """
    version: 1
    entities:
      Point:
        attributes:
          title: string
          category: { type: int, default: 0 }
          latitude: double?
          longitude: double?
        indexes:
          - [category, title]
        derived:
          coordinate: { coordinate: [latitude, longitude] }
      Author:
        attributes:
          name: string
    """

private let mutations: [(String, String, String)] = [
    ("version", "version: 1", "version: 2"),
    ("attribute renamed", "name: string", "fullName: string"),
    ("attribute type", "title: string", "title: bytes"),
    ("attribute optional", "title: string", "title: string?"),
    ("default value", "default: 0 }", "default: 1 }"),
    ("default type", "{ type: int, default: 0 }", "{ type: double, default: 0 }"),
    ("default removed", "{ type: int, default: 0 }", "{ type: int }"),
    ("index columns", "- [category, title]", "- [title, category]"),
    ("index unique", "- [category, title]", "- { attributes: [category, title], unique: true }"),
    ("index name", "- [category, title]", "- { name: by_category, attributes: [category, title] }"),
    ("index removed", "- [category, title]", "- [category]"),
    ("derived dependencies", "coordinate: [latitude, longitude]", "coordinate: [longitude, latitude]"),
    ("derived renamed", "coordinate: { coordinate", "position: { coordinate"),
    ("id policy", "  Author:\n    attributes:", "  Author:\n    id: client\n    attributes:"),
    ("entity renamed", "Author:", "Writer:"),
    ("attribute added", "name: string", "name: string\n      born: timestamp?"),
]

@Suite struct SchemaFingerprintTests {
    @Test("the demo schema's canonical description and fingerprint are golden")
    func golden() throws {
        let schema = try Schema.load(contentsOf: SchemaFixtures.demoPath())
        #expect(
            schema.canonicalDescription == """
                schema 1
                entity Point id=auto
                  attribute title string
                  attribute category int default=0
                  attribute latitude double?
                  attribute longitude double?
                  attribute updatedAt timestamp?
                  index category_title (category, title)
                  index by_updated (updatedAt)
                  derived coordinate coordinate(latitude, longitude)
                entity FamilyMember id=auto
                  attribute name string
                  attribute address string default=""
                  attribute latitude double?
                  attribute longitude double?
                  index name (name)
                  derived coordinate coordinate(latitude, longitude)
                entity Author id=client
                  attribute firstName string
                  attribute lastName string
                  index lastName_firstName (lastName, firstName)

                """
        )
        #expect(schema.fingerprint == "6701fc329859bd3f")
    }

    @Test("FNV-1a 64 matches the published test vectors")
    func fnvVectors() {
        #expect(FNV1a64.hex(of: "".utf8) == "cbf29ce484222325")
        #expect(FNV1a64.hex(of: "a".utf8) == "af63dc4c8601ec8c")
        #expect(FNV1a64.hex(of: "foobar".utf8) == "85944171f73967e8")
    }

    @Test("equal schemas have equal fingerprints however they are written")
    func equalSchemas() throws {
        let base = try Schema.parse(yaml: baseText)
        let reformatted = try Schema.parse(
            yaml: """
                # comments and layout do not matter
                {
                  "version": 1,
                  "entities": {
                    "Point": {
                      "id": "auto",
                      "attributes": {
                        "title": {"type": "string", "optional": false},
                        "category": {"default": 0, "type": "int"},
                        "latitude": {"type": "double?"},
                        "longitude": "double?"
                      },
                      "indexes": [{"name": "category_title", "attributes": ["category", "title"]}],
                      "derived": {"coordinate": {"kind": "coordinate", "latitude": "latitude", "longitude": "longitude"}}
                    },
                    "Author": {"attributes": {"name": "string"}}
                  }
                }
                """)
        #expect(base == reformatted)
        #expect(base.canonicalDescription == reformatted.canonicalDescription)
        #expect(base.fingerprint == reformatted.fingerprint)
        #expect(base.fingerprint == (try Schema.parse(yaml: baseText)).fingerprint)
        #expect(base.fingerprint.count == 16)
        #expect(base.fingerprint.allSatisfy { "0123456789abcdef".contains($0) })
    }

    @Test("any change to the schema changes the fingerprint", arguments: mutations)
    func mutation(_ name: String, _ original: String, _ replacement: String) throws {
        #expect(baseText.contains(original), "mutation \(name) does not apply")
        let base = try Schema.parse(yaml: baseText)
        let changedText = baseText.replacingFirst(original, with: replacement)
        let changed = try Schema.parse(yaml: changedText)
        #expect(changed != base)
        #expect(changed.canonicalDescription != base.canonicalDescription)
        #expect(changed.fingerprint != base.fingerprint)
    }

    @Test("all mutations are distinct from each other")
    func mutationsDistinct() throws {
        var fingerprints: Set<String> = [try Schema.parse(yaml: baseText).fingerprint]
        for (_, original, replacement) in mutations {
            let changed = try Schema.parse(yaml: baseText.replacingFirst(original, with: replacement))
            fingerprints.insert(changed.fingerprint)
        }
        #expect(fingerprints.count == mutations.count + 1)
    }

    @Test("defaults of every type appear in the canonical description")
    func canonicalDefaults() throws {
        let schema = try Schema.load(contentsOf: SchemaFixtures.path("all-types.yaml"))
        #expect(
            schema.canonicalDescription == #"""
                schema 3
                entity Sample id=client
                  attribute s string default="hello, \"world\""
                  attribute i int default=-42
                  attribute d double default=2.5
                  attribute b bool default=true
                  attribute t timestamp default="2024-05-01T10:30:00.25Z"
                  attribute x bytes default=x'00ff10'
                  attribute y bytes default=x'00ff10'
                  attribute z bytes default=x'00ff10'
                  attribute o string?
                  attribute n int?
                  index s (s)
                  index unique_i unique (i)
                  index id_t (id, t)

                """#
        )
    }
}

extension String {
    /// The string with the first occurrence of `target` replaced.
    fileprivate func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let range = self.range(of: target) else { return self }
        return self.replacingCharacters(in: range, with: replacement)
    }
}
