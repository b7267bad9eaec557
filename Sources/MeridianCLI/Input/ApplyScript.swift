// MARK: - apply's JSON lines

internal import Foundation
package import MeridianCore

/// The input of `meridian apply`: JSON lines, one operation per line, all lines one transaction.
///
/// ```text
/// {"op":"insert","entity":"Point","values":{"title":"Café Aurora","category":2,"latitude":38.71}}
/// {"op":"update","entity":"Point","id":"p1","values":{"title":"Café Aurora II"},"version":3}
/// {"op":"upsert","entity":"Author","id":"a1","values":{"firstName":"Ada","lastName":"Lovelace"}}
/// {"op":"delete","entity":"Point","id":"p2"}
/// ```
///
/// `op` and `entity` are required; `id` is required except for `insert`; `values` maps attribute names to JSON values
/// read by the attribute's type (``ValueParsing``) and is absent or empty for `delete`; the optional `version` is
/// the row version the write expects (optimistic locking). Blank lines are skipped. Every error names its line
/// (1-based) and what is wrong.
package enum ApplyScript {
    /// The keys an operation line may have.
    static let keys = ["op", "entity", "id", "values", "version"]

    /// Inputs of fewer lines are parsed on the calling thread: splitting them over the cores costs more than it
    /// saves.
    static let linesPerPiece = 2_000

    /// Parses every line of `text` against the schema.
    ///
    /// Long inputs are parsed in one piece of consecutive lines per core, at once (`meridian apply` has nothing
    /// else to do meanwhile: the server waits for its request): the same operations in the same order, and the same
    /// error — that of the first bad line — as one pass. (The JSON reading was 38% of `meridian apply`'s CPU for
    /// 20,000 lines; docs/speed-of-light.md.)
    ///
    /// - Parameter pieces: How many pieces to split a long input into (the machine's cores by default).
    /// - Returns: The operations in order, with the line each came from.
    /// - Throws: ``CLIError`` with status `badInput`: `line 3: …`.
    static func parse(
        _ text: String, schema: Schema, pieces: Int = ProcessInfo.processInfo.activeProcessorCount
    ) throws(CLIError) -> [(line: Int, operation: WriteOperation)] {
        let lines = InputLines.split(text)
        let pieceCount = max(1, min(pieces, lines.count / Self.linesPerPiece))
        if pieceCount == 1 { return try Self.parse(lines[...], firstLine: 1, schema: schema) }
        let size = (lines.count + pieceCount - 1) / pieceCount
        let parsed = concurrently(pieceCount) { piece throws(CLIError) in
            let start = piece * size
            return try Self.parse(lines[start..<min(start + size, lines.count)], firstLine: start + 1, schema: schema)
        }
        var operations: [(line: Int, operation: WriteOperation)] = []
        operations.reserveCapacity(lines.count)
        // In piece order: the first piece that failed holds the first bad line (every piece before it parsed whole).
        for piece in parsed { operations.append(contentsOf: try piece.get()) }
        return operations
    }

    /// Parses consecutive lines, the first of which is line `firstLine` (1-based) of the input.
    private static func parse(
        _ lines: ArraySlice<String>, firstLine: Int, schema: Schema
    ) throws(CLIError) -> [(line: Int, operation: WriteOperation)] {
        var operations: [(line: Int, operation: WriteOperation)] = []
        operations.reserveCapacity(lines.count)
        for (offset, line) in lines.enumerated() {
            if line.utf8.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
            let lineNumber = firstLine + offset
            do {
                operations.append((lineNumber, try Self.parseLine(line, schema: schema)))
            } catch {
                throw error.within("line \(lineNumber)")
            }
        }
        return operations
    }

    /// Parses `text` exactly as `meridian apply` does and returns the input line of each operation, in order; the
    /// entry point for the fuzz harness (MeridianFuzz), which must not depend on the CLI's internal types.
    ///
    /// - Throws: ``CLIError`` with status `badInput`: `line 3: …`.
    package static func operationLines(_ text: String, schema: Schema) throws(CLIError) -> [Int] {
        try Self.parse(text, schema: schema).map(\.line)
    }

    /// Parses one operation line.
    static func parseLine(_ line: String, schema: Schema) throws(CLIError) -> WriteOperation {
        let (json, members) = try JSON.object(line: line, expected: "a JSON object {\"op\":…,\"entity\":…}")
        for (key, _) in members where !Self.keys.contains(key) {
            var message = "unknown key \"\(key)\""
            if let guess = NameSuggestion.closest(to: key, in: Self.keys) { message += " (did you mean \"\(guess)\"?)" }
            throw CLIError.badInput(message + "; the keys are " + Self.keys.joined(separator: ", "))
        }
        guard let opJSON = json["op"] else {
            throw CLIError.badInput("missing \"op\" (one of insert, update, upsert, delete)")
        }
        guard case .string(let opName) = opJSON, let kind = WriteOperation.Kind(rawValue: opName) else {
            throw CLIError.badInput(
                "\"op\" must be one of \"insert\", \"update\", \"upsert\", \"delete\", found \(opJSON.text)")
        }
        guard let entityJSON = json["entity"] else { throw CLIError.badInput("missing \"entity\"") }
        guard case .string(let entityName) = entityJSON else {
            throw CLIError.badInput("\"entity\" must be a string, found \(entityJSON.kindDescription)")
        }
        let entity = try schema.cliEntity(entityName)

        var id: String?
        switch json["id"] {
        case nil, .null?:
            guard kind == .insert else { throw CLIError.badInput("\(kind.rawValue) needs an \"id\"") }
        case .string(let s)?:
            guard !s.isEmpty else { throw CLIError.badInput("\"id\" must not be empty") }
            id = s
        case let other?:
            throw CLIError.badInput("\"id\" must be a string, found \(other.kindDescription)")
        }

        var expectedVersion: Int64?
        switch json["version"] {
        case nil, .null?: break
        case .number(let n)?:
            guard let v = Int64(n), v >= 0 else {
                throw CLIError.badInput("\"version\" must be a whole number, found \(n)")
            }
            expectedVersion = v
        case let other?:
            throw CLIError.badInput("\"version\" must be a whole number, found \(other.kindDescription)")
        }

        var values: [String: Value] = [:]
        switch json["values"] {
        case nil, .null?: break
        case .object(let fields)?:
            if kind == .delete, !fields.isEmpty { throw CLIError.badInput("delete takes no \"values\"") }
            for (name, fieldJSON) in fields {
                guard name != EntitySchema.idAttribute else {
                    throw CLIError.badInput("values: the id goes in \"id\", not in \"values\"")
                }
                guard let attribute = entity.attribute(named: name) else {
                    throw CLIError.badInput("values: " + NameSuggestion.unknownAttribute(name, in: entity))
                }
                do {
                    values[name] = try ValueParsing.parse(fieldJSON, as: attribute.type)
                } catch {
                    throw CLIError.badInput("values.\(name): \(error.message)")
                }
            }
        case let other?:
            throw CLIError.badInput("\"values\" must be an object, found \(other.kindDescription)")
        }
        return WriteOperation(
            kind: kind, entity: entity.name, id: id, values: values, expectedVersion: expectedVersion)
    }
}
