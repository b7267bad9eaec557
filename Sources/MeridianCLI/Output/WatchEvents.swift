// MARK: - watch --format jsonl

internal import Foundation
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

    /// The first line: the whole result at `seq`, as UTF-8 bytes, followed by a newline when `line`.
    ///
    /// Written straight to UTF-8 bytes as the change lines are (a `JSON` tree of 300,000 rows, then its text through
    /// `String` appends, took a third of a watcher's CPU until its first line), and written out as bytes, no `String`
    /// made of them (for a 20,000-row line, three copies of ~2 MB and a UTF-8 check).
    func snapshotBytes(seq: Int64, list: SectionedList<Row>, line: Bool = false) -> [UInt8] {
        let rowCount = list.sections.reduce(0) { $0 + $1.elements.count }
        var out = JSONBytes(capacity: 64 + rowCount * (24 + 24 * self.entity.attributes.count))
        out.append("{\"event\":\"snapshot\",\"seq\":")
        out.append(integer: seq)
        out.append(",\"sections\":[")
        if self.sectioned {
            for (i, section) in list.sections.enumerated() {
                if i > 0 { out.append(",") }
                self.write(name: section.name, rows: [section.elements], to: &out)
            }
        } else {
            // Always exactly one section, named "".
            self.write(name: "", rows: list.sections.map(\.elements), to: &out)
        }
        out.append("]}")
        if line { out.append("\n") }
        return out.bytes
    }

    /// One section of the snapshot line: `{"name":N,"rows":[…]}`, its rows those of `rows` one after the other.
    private func write(name: String, rows: [[Row]], to out: inout JSONBytes) {
        out.append("{\"name\":")
        out.append(string: name)
        out.append(",\"rows\":[")
        var first = true
        for part in rows {
            for row in part {
                if !first { out.append(",") }
                first = false
                out.append(row: row, entity: self.entity)
            }
        }
        out.append("]}")
    }

    /// One applied commit batch, as its line's UTF-8 bytes, followed by a newline when `line`.
    ///
    /// Written straight to UTF-8 bytes (``JSONBytes``), member by member in the order documented above, without a
    /// `JSON` value per row (a commit of 20,000 rows built 20,000 trees, each an array of members, only to write them
    /// once) or a `String` per number.
    func changeBytes(seq: Int64, changeSet: ChangeSet<Row>, line: Bool = false) -> [UInt8] {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        return self.changeBytes(
            seq: seq, changeSet: changeSet, line: line,
            pieces: min(cores, changeSet.rowChanges.count / Self.concurrentRows))
    }

    /// Change lines of at least this many rows write their rows in pieces at once, one per core (a 20,000-row line
    /// took ~8 ms on one, the last stage of a bulk write: the server is done by then, the second core idle).
    static let concurrentRows = 4_096

    /// ``changeBytes(seq:changeSet:line:)`` with the rows written in `pieces` pieces of consecutive row changes at
    /// once (at least one), each into bytes of its own, then appended in order: the same line however many pieces.
    func changeBytes(seq: Int64, changeSet: ChangeSet<Row>, line: Bool, pieces: Int) -> [UInt8] {
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
        let rows = changes.rowChanges
        let pieceCount = max(1, min(pieces, rows.count))
        if pieceCount == 1 {
            self.write(rows, rows.indices, to: &out)
        } else {
            let ranges = pieceRanges(rows.count, pieces: pieceCount)
            let parts = concurrently(pieceCount) { piece -> [UInt8] in
                let range = ranges[piece]
                var part = JSONBytes(capacity: range.count * (48 + 24 * self.entity.attributes.count))
                if piece > 0, !range.isEmpty { part.append(",") }
                self.write(rows, range, to: &part)
                return part.bytes
            }
            for case .success(let part) in parts { out.append(contentsOf: part) }
        }
        out.append("]}")
        if line { out.append("\n") }
        return out.bytes
    }

    /// `rows[range]`, separated by commas.
    private func write(_ rows: [ChangeSet<Row>.RowChange], _ range: Range<Int>, to out: inout JSONBytes) {
        for i in range {
            if i > range.lowerBound { out.append(",") }
            self.write(rows[i], to: &out)
        }
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
