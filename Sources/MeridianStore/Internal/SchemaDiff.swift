// MARK: - SchemaDiff

internal import MeridianCore

/// Computes the differences between a store file's schema and a new one, and the refusal message.
enum SchemaDiff {
    static func differences(from old: Schema, to new: Schema) -> [SchemaDifference] {
        var out: [SchemaDifference] = []
        for entity in new.entities {
            guard let previous = old.entity(named: entity.name) else {
                out.append(
                    SchemaDifference(
                        kind: .entityAdded, entity: entity.name, member: nil,
                        summary: "\(entity.name): entity added", isAdditive: true, advice: nil))
                continue
            }
            out += entityDifferences(previous, entity)
        }
        for entity in old.entities where new.entity(named: entity.name) == nil {
            out.append(
                SchemaDifference(
                    kind: .entityRemoved, entity: entity.name, member: nil,
                    summary: "\(entity.name): entity removed (the file has it, the schema does not)", isAdditive: false,
                    advice: "keep the entity in the schema, or export its rows and start a new store file"))
        }
        return out
    }

    static func entityDifferences(_ old: EntitySchema, _ new: EntitySchema) -> [SchemaDifference] {
        var out: [SchemaDifference] = []
        let e = new.name
        if old.idPolicy != new.idPolicy {
            out.append(
                SchemaDifference(
                    kind: .idPolicyChanged, entity: e, member: nil,
                    summary: "\(e): id policy changed from \(old.idPolicy.rawValue) to \(new.idPolicy.rawValue)",
                    isAdditive: true, advice: nil))
        }
        let removed = old.attributes.filter { new.attribute(named: $0.name) == nil }
        for attribute in new.attributes {
            let name = "\(e).\(attribute.name)"
            guard let previous = old.attribute(named: attribute.name) else {
                let additive = !attribute.isRequiredOnInsert
                let advice: String? =
                    additive
                    ? nil : "the rows that exist need a value: give it a default, or make it optional"
                out.append(
                    SchemaDifference(
                        kind: .attributeAdded, entity: e, member: attribute.name,
                        summary: "\(name): attribute added (\(attribute.type.rawValue), \(describe(attribute)))",
                        isAdditive: additive, advice: advice))
                continue
            }
            if previous.type != attribute.type {
                out.append(
                    SchemaDifference(
                        kind: .typeChanged, entity: e, member: attribute.name,
                        summary: "\(name): type changed from \(previous.type.rawValue) to \(attribute.type.rawValue)",
                        isAdditive: false,
                        advice: "add a new attribute of type \(attribute.type.rawValue) and copy the values into it, or migrate the file by hand"))
            }
            if previous.isOptional != attribute.isOptional {
                out.append(
                    SchemaDifference(
                        kind: .optionalityChanged, entity: e, member: attribute.name,
                        summary: "\(name): changed from \(previous.isOptional ? "optional" : "required") to \(attribute.isOptional ? "optional" : "required")",
                        isAdditive: false,
                        advice: attribute.isOptional
                            ? "dropping NOT NULL needs a table rebuild: keep it required, or migrate the file by hand"
                            : "existing rows may hold nil: keep it optional and enforce the rule in writers, or fill the values and migrate by hand"))
            }
            if previous.defaultValue != attribute.defaultValue || previous.defaultValue?.type != attribute.defaultValue?.type {
                if previous.type == attribute.type {
                    out.append(
                        SchemaDifference(
                            kind: .defaultChanged, entity: e, member: attribute.name,
                            summary: "\(name): default changed from \(previous.defaultValue?.description ?? "none") to \(attribute.defaultValue?.description ?? "none")",
                            isAdditive: false,
                            advice: "defaults are part of the table definition: keep the old default, or migrate the file by hand"))
                }
            }
        }
        for attribute in removed {
            var advice = "keep it in the schema (make it optional if it is no longer written), or migrate the file by hand"
            if let renamed = new.attributes.first(where: { old.attribute(named: $0.name) == nil && $0.type == attribute.type }) {
                advice += "; if it was renamed to '\(renamed.name)': renames are not migrated, keep '\(attribute.name)' or copy the values by hand"
            }
            out.append(
                SchemaDifference(
                    kind: .attributeRemoved, entity: e, member: attribute.name,
                    summary: "\(e).\(attribute.name): attribute removed (\(attribute.type.rawValue))", isAdditive: false,
                    advice: advice))
        }
        for index in new.indexes {
            guard let previous = old.indexes.first(where: { $0.name == index.name }) else {
                out.append(
                    SchemaDifference(
                        kind: .indexAdded, entity: e, member: index.name,
                        summary: "\(e): index '\(index.name)' added", isAdditive: true, advice: nil))
                continue
            }
            if previous.attributes != index.attributes || previous.isUnique != index.isUnique {
                out.append(
                    SchemaDifference(
                        kind: .indexChanged, entity: e, member: index.name,
                        summary: "\(e): index '\(index.name)' changed", isAdditive: false,
                        advice: "give the new index a new name and keep the old one, or rebuild the index by hand"))
            }
        }
        for index in old.indexes where !new.indexes.contains(where: { $0.name == index.name }) {
            out.append(
                SchemaDifference(
                    kind: .indexRemoved, entity: e, member: index.name,
                    summary: "\(e): index '\(index.name)' removed", isAdditive: false,
                    advice: "keep the index in the schema, or drop it by hand"))
        }
        return out
    }

    static func describe(_ attribute: Attribute) -> String {
        if let value = attribute.defaultValue { return "default \(value)" }
        return attribute.isOptional ? "optional" : "required, no default"
    }

    /// The message of a refused migration: one line per refused difference with what to do.
    static func refusal(path: String, stored: SchemaRecord.Stored, new: Schema, differences: [SchemaDifference]) -> String {
        var lines = [
            "the store at '\(path)' (schema version \(stored.version)) cannot be migrated automatically to schema version \(new.version):"
        ]
        for difference in differences where !difference.isAdditive {
            lines.append("  - \(difference)")
        }
        let additive = differences.filter(\.isAdditive)
        if !additive.isEmpty {
            lines.append("additive changes, not applied either: \(additive.map(\.summary).joined(separator: "; "))")
        }
        return lines.joined(separator: "\n")
    }
}
