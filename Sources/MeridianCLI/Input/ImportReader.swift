// MARK: - import's input

internal import Foundation
internal import MeridianCore

/// The rows of `meridian import`: CSV with a header row, or JSON lines.
///
/// CSV: the header names the columns, `id` (optional) or attributes of the entity, in any order. Cells are parsed
/// by the attribute's type (``ValueParsing``). An empty unquoted cell is null for an optional attribute and "not
/// given" (the default applies) for a required one; `""` is the empty string.
///
/// JSON lines: each line is `{"id":ID,"values":{…}}` (what `export --format jsonl` and `query --format jsonl`
/// write) or a flat object `{"id":ID,"title":…,…}`; `id` may be absent or null.
enum ImportReader {
    /// One row to write and the line it came from.
    struct Item: Sendable, Equatable {
        var line: Int
        /// The row as an insert of no entity in particular (its id and values; the command sets the kind and the
        /// entity): a CSV row's values kept compactly, in the layout of the header's attribute columns.
        var insert: WriteOperation

        var id: String? {
            get { self.insert.id }
            set { self.insert.id = newValue }
        }

        var values: [String: Value] {
            get { self.insert.values }
            set { self.insert.values = newValue }
        }

        init(line: Int, id: String?, values: [String: Value]) {
            self.line = line
            self.insert = WriteOperation(kind: .insert, entity: "", id: id, values: values)
        }

        init(line: Int, id: String?, layout: RowLayout, values: UnsafeBufferPointer<Value>) {
            self.line = line
            self.insert = WriteOperation(kind: .insert, entity: "", id: id, layout: layout, values: values)
        }
    }

    /// An input format.
    enum Format: String, Sendable, CaseIterable {
        case csv, jsonl

        /// The format of a file: by its extension, else by its first non-blank character (`{` is JSON lines).
        static func detect(path: String, text: String) -> Format {
            let lower = path.lowercased()
            if lower.hasSuffix(".csv") { return .csv }
            if lower.hasSuffix(".jsonl") || lower.hasSuffix(".ndjson") || lower.hasSuffix(".json") { return .jsonl }
            let first = text.first { !$0.isWhitespace }
            return first == "{" ? .jsonl : .csv
        }
    }

    /// Parses the whole input.
    ///
    /// - Throws: ``CLIError`` with status `badInput`, naming the line (and column, for CSV).
    static func parse(_ text: String, format: Format, entity: EntitySchema) throws(CLIError) -> [Item] {
        switch format {
        case .csv: try Self.parseCSV(text, entity: entity)
        case .jsonl: try Self.parseJSONLines(text, entity: entity)
        }
    }

    // MARK: CSV

    /// The rows of a CSV text. The text is read, and its rows converted, in one piece per core (`CSV.parse(_:parts:)`):
    /// the same rows, or the same first error, as one pass.
    static func parseCSV(
        _ text: String, entity: EntitySchema, parts: Int = ProcessInfo.processInfo.activeProcessorCount
    ) throws(CLIError) -> [Item] {
        let pieces: [[CSV.Record]]
        do {
            pieces = try CSV.parse(text, parts: parts)
        } catch {
            throw CLIError.badInput("line \(error.line): \(error.message)")
        }
        guard let first = pieces.firstIndex(where: { !$0.isEmpty }) else { return [] }
        let header = pieces[first][0]
        var columns: [Attribute?] = []  // nil: the id column
        var seen: Set<String> = []
        for field in header.fields {
            let name = field.text.trimmingSpaces
            guard seen.insert(name).inserted else {
                throw CLIError.badInput("line \(header.line): column '\(name)' appears twice in the header")
            }
            if name == EntitySchema.idAttribute {
                columns.append(nil)
            } else if let attribute = entity.attribute(named: name) {
                columns.append(attribute)
            } else {
                throw CLIError.badInput(
                    "line \(header.line): header: " + NameSuggestion.unknownAttribute(name, in: entity))
            }
        }
        let rows = pieces[first...].enumerated().map { $0.offset == 0 ? $0.element.dropFirst() : $0.element[...] }
        let converted = concurrently(rows.count) { [columns] piece throws(CLIError) in
            try Self.items(rows[piece], columns: columns)
        }
        var items: [Item] = []
        items.reserveCapacity(rows.reduce(0) { $0 + $1.count })
        for piece in converted { items.append(contentsOf: try piece.get()) }
        return items
    }

