// MARK: - meridian query / export

internal import ArgumentParser
internal import MeridianClient
internal import MeridianCore

/// `meridian query ENTITY [--where PRED] [--sort KEYS] [--limit N] [--format table|jsonl]`.
struct QueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Fetch rows once.",
        discussion: """
            table prints an aligned table and a (N rows at seq S) line; jsonl prints one \
            {"id":ID,"values":{…}} object per row, every attribute in schema order.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case table, jsonl
    }

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The entity.")
    var entity: String

    @OptionGroup var fetch: FetchOptions

    @Option(help: ArgumentHelp("At most this many rows (the first in sort order).", valueName: "n"))
    var limit: Int?

    @Option(help: "Output format.")
    var format: Format = .table

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        let address = try self.connection.address()
        let (entityName, fetch, limit, format) = (self.entity, self.fetch, self.limit, self.format)
        try await ServerConnection.with(address) { connection in
            let (schema, _) = try await connection.schema()
            let entity = try schema.cliEntity(entityName)
            let request = try fetch.fetchRequest(for: entity, limit: limit)
            do {
                switch format {
                case .jsonl:
                    _ = try await connection.query(request) { rows in
                        Terminal.writeOut(bytes: jsonLines(rows, entity))
                    }
                case .table:
                    let (seq, rows) = try await connection.query(request)
                    let table = TableRenderer(entity: entity)
                    var lines = table.render(rows.map { TableRenderer.cells($0, entity: entity) })
                    lines.append("(\(rows.count) \(rows.count == 1 ? "row" : "rows") at seq \(seq))")
                    Terminal.writeOut(lines.joined(separator: "\n") + "\n")
                }
            } catch {
                throw predicateRejection(
                    ServerConnection.map(error, address: address.address), predicate: fetch.predicate)
            }
        }
    }
}

/// `meridian export ENTITY [--where PRED] --format csv|jsonl`.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write rows as CSV or JSON lines, for import.",
        discussion: """
            csv writes a header row (id, then every attribute in schema order); null is an empty field and the \
            empty string is "". jsonl writes {"id":ID,"values":{…}} per row.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case csv, jsonl
    }

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The entity.")
    var entity: String

    @OptionGroup var fetch: FetchOptions

    @Option(help: ArgumentHelp("At most this many rows (the first in sort order).", valueName: "n"))
    var limit: Int?

    @Option(help: "Output format.")
    var format: Format = .csv

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        let address = try self.connection.address()
        let (entityName, fetch, limit, format) = (self.entity, self.fetch, self.limit, self.format)
        try await ServerConnection.with(address) { connection in
            let (schema, _) = try await connection.schema()
            let entity = try schema.cliEntity(entityName)
            let request = try fetch.fetchRequest(for: entity, limit: limit)
            if format == .csv {
                Terminal.printLine(CSV.line([EntitySchema.idAttribute] + entity.attributes.map(\.name)))
            }
            do {
                _ = try await connection.query(request) { rows in
                    switch format {
                    case .csv: Terminal.writeOut(bytes: Self.csvLines(rows, entity: entity))
                    case .jsonl: Terminal.writeOut(bytes: jsonLines(rows, entity))
                    }
                }
            } catch {
                throw predicateRejection(
                    ServerConnection.map(error, address: address.address), predicate: fetch.predicate)
            }
        }
    }

    /// Rows as CSV lines, each ended by a line break, written straight to UTF-8 bytes: the text of
    /// ``csvLine(_:entity:)``, without a `String` per field and per line.
    static func csvLines(_ rows: [Row], entity: EntitySchema) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(rows.count * (16 + 12 * entity.attributes.count))
        for row in rows {
            CSV.append(field: row.id, to: &out)
            for attribute in entity.attributes {
                out.append(UInt8(ascii: ","))
                switch row[attribute.name] {
                case .null: break
                case .string(let text): CSV.append(field: text, to: &out)
                case let value: CSV.append(field: ValueRendering.text(value), to: &out)
                }
            }
            out.append(UInt8(ascii: "\n"))
        }
        return out
    }

    /// A row as a CSV line: id, then every attribute; null is an empty unquoted field.
    static func csvLine(_ row: Row, entity: EntitySchema) -> String {
        CSV.line(
            [row.id]
                + entity.attributes.map { attribute in
                    let value = row[attribute.name]
                    return value.isNull ? nil : ValueRendering.text(value)
                })
    }
}

/// Rows as `{"id":ID,"values":{…}}` lines (`query` and `export --format jsonl`), written straight to UTF-8 bytes, without
/// a `JSON` tree and `String`s per row (the tests pin the text against the tree's).
func jsonLines(_ rows: [Row], _ entity: EntitySchema) -> [UInt8] {
    var out = JSONBytes(capacity: rows.count * (24 + 24 * entity.attributes.count))
    for row in rows {
        out.append(row: row, entity: entity)
        out.append("\n")
    }
    return out.bytes
}
