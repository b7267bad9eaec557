// MARK: - Shared fixtures for the CLI's unit tests

import MeridianCore

@testable import MeridianCLI

extension ValueRendering {
    /// The JSON object of a row's values, every attribute of the entity in declaration order (null when absent): the
    /// tree the CLI's byte writers (`JSONBytes.append(valuesOf:entity:)`) are pinned against.
    static func valuesJSON(_ row: Row, entity: EntitySchema) -> JSON {
        .object(entity.attributes.map { ($0.name, Self.json(row[$0.name])) })
    }

    /// A row as `{"id":ID,"values":{…}}`, the shape of `query`, `export` and `watch` output, as a JSON tree.
    static func rowJSON(_ row: Row, entity: EntitySchema) -> JSON {
        .object([("id", .string(row.id)), ("values", Self.valuesJSON(row, entity: entity))])
    }
}

/// The repository's root, found from this file's path.
let repositoryRoot: String = {
    var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    while let last = parts.last, last != "Tests" { parts.removeLast() }
    parts.removeLast()
    return parts.joined(separator: "/")
}()

/// `Schemas/demo.yaml`: Point (auto ids, coordinate), FamilyMember, Author (client ids).
let demoSchema: Schema = {
    try! Schema.load(contentsOf: repositoryRoot + "/Schemas/demo.yaml")
}()

/// A schema with one attribute of every type, for value parsing.
let allTypesSchema: Schema = {
    try! Schema.parse(
        yaml: """
            version: 1
            entities:
              Thing:
                attributes:
                  s: string?
                  i: int?
                  d: double?
                  b: bool?
                  t: timestamp?
                  x: bytes?
                  req: { type: string, default: "r" }
            """)
}()

var point: EntitySchema { demoSchema.entity(named: "Point")! }
var thing: EntitySchema { allTypesSchema.entity(named: "Thing")! }
