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

    /// One applied commit batch.
    func change(seq: Int64, changeSet: ChangeSet<Row>) -> JSON {
        let changes = changeSet.canonicalized()
        let deleted: [JSON] = self.sectioned ? changes.deletedSections.map { .integer($0) } : []
        let inserted: [JSON] =
            self.sectioned
            ? changes.insertedSections.map { .object([("index", .integer($0.index)), ("name", .string($0.name))]) }
            : []
        let rows = changes.rowChanges.map(self.rowChange)
        return .object([
            ("event", .string("change")),
            ("seq", .integer(seq)),
            ("sections", .object([("deleted", .array(deleted)), ("inserted", .array(inserted))])),
            ("rows", .array(rows)),
        ])
    }

    private func rowChange(_ change: ChangeSet<Row>.RowChange) -> JSON {
        var members: [(String, JSON)] = [("op", .string(change.operation)), ("id", .string(change.id))]
        if let from = change.oldPath { members.append(("from", Self.path(from))) }
        if let to = change.newPath { members.append(("to", Self.path(to))) }
        if let row = change.element { members.append(("values", ValueRendering.valuesJSON(row, entity: self.entity))) }
        if case .update(_, _, _, _, let changed) = change {
            members.append(("changed", .array(changed.map(JSON.string))))
        }
        return .object(members)
    }

    static func path(_ path: ListIndexPath) -> JSON {
        .array([.integer(path.section), .integer(path.row)])
    }
}
