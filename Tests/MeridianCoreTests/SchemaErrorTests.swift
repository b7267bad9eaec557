import MeridianCore
import Testing

/// One invalid schema text and the exact error it must produce.
struct InvalidSchemaCase: CustomTestStringConvertible, Sendable {
    let name: String
    let text: String
    let expected: String
    var testDescription: String { self.name }
}

let invalidSchemaCases: [InvalidSchemaCase] = [
    InvalidSchemaCase(
        name: "unknown top-level key",
        text: """
            version: 1
            entities: {}
            options: 3
            """,
        expected:
            #"test.yaml:3:1: unknownKey: unknown key 'options' in the schema; expected 'version', 'entities', 'auth'"#),
    InvalidSchemaCase(
        name: "typo with suggestion",
        text: """
            version: 1
            entities:
              Point:
                atributes:
                  title: string
            """,
        expected:
            #"test.yaml:4:5: unknownKey: unknown key 'atributes' in entity 'Point' (did you mean 'attributes'?); expected 'id', 'attributes', 'indexes', 'derived', 'rules'"#
    ),
    InvalidSchemaCase(
        name: "bad type",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: strng
            """,
        expected:
            #"test.yaml:5:14: unknownType: Point.title: unknown type 'strng' (did you mean 'string'?); the types are string, int, double, bool, bytes, timestamp (add '?' for optional)"#
    ),
    InvalidSchemaCase(
        name: "bad type, no suggestion",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: { type: text }
            """,
        expected:
            #"test.yaml:5:22: unknownType: Point.title: unknown type 'text'; the types are string, int, double, bool, bytes, timestamp (add '?' for optional)"#
    ),
    InvalidSchemaCase(
        name: "bad int default",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  category: { type: int, default: north }
            """,
        expected: #"test.yaml:5:39: invalidDefault: Point.category: default 'north' is not an int"#),
    InvalidSchemaCase(
        name: "fractional int default",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  category: { type: int, default: 2.5 }
            """,
        expected:
            #"test.yaml:5:39: invalidDefault: Point.category: default '2.5' is not an int (it has a fraction; make the attribute a double)"#
    ),
    InvalidSchemaCase(
        name: "NaN double default",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  latitude: { type: double, default: .nan }
            """,
        expected: #"test.yaml:5:42: invalidDefault: Point.latitude: default is NaN, which no attribute accepts"#),
    InvalidSchemaCase(
        name: "bad timestamp default",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  updatedAt: { type: timestamp, default: "2024-13-01" }
            """,
        expected:
            #"test.yaml:5:46: invalidDefault: Point.updatedAt: default '2024-13-01' is not a timestamp (write ISO-8601, e.g. 2024-05-01T12:30:00Z)"#
    ),
    InvalidSchemaCase(
        name: "bad bytes default",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  blob: { type: bytes, default: "hex:abc" }
            """,
        expected:
            #"test.yaml:5:37: invalidDefault: Point.blob: default 'hex:abc' is not valid bytes (after 'hex:' write an even number of hex digits)"#
    ),
    InvalidSchemaCase(
        name: "unquoted string default",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: { type: string, default: 12 }
            """,
        expected: #"test.yaml:5:39: invalidDefault: Point.title: default '12' is not a string (quote it: "12")"#),
    InvalidSchemaCase(
        name: "null default on a required attribute",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: { type: string, default: null }
            """,
        expected:
            #"test.yaml:5:39: invalidDefault: Point.title: a required attribute cannot default to null (make it optional with 'string?')"#
    ),
    InvalidSchemaCase(
        name: "duplicate entity",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: string
              Author:
                attributes:
                  name: string
              Point:
                attributes:
                  name: string
            """,
        expected:
            #"test.yaml:9:3: duplicateName: key 'Point' is declared twice in the same mapping (first at line 3, column 3)"#
    ),
    InvalidSchemaCase(
        name: "duplicate attribute key",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: string
                  category: int
                  title: double
            """,
        expected:
            #"test.yaml:7:7: duplicateName: key 'title' is declared twice in the same mapping (first at line 5, column 7)"#
    ),
    InvalidSchemaCase(
        name: "duplicate key in a JSON object",
        text: """
            {"version": 1, "entities": {"Point": {"attributes": {"title": "string", "title": "int"}}}}
            """,
        expected:
            #"test.yaml:1:73: duplicateName: key 'title' is declared twice in the same mapping (first at line 1, column 54)"#
    ),
    InvalidSchemaCase(
        name: "index on unknown attribute",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: string
                  category: int
                indexes:
                  - [category, titel]
            """,
        expected:
            #"test.yaml:8:20: unknownAttribute: Point: index names unknown attribute 'titel' (did you mean 'title'?)"#),
    InvalidSchemaCase(
        name: "derived dependency on a string attribute",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: string
                  longitude: double
                derived:
                  coordinate: { coordinate: [title, longitude] }
            """,
        expected:
            #"test.yaml:8:34: typeMismatch: Point.coordinate: coordinate attribute 'title' must be double or int, not string"#
    ),
    InvalidSchemaCase(
        name: "derived dependency on an unknown attribute",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  lat: double
                  lon: double
                derived:
                  coordinate: { kind: coordinate, latitude: lat, longitude: long }
            """,
        expected:
            #"test.yaml:8:65: unknownAttribute: Point.coordinate: depends on unknown attribute 'long' (did you mean 'lon'?)"#
    ),
    InvalidSchemaCase(
        name: "reserved attribute name id",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  id: string
            """,
        expected:
            #"test.yaml:5:7: invalidName: Point.id: 'id' is reserved: every entity has an implicit string primary key 'id' (choose how it is set with the entity's 'id: auto' or 'id: client')"#
    ),
    InvalidSchemaCase(
        name: "YAML syntax error",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: [string
            """,
        expected:
            #"test.yaml:6:1: syntax: did not find expected ',' or ']' (while parsing a flow sequence at line 5, column 14)"#
    ),
    InvalidSchemaCase(
        name: "YAML syntax error, bad indentation",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: string
                 category: int
            """,
        expected:
            #"test.yaml:6:6: syntax: did not find expected key (while parsing a block mapping at line 4, column 5)"#),
    InvalidSchemaCase(
        name: "empty file", text: "",
        expected: #"test.yaml:1:1: missingKey: the schema is empty; it needs 'version' and 'entities'"#),
    InvalidSchemaCase(
        name: "only comments", text: "# nothing yet\n",
        expected: #"test.yaml:1:1: missingKey: the schema is empty; it needs 'version' and 'entities'"#),
    InvalidSchemaCase(
        name: "entities not a mapping",
        text: """
            version: 1
            entities:
              - Point
              - Author
            """,
        expected:
            #"test.yaml:3:3: typeMismatch: 'entities' must be a mapping from entity names to entities, not a list"#),
    InvalidSchemaCase(
        name: "missing entities", text: "version: 1\n",
        expected: #"test.yaml:1:1: missingKey: the schema has no 'entities'"#),
    InvalidSchemaCase(
        name: "missing version", text: "entities: {}\n",
        expected: #"test.yaml:1:1: missingKey: the schema has no 'version'"#),
    InvalidSchemaCase(
        name: "version zero", text: "version: 0\nentities: {}\n",
        expected: #"test.yaml:1:10: typeMismatch: 'version' must be 1 or more, not 0"#),
    InvalidSchemaCase(
        name: "version in hex", text: "version: 0x10\nentities: {}\n",
        expected: #"test.yaml:1:10: typeMismatch: 'version' must be a plain decimal integer, not '0x10'"#),
    InvalidSchemaCase(
        name: "entity not a mapping", text: "version: 1\nentities:\n  Point: string\n",
        expected:
            #"test.yaml:3:10: typeMismatch: entity 'Point' must be a mapping with 'attributes' (and optionally 'id', 'indexes', 'derived'), not a string"#
    ),
    InvalidSchemaCase(
        name: "attributes is null", text: "version: 1\nentities:\n  Point:\n    attributes:\n",
        expected:
            #"test.yaml:4:16: typeMismatch: Point: 'attributes' must be a mapping from attribute names to types, not null"#
    ),
    InvalidSchemaCase(
        name: "version not an integer", text: "version: one\nentities: {}\n",
        expected: #"test.yaml:1:10: typeMismatch: 'version' must be an integer, not a string"#),
    InvalidSchemaCase(
        name: "missing type in the long form",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: { optional: true }
            """,
        expected: #"test.yaml:5:14: missingKey: attribute Point.title has no 'type'"#),
    InvalidSchemaCase(
        name: "unknown id policy",
        text: """
            version: 1
            entities:
              Point:
                id: clent
                attributes:
                  title: string
            """,
        expected:
            #"test.yaml:4:9: typeMismatch: Point: unknown id policy 'clent' (did you mean 'client'?); expected auto or client"#
    ),
    InvalidSchemaCase(
        name: "entity name not an identifier",
        text: """
            version: 1
            entities:
              Family Member:
                attributes:
                  name: string
            """,
        expected:
            #"test.yaml:3:3: invalidName: entity name 'Family Member' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)"#),
    InvalidSchemaCase(
        name: "optional not a bool",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: { type: string, optional: maybe }
            """,
        expected: #"test.yaml:5:40: typeMismatch: Point.title: 'optional' must be true or false, not 'maybe'"#),
    InvalidSchemaCase(
        name: "duplicate index name",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: string
                indexes:
                  - [title]
                  - { name: title, attributes: [title], unique: true }
            """,
        expected: #"test.yaml:8:9: duplicateName: Point: index 'title' is declared twice"#),
    InvalidSchemaCase(
        name: "entities differing only in letter case",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: string
              point:
                attributes:
                  name: string
            """,
        expected:
            #"test.yaml:6:3: duplicateName: entity 'point' differs from 'Point' only in letter case: SQLite's names ignore case, so they would be one table"#
    ),
    InvalidSchemaCase(
        name: "attributes differing only in letter case",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: string
                  Title: string
            """,
        expected:
            #"test.yaml:6:7: duplicateName: Point: attribute 'Title' differs from 'title' only in letter case: SQLite's names ignore case, so they would be one column"#
    ),
    InvalidSchemaCase(
        name: "indexes differing only in letter case",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title: string
                indexes:
                  - { name: byTitle, attributes: [title] }
                  - { name: BYTITLE, attributes: [title], unique: true }
            """,
        expected:
            #"test.yaml:8:9: duplicateName: Point: index 'BYTITLE' differs from 'byTitle' only in letter case: SQLite's names ignore case, so they would be one index"#
    ),
    InvalidSchemaCase(
        name: "a reserved prefix in capitals",
        text: """
            version: 1
            entities:
              Meridian_Log:
                attributes:
                  title: string
            """,
        expected: #"test.yaml:3:3: invalidName: entity name 'Meridian_Log' uses a reserved prefix (meridian_, sqlite_)"#
    ),
    InvalidSchemaCase(
        name: "unknown derived kind",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  lat: double
                  lon: double
                derived:
                  position: { coordinates: [lat, lon] }
            """,
        expected:
            #"test.yaml:8:19: unknownKey: Point.position: unknown derived kind 'coordinates' (did you mean 'coordinate'?); the kinds are coordinate"#
    ),
    InvalidSchemaCase(
        name: "attribute without a type",
        text: """
            version: 1
            entities:
              Point:
                attributes:
                  title:
            """,
        expected:
            #"test.yaml:5:13: typeMismatch: Point.title: expected a type such as 'string' or 'double?', found nothing"#),
]

@Suite struct SchemaErrorTests {
    @Test("invalid schema texts fail with file, line, column, code and message", arguments: invalidSchemaCases)
    func invalid(_ testCase: InvalidSchemaCase) {
        let error = #expect(throws: SchemaError.self) {
            _ = try Schema.parse(yaml: testCase.text, file: "test.yaml")
        }
        #expect(error?.description == testCase.expected)
    }
}