    /// The rows of CSV records under a header whose columns are `columns` (nil: the id).
    private static func items(_ records: ArraySlice<CSV.Record>, columns: [Attribute?]) throws(CLIError) -> [Item] {
        var items: [Item] = []
        items.reserveCapacity(records.count)
        // A row that gives every column keeps its values in the columns' layout, shared by all such rows (no map per
        // row to hash each name into); one that leaves a required attribute out (its default applies) keeps a map.
        let layout = RowLayout(names: columns.compactMap { $0?.name })
        var values: [Value] = []
        values.reserveCapacity(layout.count)
        for record in records {
            guard record.fields.count == columns.count else {
                throw CLIError.badInput(
                    "line \(record.line): \(record.fields.count) fields, but the header has \(columns.count)")
            }
            values.removeAll(keepingCapacity: true)
            var id: String?
            var omitted: [Int] = []  // positions in `layout` of required attributes not given
            for (field, column) in zip(record.fields, columns) {
                guard let attribute = column else {
                    id = field.text.isEmpty ? nil : field.text
                    continue
                }
                if field.text.isEmpty, !(field.quoted && attribute.type == .string) {
                    if !attribute.isOptional { omitted.append(values.count) }
                    values.append(.null)  // for a required attribute, a placeholder left out below
                    continue
                }
                do {
                    values.append(try ValueParsing.parse(field.text, as: attribute.type))
                } catch {
                    throw CLIError.badInput("line \(record.line), column '\(attribute.name)': \(error.message)")
                }
            }
            if omitted.isEmpty {
                items.append(
                    values.withUnsafeBufferPointer { Item(line: record.line, id: id, layout: layout, values: $0) })
            } else {
                var map = [String: Value](minimumCapacity: layout.count)
                for (i, name) in layout.names.enumerated() where !omitted.contains(i) { map[name] = values[i] }
                items.append(Item(line: record.line, id: id, values: map))
            }
        }
        return items
    }

    // MARK: JSON lines

    static func parseJSONLines(_ text: String, entity: EntitySchema) throws(CLIError) -> [Item] {
        var items: [Item] = []
        var lineNumber = 0
        for line in InputLines.split(text) {
            lineNumber += 1
            guard !line.allSatisfy({ $0.isWhitespace }) else { continue }
            do {
                items.append(try Self.parseJSONLine(line, number: lineNumber, entity: entity))
            } catch {
                throw error.within("line \(lineNumber)")
            }
        }
        return items
    }

    static func parseJSONLine(_ line: String, number: Int, entity: EntitySchema) throws(CLIError) -> Item {
        let (json, members) = try JSON.object(line: line, expected: "a JSON object")
        var item = Item(line: number, id: nil, values: [:])
        switch json["id"] {
        case nil, .null?: break
        case .string(let s)?: item.id = s.isEmpty ? nil : s
        case let other?: throw CLIError.badInput("\"id\" must be a string, found \(other.kindDescription)")
        }
        let fields: [(String, JSON)]
        if case .object(let nested)? = json["values"], members.allSatisfy({ $0.0 == "id" || $0.0 == "values" }) {
            fields = nested
        } else {
            fields = members.filter { $0.0 != "id" }
        }
        for (name, value) in fields {
            guard let attribute = entity.attribute(named: name) else {
                throw CLIError.badInput(NameSuggestion.unknownAttribute(name, in: entity))
            }
            do {
                item.values[name] = try ValueParsing.parse(value, as: attribute.type)
            } catch {
                throw CLIError.badInput("\(name): \(error.message)")
            }
        }
        return item
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s.removeFirst() }
        while s.last == " " || s.last == "\t" { s.removeLast() }
        return String(s)
    }
}
