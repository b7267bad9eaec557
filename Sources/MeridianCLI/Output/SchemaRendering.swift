// MARK: - The served schema as a schema file

internal import MeridianCore

/// Writes a ``Schema`` in the schema-file format (docs/schema.md), YAML or JSON, so that `meridian schema > s.yaml`
/// gives a file the server can load and that describes an equal schema (same fingerprint).
enum SchemaRendering {
    /// The schema as YAML, with the fingerprint in a leading comment.
    static func yaml(_ schema: Schema, fingerprint: String) -> String {
        var lines = ["# fingerprint \(fingerprint)", "version: \(schema.version)"]
        guard !schema.entities.isEmpty else {
            lines.append("entities: {}")
            return lines.joined(separator: "\n")
        }
        lines.append("entities:")
        for entity in schema.entities {
            lines.append("  \(Self.key(entity.name)):")
            lines.append("    id: \(entity.idPolicy.rawValue)")
            if entity.attributes.isEmpty {
                lines.append("    attributes: {}")
            } else {
                lines.append("    attributes:")
                for attribute in entity.attributes {
                    lines.append("      \(Self.key(attribute.name)): \(Self.yamlAttribute(attribute))")
                }
            }
            if !entity.indexes.isEmpty {
                lines.append("    indexes:")
                for index in entity.indexes {
                    var text = "- { name: \(index.name), attributes: [\(index.attributes.joined(separator: ", "))]"
                    if index.isUnique { text += ", unique: true" }
                    lines.append("      " + text + " }")
                }
            }
            if !entity.derived.isEmpty {
                lines.append("    derived:")
                for derived in entity.derived {
                    switch derived.kind {
                    case .coordinate(let latitude, let longitude):
                        lines.append(
                            "      \(Self.key(derived.name)): { coordinate: [\(latitude), \(longitude)] }")
                    }
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The schema as JSON on one line (the schema-file format, which YAML loaders read as well).
    static func json(_ schema: Schema) -> String {
        let entities: [(String, JSON)] = schema.entities.map { entity in
            var members: [(String, JSON)] = [("id", .string(entity.idPolicy.rawValue))]
            members.append(
                (
                    "attributes",
                    .object(
                        entity.attributes.map { attribute in
                            let type = attribute.type.rawValue + (attribute.isOptional ? "?" : "")
                            guard let value = attribute.defaultValue, !value.isNull else {
                                return (attribute.name, .string(type))
                            }
                            return (
                                attribute.name,
                                .object([("type", .string(type)), ("default", ValueRendering.json(value))])
                            )
                        })
                ))
            members.append(
                (
                    "indexes",
                    .array(
                        entity.indexes.map { index in
                            .object([
                                ("name", .string(index.name)),
                                ("attributes", .array(index.attributes.map(JSON.string))),
                                ("unique", .bool(index.isUnique)),
                            ])
                        })
                ))
            members.append(
                (
                    "derived",
                    .object(
                        entity.derived.map { derived in
                            switch derived.kind {
                            case .coordinate(let latitude, let longitude):
                                (
                                    derived.name,
                                    .object([("coordinate", .array([.string(latitude), .string(longitude)]))])
                                )
                            }
                        })
                ))
            return (entity.name, .object(members))
        }
        return JSON.object([("version", .integer(schema.version)), ("entities", .object(entities))]).text
    }

    static func yamlAttribute(_ attribute: Attribute) -> String {
        let type = attribute.type.rawValue + (attribute.isOptional ? "?" : "")
        guard let value = attribute.defaultValue, !value.isNull else { return type }
        return "{ type: \(type), default: \(Self.yamlScalar(value)) }"
    }

    /// A default value as a YAML flow scalar that the schema loader reads back as the same value.
    static func yamlScalar(_ value: Value) -> String {
        switch value {
        case .null: "null"
        case .int(let i): String(i)
        case .double(let d): d.isInfinite ? (d < 0 ? "-.inf" : ".inf") : d.description
        case .bool(let b): b ? "true" : "false"
        case .string, .timestamp, .bytes: ValueRendering.json(value).text
        }
    }

    /// A mapping key, quoted when YAML would read it as something other than a string.
    static func key(_ name: String) -> String {
        let special = ["yes", "no", "on", "off", "y", "n", "true", "false", "null", "~"]
        return special.contains(name.lowercased()) ? "\"\(name)\"" : name
    }
}
