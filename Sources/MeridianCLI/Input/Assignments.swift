// MARK: - key=value arguments

internal import MeridianCore

/// The `key=value…` arguments of `insert`, `update` and `upsert`, parsed by the attribute types of the served schema.
///
/// - `key=value` parses `value` by the attribute's type (``ValueParsing``);
/// - `key=` (nothing after `=`) sets the attribute to null;
/// - `key:=JSON` takes a JSON literal, for what plain text cannot say: `title:='""'` is the empty string,
///   `note:=null` is null;
/// - `id=…` gives the row's id (for `insert` only; `update` and `upsert` take it as an argument).
///
/// Every error names the argument at fault: `argument 'category=abc': "abc" is not an int (…)`.
struct Assignments: Sendable, Equatable {
    /// The id given as `id=…`, if any.
    var id: String?
    /// The attribute values by name.
    var values: [String: Value]

    /// Parses the arguments against an entity.
    ///
    /// - Parameters:
    ///   - arguments: The arguments as typed.
    ///   - entity: The entity written.
    ///   - allowID: Whether `id=…` is accepted.
    /// - Throws: ``CLIError`` with status `badInput`, naming the argument.
    init(parsing arguments: [String], for entity: EntitySchema, allowID: Bool) throws(CLIError) {
        self.id = nil
        self.values = [:]
        for argument in arguments {
            guard let equals = argument.firstIndex(of: "=") else {
                throw CLIError.badInput("argument '\(argument)': expected key=value (key= sets null)")
            }
            var key = String(argument[..<equals])
            let text = String(argument[argument.index(after: equals)...])
            var isJSON = false
            if key.hasSuffix(":") {
                key.removeLast()
                isJSON = true
            }
            let context = "argument '\(argument)'"
            guard !key.isEmpty else { throw CLIError.badInput("\(context): the attribute name is missing") }
            if key == EntitySchema.idAttribute {
                guard allowID else {
                    throw CLIError.badInput("\(context): the id is given as the ID argument, not as id=…")
                }
                guard !text.isEmpty, !isJSON else { throw CLIError.badInput("\(context): the id must not be empty") }
                self.id = text
                continue
            }
            guard let attribute = entity.attribute(named: key) else {
                throw CLIError.badInput("\(context): " + NameSuggestion.unknownAttribute(key, in: entity))
            }
            guard self.values[key] == nil else { throw CLIError.badInput("\(context): '\(key)' is set twice") }
            do throws(ValueError) {
                if isJSON {
                    let json: JSON
                    do {
                        json = try JSON.parse(text)
                    } catch {
                        throw ValueError("not a JSON value: \(error)")
                    }
                    self.values[key] = try ValueParsing.parse(json, as: attribute.type)
                } else if text.isEmpty {
                    self.values[key] = .null
                } else {
                    self.values[key] = try ValueParsing.parse(text, as: attribute.type)
                }
            } catch {
                throw CLIError.badInput("\(context): \(error.message)")
            }
        }
    }
}
