internal import Yams

// MARK: - YAML node helpers

/// One key–value pair of a YAML mapping whose key is a string.
struct YAMLEntry {
    /// The key's text.
    let key: String
    /// The key's node, for error locations.
    let keyNode: Yams.Node
    /// The value's node.
    let value: Yams.Node
}

/// A YAML mapping read as string-keyed entries, in document order.
struct YAMLFields {
    /// The mapping node itself, for errors about missing keys.
    let node: Yams.Node
    /// The entries, in document order.
    let entries: [YAMLEntry]

    /// The entry with this key, if present.
    subscript(key: String) -> YAMLEntry? {
        self.entries.first { $0.key == key }
    }
}

/// What kind of YAML value a node holds, resolved the way YAML 1.1 (and JSON) resolves plain scalars.
enum YAMLKind {
    case mapping, sequence, string, int, float, bool, null, timestamp, binary, other

    init(_ node: Yams.Node) {
        switch node {
        case .mapping: self = .mapping
        case .sequence: self = .sequence
        case .alias: self = .other
        case .scalar:
            switch node.tag.rawValue {
            case Tag.Name.str.rawValue: self = .string
            case Tag.Name.int.rawValue: self = .int
            case Tag.Name.float.rawValue: self = .float
            case Tag.Name.bool.rawValue: self = .bool
            case Tag.Name.null.rawValue: self = .null
            case Tag.Name.timestamp.rawValue: self = .timestamp
            case Tag.Name.binary.rawValue: self = .binary
            default: self = .other
            }
        }
    }

    /// The kind with an article, for messages: "a mapping", "an integer".
    var phrase: String {
        switch self {
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .string: "a string"
        case .int: "an integer"
        case .float: "a number"
        case .bool: "a boolean"
        case .null: "null"
        case .timestamp: "a timestamp"
        case .binary: "binary data"
        case .other: "a tagged value"
        }
    }
}

extension Yams.Node {
    /// The scalar's text, or `nil` for mappings and sequences.
    var scalarText: String? {
        if case .scalar(let scalar) = self { return scalar.string }
        return nil
    }

    /// The kind of value the node holds.
    var kind: YAMLKind { YAMLKind(self) }
}
