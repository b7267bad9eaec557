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
    /// Written straight to UTF-8 bytes (``JSONBytes``), member by member in the order documented above, without a
    /// `JSON` value per row (a commit of 20,000 rows built 20,000 trees, each an array of members, only to write them
    /// once) or a `String` per number.
    func change(seq: Int64, changeSet: ChangeSet<Row>) -> String {
        let changes = changeSet.canonicalized()
        var out = JSONBytes(capacity: 64 + changes.rowChanges.count * (48 + 24 * self.entity.attributes.count))
        out.append("{\"event\":\"change\",\"seq\":")
        out.append(integer: seq)
        out.append(",\"sections\":{\"deleted\":[")
        if self.sectioned {
            for (i, index) in changes.deletedSections.enumerated() {
                if i > 0 { out.append(",") }
                out.append(integer: index)
            }
        }
        out.append("],\"inserted\":[")
        if self.sectioned {
            for (i, section) in changes.insertedSections.enumerated() {
                if i > 0 { out.append(",") }
                out.append("{\"index\":")
                out.append(integer: section.index)
                out.append(",\"name\":")
                out.append(string: section.name)
                out.append("}")
            }
        }
        out.append("]},\"rows\":[")
        for (i, change) in changes.rowChanges.enumerated() {
            if i > 0 { out.append(",") }
            self.write(change, to: &out)
        }
        out.append("]}")
        return out.text
    }

    /// One row change. One `switch` binds its parts: each of `RowChange`'s accessors (`id`, `oldPath`, `element`, …)
    /// copied the whole change to read one of them (perf of a 20,000-row commit).
    private func write(_ change: ChangeSet<Row>.RowChange, to out: inout JSONBytes) {
        switch change {
        case .delete(let id, let from):
            self.write("delete", id: id, oldPath: from, newPath: nil, row: nil, changed: nil, to: &out)
        case .insert(let id, let to, let row):
            self.write("insert", id: id, oldPath: nil, newPath: to, row: row, changed: nil, to: &out)
        case .move(let id, let from, let to, let row, _):
            self.write("move", id: id, oldPath: from, newPath: to, row: row, changed: nil, to: &out)
        case .update(let id, let from, let to, let row, let changed):
            self.write("update", id: id, oldPath: from, newPath: to, row: row, changed: changed, to: &out)
        }
    }

    private func write(
        _ operation: StaticString, id: String, oldPath: ListIndexPath?, newPath: ListIndexPath?, row: Row?,
        changed: [String]?, to out: inout JSONBytes
    ) {
        out.append("{\"op\":\"")
        out.append(operation)
        out.append("\",\"id\":")
        out.append(string: id)
        if let oldPath {
            out.append(",\"from\":")
            Self.write(oldPath, to: &out)
        }
        if let newPath {
            out.append(",\"to\":")
            Self.write(newPath, to: &out)
        }
        if let row {
            out.append(",\"values\":")
            out.append(valuesOf: row, entity: self.entity)
        }
        if let changed {
            out.append(",\"changed\":[")
            for (i, name) in changed.enumerated() {
                if i > 0 { out.append(",") }
                out.append(string: name)
            }
            out.append("]")
        }
        out.append("}")
    }

    private static func write(_ path: ListIndexPath, to out: inout JSONBytes) {
        out.append("[")
        out.append(integer: path.section)
        out.append(",")
        out.append(integer: path.row)
        out.append("]")
    }
}
