// MARK: - Row

/// One entity row: its id and its attribute values.
///
/// An attribute missing from `values` reads as `.null`. Reading `row["id"]` gives the id as a string value, so
/// predicates and sort keys can name `id` like any other attribute.
public struct Row: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// The row's primary key.
    public var id: String
    /// The attribute values by name (`id` not included).
    public var values: [String: Value]

    /// Creates a row.
    public init(id: String, values: [String: Value] = [:]) {
        self.id = id
        self.values = values
    }

    /// The value of an attribute, `.null` when absent; `"id"` reads the id.
    public subscript(_ attribute: String) -> Value {
        get {
            if attribute == EntitySchema.idAttribute { return .string(self.id) }
            return self.values[attribute] ?? .null
        }
        set {
            precondition(attribute != EntitySchema.idAttribute, "a row's id is set through `id`")
            self.values[attribute] = newValue
        }
    }

    /// The names of the attributes whose values differ between `self` and `other` (sorted), treating an absent
    /// value as null.
    public func changedAttributes(from other: Row) -> [String] {
        var names: [String] = []
        for (name, value) in self.values where !Self.same(value, other.values[name] ?? .null) {
            names.append(name)
        }
        for (name, value) in other.values where self.values[name] == nil && !value.isNull {
            names.append(name)
        }
        return names.sorted { $0.utf8Compare($1) < 0 }
    }

    /// Strict identity of two values: same storage type and same bits (an int 1 differs from a double 1.0).
    static func same(_ a: Value, _ b: Value) -> Bool {
        a.type == b.type && a == b
    }

    public var description: String {
        let fields = self.values.keys.sorted { $0.utf8Compare($1) < 0 }.map { "\($0): \(self.values[$0]!)" }
        return "Row(\(Value.quote(self.id))\(fields.isEmpty ? "" : ", ")\(fields.joined(separator: ", ")))"
    }
}
