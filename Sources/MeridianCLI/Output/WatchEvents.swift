// MARK: - watch --format jsonl

internal import MeridianCore

/// The JSON lines of `meridian watch --format jsonl` (docs/cli.md), built from a results controller's state and
/// change sets:
///
/// ```text
/// {"event":"snapshot","seq":S,"sections":[{"name":N,"rows":[{"id":ID,"values":{…}},…]},…]}
/// {"event":"change","seq":S,"sections":{"deleted":[i,…],"inserted":[{"index":i,"name":N},…]},"rows":[…]}
/// ```
///
/// Row changes are `delete` (`from`), `insert` (`to`, `values`), `move` (`from`, `to`, `values`) and `update`
/// (`from`, `to`, `values`, `changed`), in the change set's canonical order. Without a section key there is always
/// exactly one section, named `""`: section insertions and deletions of an unsectioned list are left out.
struct WatchEvents: Sendable {
    let entity: EntitySchema
    let sectioned: Bool

    /// The first line: the whole result at `seq`.
    func snapshot(seq: Int64, list: SectionedList<Row>) -> JSON {
        var sections = list.sections.map { section in
            JSON.object([
                ("name", .string(section.name)),
                ("rows", .array(section.elements.map { ValueRendering.rowJSON($0, entity: self.entity) })),
            ])
        }
        if !self.sectioned {
            let rows = list.sections.flatMap(\.elements).map { ValueRendering.rowJSON($0, entity: self.entity) }
            sections = [.object([("name", .string("")), ("rows", .array(rows))])]
        }
        return .object([("event", .string("snapshot")), ("seq", .integer(seq)), ("sections", .array(sections))])
    }

    /// One applied commit batch, as its line's text.
    ///
    /// Written straight to the text, member by member in the order documented above, without a `JSON` value per row
    /// (a commit of 20,000 rows built 20,000 trees, each an array of members, only to write them once).
    func change(seq: Int64, changeSet: ChangeSet<Row>) -> String {
        let changes = changeSet.canonicalized()
        var out = "{\"event\":\"change\",\"seq\":"
        out += String(seq)
        out += ",\"sections\":{\"deleted\":["
        if self.sectioned {
            for (i, index) in changes.deletedSections.enumerated() {
                if i > 0 { out += "," }
                out += String(index)
            }
        }
        out += "],\"inserted\":["
        if self.sectioned {
            for (i, section) in changes.insertedSections.enumerated() {
                if i > 0 { out += "," }
                out += "{\"index\":"
                out += String(section.index)
                out += ",\"name\":"
                JSONText.write(section.name, to: &out)
                out += "}"
            }
        }
        out += "]},\"rows\":["
        for (i, change) in changes.rowChanges.enumerated() {
            if i > 0 { out += "," }
            self.write(change, to: &out)
        }
        out += "]}"
        return out
    }

    private func write(_ change: ChangeSet<Row>.RowChange, to out: inout String) {
        out += "{\"op\":"
        JSONText.write(change.operation, to: &out)
        out += ",\"id\":"
        JSONText.write(change.id, to: &out)
        if let from = change.oldPath {
            out += ",\"from\":"
            Self.write(from, to: &out)
        }
        if let to = change.newPath {
            out += ",\"to\":"
            Self.write(to, to: &out)
        }
        if let row = change.element {
            out += ",\"values\":{"
            for (i, attribute) in self.entity.attributes.enumerated() {
                if i > 0 { out += "," }
                JSONText.write(attribute.name, to: &out)
                out += ":"
                ValueRendering.json(row[attribute.name]).write(to: &out)
            }
            out += "}"
        }
        if case .update(_, _, _, _, let changed) = change {
            out += ",\"changed\":["
            for (i, name) in changed.enumerated() {
                if i > 0 { out += "," }
                JSONText.write(name, to: &out)
            }
            out += "]"
        }
        out += "}"
    }

    private static func write(_ path: ListIndexPath, to out: inout String) {
        out += "["
        out += String(path.section)
        out += ","
        out += String(path.row)
        out += "]"
    }
}
