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
        var text = text
        // The lines are read in place in the text's UTF-8, not copied each into a `String` of its own first (an
        // allocation and a copy of every line before its reading, the CLI's memory written twice over).
        let result = text.withUTF8 { bytes -> Result<[(line: Int, operation: WriteOperation)], CLIError> in
            let lines = InputLines.ranges(bytes)
            let pieceCount = max(1, min(pieces, lines.count / Self.linesPerPiece))
            if pieceCount == 1 {
                return Result { () throws(CLIError) in try Self.parse(bytes, lines[...], firstLine: 1, schema: schema) }
            }
            // Only read, and alive until every piece has returned (`concurrently` waits for them all).
            nonisolated(unsafe) let input = bytes
            let ranges = pieceRanges(lines.count, pieces: pieceCount)
            let parsed = concurrently(pieceCount) { piece throws(CLIError) in
                let range = ranges[piece]
                return try Self.parse(input, lines[range], firstLine: range.lowerBound + 1, schema: schema)
            }
            var operations: [(line: Int, operation: WriteOperation)] = []
            operations.reserveCapacity(lines.count)
            // In piece order: the first piece that failed holds the first bad line (every piece before it parsed whole).
            for piece in parsed {
                switch piece {
                case .success(let part): operations.append(contentsOf: part)
                case .failure(let error): return .failure(error)
                }
            }
            return .success(operations)
        }
        return try result.get()
    }

    /// Parses consecutive lines of `text` (their byte ranges), the first of which is line `firstLine` (1-based).
    private static func parse(
        _ text: UnsafeBufferPointer<UInt8>, _ lines: ArraySlice<Range<Int>>, firstLine: Int, schema: Schema
    ) throws(CLIError) -> [(line: Int, operation: WriteOperation)] {
        var operations: [(line: Int, operation: WriteOperation)] = []
        operations.reserveCapacity(lines.count)
        var shapes = LineShapes(schema: schema)
        for (offset, range) in lines.enumerated() {
            let line = UnsafeBufferPointer(rebasing: text[range])
            if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
            let lineNumber = firstLine + offset
            if let operation = Self.parsePlainLine(line, &shapes) {
                operations.append((lineNumber, operation))
                continue
            }
            do {
                let text = String(decoding: line, as: UTF8.self)
                operations.append((lineNumber, try Self.parseLine(text, schema: schema)))
            } catch {
                throw error.within("line \(lineNumber)")
            }
        }
        return operations
    }

    /// What consecutive lines share while they are read by ``parsePlainLine(_:_:)``: the last line's entity, and the
    /// layout of its values with their types (lines of one shape name the same attributes in the same order, and
    /// share one layout).
    struct LineShapes {
        let schema: Schema
        var entity: EntitySchema?
        var layout: RowLayout?
        /// The types of `layout`'s attributes, by position.
        var types: [AttributeType] = []
        /// The values of the line being read, by name, in the order given.
        var fields: [(name: String, json: JSON)] = []
        var values: [Value] = []

        init(schema: Schema) { self.schema = schema }

        /// The entity named `name`, looked up only when it is not the last line's.
        mutating func entity(named name: String) -> EntitySchema? {
            if let entity = self.entity, entity.name == name { return entity }
            self.entity = self.schema.entity(named: name)
            self.layout = nil
            return self.entity
        }

        /// The layout of `fields`' names: the last line's when they are the same names in the same order, else a new
        /// one (`nil` when a name is `id` or not an attribute of `entity`).
        mutating func layout(of entity: EntitySchema) -> RowLayout? {
            if let layout = self.layout, layout.count == self.fields.count,
                zip(layout.names, self.fields).allSatisfy({ $0 == $1.name })
            {
                return layout
            }
            var types: [AttributeType] = []
            types.reserveCapacity(self.fields.count)
            for field in self.fields {
                guard field.name != EntitySchema.idAttribute, let attribute = entity.attribute(named: field.name) else {
                    return nil
                }
                types.append(attribute.type)
            }
            let layout = RowLayout(names: self.fields.map(\.name))
            self.layout = layout
            self.types = types
            return layout
        }
    }

    /// Reads one well-formed operation line straight into an operation: its members as they come (no JSON tree and
    /// no dictionary of its members), its values into a layout shared with the lines of the same shape before it (no
    /// map per row), the entity looked up once for a run of lines. `nil` for anything else — a syntax error, an
    /// unknown or repeated key, an unknown attribute, a value of the wrong type, a missing member: ``parseLine(_:schema:)``
    /// then reads the line again and says what is wrong, so that both ways give the same operations and the same
    /// errors (`ApplyScriptTests` compares them). Strings are read by the same parser, escapes included.
    static func parsePlainLine(_ line: String, _ shapes: inout LineShapes) -> WriteOperation? {
        var line = line
        return line.withUTF8 { Self.parsePlainLine($0, &shapes) }
    }

    /// ``parsePlainLine(_:_:)`` of a line's UTF-8 bytes (valid UTF-8: those of a `String`).
    static func parsePlainLine(_ line: UnsafeBufferPointer<UInt8>, _ shapes: inout LineShapes) -> WriteOperation? {
        var parser = JSONParser(line)
        return try? Self.parsePlain(&parser, &shapes)
    }

    /// Why ``parsePlain(_:_:)`` gave up on a line (never shown: the generic way reads the line again).
    private struct NotPlain: Error {}

    private static func parsePlain(_ parser: inout JSONParser, _ shapes: inout LineShapes) throws -> WriteOperation {
        var kind: WriteOperation.Kind?
        var entityName: String?
        var id: String?
        var expectedVersion: Int64?
        var seen: UInt8 = 0
        shapes.fields.removeAll(keepingCapacity: true)
        try Self.members(&parser) { key, parser in
            guard let bit = Self.keys.firstIndex(of: key).map({ UInt8(1) << $0 }), seen & bit == 0 else {
                throw NotPlain()
            }
            seen |= bit
            switch key {
            case "op":
                guard case .string(let name) = try parser.parseValue(depth: 1),
                    let parsed = WriteOperation.Kind(rawValue: name)
                else { throw NotPlain() }
                kind = parsed
            case "entity":
                guard case .string(let name) = try parser.parseValue(depth: 1) else { throw NotPlain() }
                entityName = name
            case "id":
                switch try parser.parseValue(depth: 1) {
                case .null: break
                case .string(let text) where !text.isEmpty: id = text
                default: throw NotPlain()
                }
            case "version":
                switch try parser.parseValue(depth: 1) {
                case .null: break
                case .number(let text):
                    guard let version = Int64(text), version >= 0 else { throw NotPlain() }
                    expectedVersion = version
                default: throw NotPlain()
                }
            default:  // "values"
                if parser.at("n") {
                    guard case .null = try parser.parseValue(depth: 1) else { throw NotPlain() }
                    return
                }
                try Self.members(&parser) { name, parser in
                    guard !shapes.fields.contains(where: { $0.name == name }) else { throw NotPlain() }
                    let json = try parser.parseValue(depth: 2)
                    if case .array = json { throw NotPlain() }
                    if case .object = json { throw NotPlain() }
                    shapes.fields.append((name, json))
                }
            }
        }
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count, let kind, let entityName,
            let entity = shapes.entity(named: entityName), id != nil || kind == .insert,
            kind != .delete || shapes.fields.isEmpty, let layout = shapes.layout(of: entity)
        else { throw NotPlain() }
        shapes.values.removeAll(keepingCapacity: true)
        for (i, field) in shapes.fields.enumerated() {
            guard let value = try? ValueParsing.parse(field.json, as: shapes.types[i]) else { throw NotPlain() }
            shapes.values.append(value)
        }
        return shapes.values.withUnsafeBufferPointer {
            WriteOperation(
                kind: kind, entity: entity.name, id: id, layout: layout, values: $0, expectedVersion: expectedVersion)
        }
    }

    /// Reads the JSON object at the parser (leading whitespace allowed), calling `body` with each key and the parser
    /// at the key's value, which `body` must read.
    private static func members(
        _ parser: inout JSONParser, _ body: (String, inout JSONParser) throws -> Void
    ) throws {
        parser.skipWhitespace()
        guard parser.at("{") else { throw NotPlain() }
        parser.index += 1
        parser.skipWhitespace()
        if parser.at("}") {
            parser.index += 1
            return
        }
        while true {
            parser.skipWhitespace()
            guard parser.at("\"") else { throw NotPlain() }
            let key = try parser.parseString()
            parser.skipWhitespace()
            guard parser.at(":") else { throw NotPlain() }
            parser.index += 1
            parser.skipWhitespace()
            try body(key, &parser)
            parser.skipWhitespace()
            if parser.at(",") {
                parser.index += 1
                continue
            }
            guard parser.at("}") else { throw NotPlain() }
            parser.index += 1
            return
        }
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
