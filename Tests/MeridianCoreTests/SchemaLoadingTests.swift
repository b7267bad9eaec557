import MeridianCore
import Testing

@Suite struct SchemaLoadingTests {
    @Test("Schemas/demo.yaml parses to the expected entities, attributes, indexes and derived attributes")
    func demo() throws {
        let schema = try Schema.load(contentsOf: SchemaFixtures.demoPath())
        #expect(schema.version == 1)
        #expect(schema.entities.map(\.name) == ["Point", "FamilyMember", "Author"])
        let point = try schema.requireEntity("Point")
        #expect(point.attributes.map(\.name) == ["title", "category", "latitude", "longitude", "updatedAt"])
        #expect(point.attributes.map(\.type) == [.string, .int, .double, .double, .timestamp])
        #expect(point.attributes.map(\.isOptional) == [false, false, true, true, true])
        #expect(point.attribute(named: "category")?.defaultValue == .int(0))
        #expect(point.derivedAttribute(named: "coordinate")?.dependencies == ["latitude", "longitude"])
        #expect(point.indexes.map(\.name) == ["category_title", "by_updated"])
        #expect(try schema.requireEntity("Author").idPolicy == .client)
        #expect(schema == (try SchemaFixtures.expectedDemo()))
    }

    @Test("a JSON schema file parses to the same schema as the YAML one")
    func jsonFile() throws {
        let json = try Schema.load(contentsOf: SchemaFixtures.path("demo.json"))
        let yaml = try Schema.load(contentsOf: SchemaFixtures.demoPath())
        #expect(json == yaml)
        #expect(json.fingerprint == yaml.fingerprint)
    }

    @Test("JSON text parses the same as the equivalent YAML text")
    func jsonText() throws {
        let yaml = try Schema.parse(
            yaml: """
                version: 2
                entities:
                  Author:
                    id: client
                    attributes:
                      firstName: string
                      lastName: { type: string, optional: true, default: "Doe" }
                    indexes:
                      - [lastName]
                """)
        let json = try Schema.parse(
            yaml: """
                {"version": 2, "entities": {"Author": {"id": "client", "attributes": {
                  "firstName": "string", "lastName": {"type": "string?", "default": "Doe"}},
                  "indexes": [{"attributes": ["lastName"]}]}}}
                """)
        #expect(json == yaml)
    }

