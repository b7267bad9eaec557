// MARK: - Replaying watch --format jsonl, as a consumer of the stream would

@testable import MeridianCLI

/// The state a `watch --format jsonl` consumer holds: sections of (id, values) rows, rebuilt from the JSON lines
/// alone, following docs/cli.md: remove the `from` rows of deletes and moves (highest first), delete sections
/// (highest first), insert sections (lowest first), insert the `to` rows of inserts and moves (lowest first), then
/// replace the values of updates.
struct WatchReplay: Equatable, CustomStringConvertible {
    struct Section: Equatable {
        var name: String
        var rows: [(id: String, values: JSON)]

        static func == (a: Section, b: Section) -> Bool {
            a.name == b.name && a.rows.count == b.rows.count
                && zip(a.rows, b.rows).allSatisfy { $0.id == $1.id && $0.values == $1.values }
        }
    }

    var sections: [Section] = []
    var seq: Int64 = 0
    var events = 0

    enum ReplayError: Error { case malformed(String) }

    /// Applies one line of the stream.
    mutating func apply(line: String) throws {
        let event = try JSON.parse(line)
        guard case .string(let kind)? = event["event"], case .number(let seqText)? = event["seq"],
            let seq = Int64(seqText)
        else { throw ReplayError.malformed(line) }
        guard seq >= self.seq else { throw ReplayError.malformed("seq went backwards: \(line)") }
        self.seq = seq
        self.events += 1
        switch kind {
        case "snapshot":
            guard self.events == 1 else { throw ReplayError.malformed("a second snapshot: \(line)") }
            guard case .array(let sections)? = event["sections"] else { throw ReplayError.malformed(line) }
            self.sections = try sections.map { section in
                guard case .string(let name)? = section["name"], case .array(let rows)? = section["rows"] else {
                    throw ReplayError.malformed(line)
                }
                return Section(name: name, rows: try rows.map(Self.row))
            }
        case "change":
            guard self.events > 1 else { throw ReplayError.malformed("a change before the snapshot: \(line)") }
            try self.applyChange(event, line: line)
        default:
            throw ReplayError.malformed(line)
        }
    }

    private mutating func applyChange(_ event: JSON, line: String) throws {
        guard case .array(let changes)? = event["rows"], let sectionOps = event["sections"],
            case .array(let deleted)? = sectionOps["deleted"], case .array(let inserted)? = sectionOps["inserted"]
        else { throw ReplayError.malformed(line) }
        var removals: [(Int, Int)] = []
        var additions: [((Int, Int), String, JSON)] = []
        var updates: [((Int, Int), String, JSON)] = []
        for change in changes {
            guard case .string(let op)? = change["op"], case .string(let id)? = change["id"] else {
                throw ReplayError.malformed(line)
            }
            let from = try change["from"].map(Self.path)
            let to = try change["to"].map(Self.path)
            switch op {
            case "delete":
                removals.append(try from.orThrow(line))
            case "insert":
                additions.append((try to.orThrow(line), id, try change["values"].orThrow(line)))
            case "move":
                removals.append(try from.orThrow(line))
                additions.append((try to.orThrow(line), id, try change["values"].orThrow(line)))
            case "update":
                guard change["changed"] != nil, from != nil else { throw ReplayError.malformed(line) }
                updates.append((try to.orThrow(line), id, try change["values"].orThrow(line)))
            default:
                throw ReplayError.malformed(line)
            }
        }
        for (s, r) in removals.sorted(by: { $0 > $1 }) {
            guard self.sections.indices.contains(s), self.sections[s].rows.indices.contains(r) else {
                throw ReplayError.malformed("no row at [\(s),\(r)] to remove: \(line)")
            }
            self.sections[s].rows.remove(at: r)
        }
        let deletedSections = try deleted.map { json -> Int in
            guard case .number(let n) = json, let i = Int(n) else { throw ReplayError.malformed(line) }
            return i
        }
        for s in deletedSections.sorted(by: >) {
            guard self.sections.indices.contains(s), self.sections[s].rows.isEmpty else {
                throw ReplayError.malformed("section \(s) cannot be deleted: \(line)")
            }
            self.sections.remove(at: s)
        }
        let insertedSections = try inserted.map { json -> (Int, String) in
            guard case .number(let n)? = json["index"], let i = Int(n), case .string(let name)? = json["name"] else {
                throw ReplayError.malformed(line)
            }
            return (i, name)
        }
        for (i, name) in insertedSections.sorted(by: { $0.0 < $1.0 }) {
            guard i <= self.sections.count else { throw ReplayError.malformed("section \(i) out of range: \(line)") }
            self.sections.insert(Section(name: name, rows: []), at: i)
        }
        for ((s, r), id, values) in additions.sorted(by: { $0.0 < $1.0 }) {
            guard self.sections.indices.contains(s), r <= self.sections[s].rows.count else {
                throw ReplayError.malformed("no place for [\(s),\(r)]: \(line)")
            }
            self.sections[s].rows.insert((id, values), at: r)
        }
        for ((s, r), id, values) in updates {
            guard self.sections.indices.contains(s), self.sections[s].rows.indices.contains(r),
                self.sections[s].rows[r].id == id
            else { throw ReplayError.malformed("update of \(id) not at [\(s),\(r)]: \(line)") }
            self.sections[s].rows[r].values = values
        }
    }

    static func row(_ json: JSON) throws -> (id: String, values: JSON) {
        guard case .string(let id)? = json["id"], let values = json["values"] else {
            throw ReplayError.malformed(json.text)
        }
        return (id, values)
    }

    static func path(_ json: JSON) throws -> (Int, Int) {
        guard case .array(let parts) = json, parts.count == 2, case .number(let s) = parts[0],
            case .number(let r) = parts[1], let si = Int(s), let ri = Int(r)
        else { throw ReplayError.malformed(json.text) }
        return (si, ri)
    }

    /// The rows in order, as `query --format jsonl` prints them.
    var queryLines: String {
        self.sections.flatMap(\.rows).map { JSON.object([("id", .string($0.id)), ("values", $0.values)]).text + "\n" }
            .joined()
    }

    var description: String { self.queryLines }
}

extension Optional {
    func orThrow(_ context: String) throws -> Wrapped {
        guard let self else { throw WatchReplay.ReplayError.malformed(context) }
        return self
    }
}
