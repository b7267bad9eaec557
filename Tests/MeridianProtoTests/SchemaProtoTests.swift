import MeridianCore
import MeridianProto
import SwiftProtobuf
import Testing

/// Schemas through GetSchemaResponse and back: equal schema, equal fingerprint.
@Suite struct SchemaProtoTests {
    /// The repository's `Schemas/demo.yaml`, found from this source file's path.
    static func demoSchema(filePath: String = #filePath) throws -> Schema {
        var components = filePath.split(separator: "/", omittingEmptySubsequences: false)
        components.removeLast(3)  // SchemaProtoTests.swift, MeridianProtoTests, Tests
        return try Schema.load(contentsOf: components.joined(separator: "/") + "/Schemas/demo.yaml")
    }

    @Test("the demo schema goes through the wire and its bytes and comes back equal, with the same fingerprint")
    func demoRoundTrip() throws {
        let schema = try Self.demoSchema()
        let response = Meridian_V1_GetSchemaResponse(schema)
        #expect(response.fingerprint == schema.fingerprint)
        let bytes: [UInt8] = try response.serializedBytes()
        let decoded = try Meridian_V1_GetSchemaResponse(serializedBytes: bytes)
        let back = try Schema(decoded.schema)
        #expect(back == schema)
        #expect(back.fingerprint == schema.fingerprint)
        #expect(back.fingerprint == decoded.fingerprint)
        #expect(back.canonicalDescription == schema.canonicalDescription)
    }

    @Test("every attribute type, optionality, defaults (none, nil, values), unique indexes and id policies")
    func everyFeatureRoundTrips() throws {
        let schema = try Schema(
            version: 7,
            entities: [
                EntitySchema(
                    name: "Everything",
                    attributes: [
                        Attribute(name: "s", type: .string, defaultValue: "dflt é"),
                        Attribute(name: "i", type: .int, isOptional: true, defaultValue: .null),
                        Attribute(name: "d", type: .double, defaultValue: .double(-0.0)),
                        Attribute(name: "b", type: .bool, defaultValue: false),
                        Attribute(name: "y", type: .bytes, isOptional: true, defaultValue: .bytes([])),
                        Attribute(name: "t", type: .timestamp, defaultValue: .timestamp(Timestamp(microseconds: -1))),
                        Attribute(name: "lat", type: .double, isOptional: true),
                        Attribute(name: "lon", type: .int, isOptional: true),
                    ],
                    indexes: [Index(name: "by_s", attributes: ["s", "i"], isUnique: true), Index(attributes: ["t"])],
                    derived: [DerivedAttribute(name: "here", kind: .coordinate(latitude: "lat", longitude: "lon"))],
                    idPolicy: .client
                ),
                EntitySchema(name: "Empty", attributes: []),
            ]
        )
        let proto = Meridian_V1_Schema(schema)
        #expect(proto.entities[0].attributes[1].hasDefaultValue)  // default nil is sent as an explicit null
        #expect(!proto.entities[0].attributes[6].hasDefaultValue)  // no default is sent as nothing
        let back = try Schema(Meridian_V1_Schema(serializedBytes: try proto.serializedBytes() as [UInt8]))
        #expect(back == schema)
        #expect(back.fingerprint == schema.fingerprint)
        #expect(back.entities[0].attribute(named: "i")?.defaultValue?.isNull == true)
        #expect(back.entities[0].attribute(named: "lat")?.defaultValue == nil)
    }

    @Test("an unset attribute type is rejected, naming the entity and attribute")
    func unsetTypeRejected() throws {
        var proto = Meridian_V1_Schema(try Self.demoSchema())
        proto.entities[0].attributes[0].type = .unspecified
        let error = try #require(throws: ProtoConversionError.self) { try Schema(proto) }
        #expect(error.code == .unknownEnumValue)
        #expect(error.message == "entity Point: attribute title: attribute type is not set")
    }

    @Test("an unknown attribute type number is rejected")
    func unknownTypeRejected() throws {
        var proto = Meridian_V1_Schema(try Self.demoSchema())
        proto.entities[0].attributes[0].type = .UNRECOGNIZED(99)
        let error = try #require(throws: ProtoConversionError.self) { try Schema(proto) }
        #expect(error.message == "entity Point: attribute title: unknown attribute type 99")
    }

    @Test("a wire schema that is not a valid schema is rejected with the SchemaError as cause")
    func invalidSchemaRejected() throws {
        var proto = Meridian_V1_Schema(try Self.demoSchema())
        proto.entities.append(proto.entities[0])
        let error = try #require(throws: ProtoConversionError.self) { try Schema(proto) }
        #expect(error.code == .invalidSchema)
        #expect(error.message == "entity 'Point' is declared twice")
        #expect(error.cause is SchemaError)
    }

    @Test("a NaN default is rejected")
    func nanDefaultRejected() throws {
        var proto = Meridian_V1_Schema(try Self.demoSchema())
        var nan = Meridian_V1_Value()
        nan.doubleValue = .nan
        proto.entities[0].attributes[2].defaultValue = nan
        let error = try #require(throws: ProtoConversionError.self) { try Schema(proto) }
        #expect(error.code == .invalidValue)
        #expect(error.message == "entity Point: attribute latitude: NaN is not a valid double")
    }

    @Test("an unset id policy means auto")
    func unsetIDPolicyIsAuto() throws {
        var proto = Meridian_V1_Schema(try Self.demoSchema())
        proto.entities[2].idPolicy = .unspecified
        #expect(try Schema(proto).entities[2].idPolicy == .auto)
    }
}