    @Test("every type's default is parsed by the attribute's type")
    func allTypes() throws {
        let schema = try Schema.load(contentsOf: SchemaFixtures.path("all-types.yaml"))
        #expect(schema.version == 3)
        let sample = try schema.requireEntity("Sample")
        #expect(sample.idPolicy == .client)
        let defaults = sample.attributes.map { "\($0.name)=\($0.defaultValue.map { "\($0)" } ?? "none")" }
        #expect(
            defaults == [
                #"s="hello, \"world\"""#,
                "i=-42",
                "d=2.5",
                "b=true",
                #"t="2024-05-01T10:30:00.25Z""#,
                "x=x'00ff10'",
                "y=x'00ff10'",
                "z=x'00ff10'",
                "o=none",
                "n=none",
            ])
        #expect(sample.attribute(named: "o")?.isOptional == true)
        #expect(sample.attribute(named: "n")?.type == .int)
        #expect(
            sample.indexes == [
                Index(attributes: ["s"]),
                Index(name: "unique_i", attributes: ["i"], isUnique: true),
                Index(attributes: ["id", "t"]),
            ])
    }

    @Test(
        "defaults of each type",
        arguments: [
            ("int", "0", Value.int(0)),
            ("int", "-9223372036854775808", .int(.min)),
            ("double", "3", .double(3)),
            ("double", "-1.5e3", .double(-1500)),
            ("double", "-.inf", .double(-.infinity)),
            ("bool", "false", .bool(false)),
            ("string", "''", .string("")),
            ("string", "\"é\\n\"", .string("é\n")),
            ("timestamp", "2024-05-01", .timestamp(Timestamp(microseconds: 1_714_521_600_000_000))),
            ("timestamp", "\"1970-01-01T00:00:00.000001Z\"", .timestamp(Timestamp(microseconds: 1))),
            ("bytes", "'hex:'", .bytes([])),
            ("bytes", "'base64:aGk='", .bytes([104, 105])),
            ("bytes", "'base64:aGk'", .bytes([104, 105])),
        ]
    )
    func defaults(type: String, text: String, expected: Value) throws {
        let schema = try Schema.parse(
            yaml: """
                version: 1
                entities:
                  E:
                    attributes:
                      a: { type: \(type), default: \(text) }
                """)
        let value = try #require(schema.entities.first?.attribute(named: "a")?.defaultValue)
        #expect(value == expected)
        #expect(value.type == expected.type)
    }

    @Test("the short and long forms of attributes, indexes and derived attributes are equivalent")
    func forms() throws {
        let short = try Schema.parse(
            yaml: """
                version: 1
                entities:
                  P:
                    attributes:
                      lat: double?
                      lon: double
                    indexes: [lat, [lat, lon]]
                    derived:
                      c: { coordinate: [lat, lon] }
                """)
        let long = try Schema.parse(
            yaml: """
                version: 1
                entities:
                  P:
                    id: auto
                    attributes:
                      lat: { type: double, optional: true }
                      lon: { type: double, optional: false }
                    indexes:
                      - { attributes: [lat] }
                      - { name: lat_lon, attributes: [lat, lon], unique: false }
                    derived:
                      c: { kind: coordinate, latitude: lat, longitude: lon }
                """)
        #expect(short == long)
        #expect(short.canonicalDescription == long.canonicalDescription)
    }

    @Test("declaration order is kept")
    func order() throws {
        let schema = try Schema.parse(
            yaml: """
                version: 1
                entities:
                  Zeta: { attributes: { z: int, a: int, m: int } }
                  Alpha: { attributes: { b: int } }
                """)
        #expect(schema.entities.map(\.name) == ["Zeta", "Alpha"])
        #expect(schema.entities[0].attributes.map(\.name) == ["z", "a", "m"])
    }

    @Test("empty 'indexes' and 'derived' mean none")
    func emptyOptionalSections() throws {
        let schema = try Schema.parse(
            yaml: """
                version: 1
                entities:
                  A:
                    attributes: {}
                    indexes:
                    derived: {}
                """)
        #expect(schema.entities == [EntitySchema(name: "A", attributes: [])])
    }

    @Test("YAML anchors and aliases are followed")
    func aliases() throws {
        let schema = try Schema.parse(
            yaml: """
                version: 1
                entities:
                  A:
                    attributes: &shared
                      latitude: double?
                      longitude: double?
                  B:
                    attributes: *shared
                """)
        #expect(schema.entities[0].attributes == schema.entities[1].attributes)
    }
}

@Suite struct SchemaFileErrorTests {
    @Test("a missing file is unreadable and named")
    func missingFile() {
        let path = SchemaFixtures.path("no-such-schema.yaml")
        #expect {
            _ = try Schema.load(contentsOf: path)
        } throws: { error in
            (error as? SchemaError)?.description
                == "\(path): unreadable: cannot read schema file '\(path)': no such file"
        }
    }

    @Test("a directory is unreadable")
    func directory() {
        let path = SchemaFixtures.path("")
        #expect {
            _ = try Schema.load(contentsOf: path)
        } throws: { error in
            (error as? SchemaError)?.description
                == "\(path): unreadable: cannot read schema file '\(path)': it is a directory"
        }
    }

    @Test("a file that is not UTF-8 is unreadable")
    func notUTF8() {
        let path = SchemaFixtures.path("not-utf8.yaml")
        #expect {
            _ = try Schema.load(contentsOf: path)
        } throws: { error in
            (error as? SchemaError)?.description
                == "\(path): unreadable: cannot read schema file '\(path)': it is not UTF-8 text"
        }
    }

    @Test("errors in a loaded file name its path, line and column")
    func errorNamesPath() {
        let path = SchemaFixtures.path("bad-default.yaml")
        #expect {
            _ = try Schema.load(contentsOf: path)
        } throws: { error in
            (error as? SchemaError)?.description
                == "\(path):5:42: invalidDefault: Point.latitude: default 'north' is not a double"
        }
    }

    @Test("without a file name, errors give the line and column")
    func noFileName() throws {
        let error = #expect(throws: SchemaError.self) {
            _ = try Schema.parse(yaml: "version: 1\nentities: {}\nentites: {}\n")
        }
        #expect(
            error?.description
                == "line 3, column 1: unknownKey: unknown key 'entites' in the schema (did you mean 'entities'?); "
                + "expected 'version', 'entities', 'auth'"
        )
        #expect(error?.code == .unknownKey)
        #expect(error?.line == 3)
        #expect(error?.column == 1)
        #expect(error?.file == nil)
    }
}
