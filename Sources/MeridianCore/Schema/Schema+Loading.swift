internal import Foundation
internal import Yams

// MARK: - Loading schema files

extension Schema {
    /// Parses a schema from YAML (or JSON, which is YAML) text.
    ///
    /// The format is described in `docs/schema.md`. Entities, attributes, indexes and derived attributes keep the
    /// order in which the text declares them.
    ///
    /// ```swift
    /// let schema = try Schema.parse(yaml: """
    ///     version: 1
    ///     entities:
    ///       Author:
    ///         attributes:
    ///           firstName: string
    ///           lastName: string?
    ///     """, file: "authors.yaml")
    /// ```
    ///
    /// - Parameters:
    ///   - text: The schema text.
    ///   - file: The name errors should give for the text, usually its path.
    /// - Returns: The schema.
    /// - Throws: ``SchemaError`` naming the file, the line and column of the offending node and what is wrong,
    ///   printed as `file:line:column: code: message`.
    public static func parse(yaml text: String, file: String? = nil) throws(SchemaError) -> Schema {
        let root: Yams.Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw YAMLErrorTranslation.schemaError(from: error, text: text, file: file)
        } catch {
            throw SchemaError(.syntax, "\(error)", file: file)
        }
        return try SchemaDecoder(file: file).decode(root)
    }

    /// Reads and parses a schema file (YAML or JSON).
    ///
    /// Reading the file is the only I/O; see ``parse(yaml:file:)`` for the rest.
    ///
    /// - Parameter path: The file's path; errors name the file by this path.
    /// - Returns: The schema.
    /// - Throws: ``SchemaError`` with code `unreadable` when the file is missing, unreadable or not UTF-8, and
    ///   otherwise as ``parse(yaml:file:)`` does.
    public static func load(contentsOf path: String) throws(SchemaError) -> Schema {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw SchemaError(.unreadable, "cannot read schema file '\(path)': no such file", file: path)
        }
        guard !isDirectory.boolValue else {
            throw SchemaError(.unreadable, "cannot read schema file '\(path)': it is a directory", file: path)
        }
        guard let data = manager.contents(atPath: path) else {
            throw SchemaError(
                .unreadable,
                "cannot read schema file '\(path)': permission denied or I/O error",
                file: path
            )
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw SchemaError(.unreadable, "cannot read schema file '\(path)': it is not UTF-8 text", file: path)
        }
        return try Self.parse(yaml: text, file: path)
    }
}
