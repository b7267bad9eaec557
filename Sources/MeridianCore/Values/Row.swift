// MARK: - Row

/// One entity row: its id and its attribute values.
///
/// An explicit null and an absent attribute are one thing: `values` never holds `.null` (setting an attribute to
/// `.null`, through the initializer, `values` or the subscript, removes it), and an absent attribute reads as
/// `.null`. So two rows with the same content are equal and hash alike however they were built, and no layer
/// normalizes by hand. Reading `row["id"]` gives the id as a string value, so predicates and sort keys can name `id`
/// like any other attribute.
public struct Row: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// The row's primary key.
    public var id: String
    /// The attribute values by name (`id` not included); never `.null` (a null assigned here is removed).
    public var values: [String: Value] {
        // Not referring to `oldValue` keeps `row.values[name] = value` an in-place mutation.
        didSet { Self.removeNulls(&self.values) }
    }

    /// Creates a row; null values are dropped.
    public init(id: String, values: [String: Value] = [:]) {
        self.id = id
        self.values = values
        Self.removeNulls(&self.values)
    }

    /// Creates a row from values known to hold no null (another row's `values`), without looking for one.
    package init(id: String, nullFreeValues values: [String: Value]) {
        assert(!values.values.contains(where: \.isNull), "null values given as null-free")
        self.id = id
        self.values = values
    }

    private static func removeNulls(_ values: inout [String: Value]) {
        guard values.values.contains(where: \.isNull) else { return }
        values = values.filter { !$0.value.isNull }
    }

    /// The value of an attribute, `.null` when absent; `"id"` reads the id.
    public subscript(_ attribute: String) -> Value {
        get {
            if attribute == EntitySchema.idAttribute { return .string(self.id) }
            return self.values[attribute] ?? .null
        }
        set {
            precondition(attribute != EntitySchema.idAttribute, "a row's id is set through `id`")
            // Not `newValue.isNull ? nil : newValue`: `Value` is expressible by `nil`, which would store `.null`.
            if newValue.isNull {
                self.values.removeValue(forKey: attribute)
            } else {
                self.values[attribute] = newValue
            }
        }
    }

    /// The names of the attributes whose values differ between `self` and `other` (sorted).
    public func changedAttributes(from other: Row) -> [String] {
        var names: [String] = []
        for (name, value) in self.values where !Self.same(value, other[name]) {
            names.append(name)
        }
        for name in other.values.keys where self.values[name] == nil {
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
