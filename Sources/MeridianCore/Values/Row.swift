// MARK: - Row

/// One entity row: its id and its attribute values.
///
/// An explicit null and an absent attribute are one thing: `values` never holds `.null` (setting an attribute to
/// `.null`, through the initializer, `values` or the subscript, removes it), and an absent attribute reads as
/// `.null`. So two rows with the same content are equal and hash alike however they were built, and no layer
/// normalizes by hand. Reading `row["id"]` gives the id as a string value, so predicates and sort keys can name `id`
/// like any other attribute.
///
/// A row read from the store or from the wire keeps its values compactly, one per name of a ``RowLayout`` shared by
/// the rows read with it, instead of a dictionary of its own, each value as its payload alone (for a string and two
/// ints a dictionary takes 232 bytes, the compact form 64 when its layout is shaped like the row, 80 otherwise; see
/// ``RowValueBuffer``). Reading `values` then builds the dictionary; the subscript and the package's iteration
/// (`forEachValue`) read the compact form as it is. How a row keeps its values never shows in its behaviour:
/// equality, hashing and every accessor are the same for both.
public struct Row: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// How a row keeps its values (what a cache keeps of a row; see `storage`).
    ///
    /// Either case is one reference, so that the storage takes 8 bytes (the references' spare bits tell the cases
    /// apart), a row 24 and an optional row 24 — the slot a controller's tree keeps for every row — and a client's
    /// cached row 32; with the dictionary itself as a payload the enum took a ninth byte, which padding made 8 more in
    /// each of them.
    ///
    /// `@unchecked Sendable`: a `RowValueBuffer` is a `ManagedBuffer`, which the standard library declares not
    /// `Sendable`; a row writes one only while it holds the only reference, and never writes a shared one.
    @usableFromInline package enum Storage: @unchecked Sendable {
        /// Values by name, never `.null`.
        case dictionary(RowValues)
        /// One value per name of the buffer's layout, `.null` where the row has none.
        case compact(RowValueBuffer)
    }

    /// The row's primary key.
    public var id: String
    /// The row's values as a cache keeps them.
    @usableFromInline package private(set) var storage: Storage

    /// The compact form's values; nil for a row kept as a dictionary.
    @inline(__always)
    private var buffer: RowValueBuffer? {
        if case .compact(let buffer) = self.storage { return buffer }
        return nil
    }

    /// The attribute values by name (`id` not included); never `.null` (a null assigned here is removed).
    public var values: [String: Value] {
        get {
            switch self.storage {
            case .compact(let buffer): Self.dictionary(of: buffer)
            case .dictionary(let box): box.values
            }
        }
        set {
            self.storage = Self.storage(newValue)
            self.removeNulls()
        }
        _modify {
            var values = self.takeValues()
            defer {
                self.storage = Self.storage(values)
                self.removeNulls()
            }
            yield &values
        }
    }

    /// Creates a row; null values are dropped.
    public init(id: String, values: [String: Value] = [:]) {
        self.id = id
        self.storage = Self.storage(values)
        self.removeNulls()
    }

    /// A dictionary row's storage: the shared empty values for none, an object of their own otherwise.
    private static func storage(_ values: [String: Value]) -> Storage {
        .dictionary(values.isEmpty ? RowValues.empty : RowValues(values))
    }

    /// The row's values as a dictionary to change and put back in an object of their own (made from a compact row's
    /// values): the row holds the shared empty one meanwhile, so that a dictionary only this row held is the caller's
    /// alone and changes in place.
    private mutating func takeValues() -> [String: Value] {
        switch self.storage {
        case .compact(let buffer):
            return Self.dictionary(of: buffer)
        case .dictionary(let box):
            let values = box.values
            self.storage = .dictionary(RowValues.empty)
            return values
        }
    }

    /// Creates a row holding one value per name of `layout` (`.null` for an absent one), in its compact form.
    package init(id: String, layout: RowLayout, values: UnsafeBufferPointer<Value>) {
        self.id = id
        self.storage = .compact(RowValueBuffer.make(layout, values))
    }

    /// Creates a row holding one value per name of `layout` (`.null` for an absent one), in its compact form.
    package init(id: String, layout: RowLayout, values: [Value]) {
        self.init(id: id, storage: values.withUnsafeBufferPointer { .compact(RowValueBuffer.make(layout, $0)) })
    }

    /// Creates a row in its compact form whose values start as a copy of `initial` (one per name of `layout`) and are
    /// then changed in place by `fill` (in a buffer on the stack: no array of values made first); `nil` when `fill`
    /// returns false.
    package init?(
        id: String, layout: RowLayout, copying initial: UnsafeBufferPointer<Value>,
        _ fill: (UnsafeMutableBufferPointer<Value>) -> Bool
    ) {
        precondition(initial.count == layout.count, "a row has \(initial.count) values for \(layout.count) names")
        let made: RowValueBuffer? = withUnsafeTemporaryAllocation(of: Value.self, capacity: layout.count) { values in
            _ = values.initialize(fromContentsOf: initial)
            defer { _ = values.deinitialize() }
            guard fill(values) else { return nil }
            return RowValueBuffer.make(layout, UnsafeBufferPointer(values))
        }
        guard let made else { return nil }
        self.init(id: id, storage: .compact(made))
    }

    /// Creates a row with another row's storage (as a cache keeps it).
    package init(id: String, storage: Storage) {
        self.id = id
        self.storage = storage
    }

    private mutating func removeNulls() {
        guard case .dictionary(let box) = self.storage, box.values.values.contains(where: \.isNull) else { return }
        self.storage = Self.storage(box.values.filter { !$0.value.isNull })
    }

    private static func dictionary(of buffer: RowValueBuffer) -> [String: Value] {
        let names = buffer.layout.names
        var dictionary = [String: Value](minimumCapacity: names.count)
        buffer.forEachValue { i, value in
            if !value.isNull { dictionary[names[i]] = value }
        }
        return dictionary
    }

    /// The value of an attribute, `.null` when absent; `"id"` reads the id.
    public subscript(_ attribute: String) -> Value {
        get {
            if attribute == EntitySchema.idAttribute { return .string(self.id) }
            return self.value(of: attribute)
        }
        set {
            precondition(attribute != EntitySchema.idAttribute, "a row's id is set through `id`")
            if var buffer = self.buffer {
                if let position = buffer.layout.position(of: attribute) {
                    self.storage = .dictionary(RowValues.empty)  // so that `buffer` may be the only reference
                    if !isKnownUniquelyReferenced(&buffer) || !buffer.replaceInPlace(position, with: newValue) {
                        buffer = buffer.replacing(position, with: newValue)
                    }
                    self.storage = .compact(buffer)
                    return
                }
                guard !newValue.isNull else { return }
            }
            var values = self.takeValues()
            // Not `newValue.isNull ? nil : newValue`: `Value` is expressible by `nil`, which would store `.null`.
            if newValue.isNull {
                values.removeValue(forKey: attribute)
            } else {
                values[attribute] = newValue
            }
            self.storage = Self.storage(values)
        }
    }

    /// The value of an attribute other than the id, `.null` when absent.
    @inline(__always)
    package func value(of attribute: String) -> Value {
        switch self.storage {
        case .compact(let buffer):
            guard let position = buffer.layout.position(of: attribute) else { return .null }
            return buffer[position]
        case .dictionary(let box):
            return box.values[attribute] ?? .null
        }
    }

    /// ``value(of:)``, trying position `hint` of a compact row's layout first (rows of one shape list their
    /// attributes in one order: a reader going through them in that order finds each at its index).
    @inline(__always)
    package func value(of attribute: String, hint: Int) -> Value {
        switch self.storage {
        case .compact(let buffer):
            guard let position = buffer.layout.position(of: attribute, hint: hint) else { return .null }
            return buffer[position]
        case .dictionary(let box):
            return box.values[attribute] ?? .null
        }
    }

    /// Calls `body` with each attribute's name and value, absent ones (null) left out, in no particular order.
    @inline(__always)
    package func forEachValue(_ body: (String, Value) throws -> Void) rethrows {
        switch self.storage {
        case .compact(let buffer):
            let names = buffer.layout.names
            try buffer.forEachValue { i, value in
                if !value.isNull { try body(names[i], value) }
            }
        case .dictionary(let box):
            for (name, value) in box.values { try body(name, value) }
        }
    }

    /// Calls `body` with the compact form's layout and its values by position (`.null` for a name without one) and
    /// returns what it returns; `nil`, without calling it, for a row kept as a dictionary. For the hot writers that
    /// walk a row's values by position (`DeltaWireEncoding`).
    @inline(__always)
    package func withCompactValues<R>(_ body: (RowLayout, UnsafeBufferPointer<Value>) throws -> R) rethrows -> R? {
        guard let buffer = self.buffer else { return nil }
        return try buffer.withValues { try body(buffer.layout, $0) }
    }

    /// The compact form's layout; `nil` for a row kept as a dictionary.
    @inlinable @usableFromInline
    package var compactLayout: RowLayout? {
        if case .compact(let buffer) = self.storage { return buffer.layout }
        return nil
    }

    /// Calls `body` with each position of the compact form's layout and its value (`.null` for a name without one),
    /// in order, each value read from its payload (no buffer of `Value`s made, as ``withCompactValues(_:)`` makes);
    /// does nothing for a row kept as a dictionary. For the hot writers (`DeltaWireEncoding`).
    @inlinable @usableFromInline
    package func forEachCompactValue(_ body: (Int, Value) throws -> Void) rethrows {
        if case .compact(let buffer) = self.storage { try buffer.forEachValue(body) }
    }

    /// The number of attributes with a value (`values.count`).
    package var valueCount: Int {
        switch self.storage {
        case .compact(let buffer): buffer.nonNullCount
        case .dictionary(let box): box.values.count
        }
    }

    /// The names of the attributes whose values differ between `self` and `other` (sorted).
    public func changedAttributes(from other: Row) -> [String] {
        var names: [String] = []
        self.forEachValue { name, value in
            if !Self.same(value, other.value(of: name)) { names.append(name) }
        }
        other.forEachValue { name, _ in
            if self.value(of: name).isNull { names.append(name) }
        }
        return names.sorted { $0.utf8Compare($1) < 0 }
    }

    /// Strict identity of two values: same storage type and same bits (an int 1 differs from a double 1.0).
    static func same(_ a: Value, _ b: Value) -> Bool {
        a.type == b.type && a == b
    }

    public var description: String {
        var fields: [(String, Value)] = []
        self.forEachValue { fields.append(($0, $1)) }
        fields.sort { $0.0.utf8Compare($1.0) < 0 }
        let text = fields.map { "\($0.0): \($0.1)" }
        return "Row(\(Value.quote(self.id))\(text.isEmpty ? "" : ", ")\(text.joined(separator: ", ")))"
    }
}

// MARK: - Equality and hashing, whatever the storage

extension Row {
    public static func == (lhs: Row, rhs: Row) -> Bool {
        lhs.id == rhs.id && lhs.storage == rhs.storage
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.id)
        hasher.combine(self.storage)
    }
}

extension Row.Storage: Equatable, Hashable {
    /// The same values by name (`Value`'s equality), however each side keeps them.
    @usableFromInline package static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.dictionary(let a), .dictionary(let b)):
            return a === b || a.values == b.values
        case (.compact(let a), .compact(let b)) where a.layout === b.layout || a.layout.names == b.layout.names:
            // One layout, or two of the same names (rows read from two messages): position by position.
            if a === b { return true }
            return a.withValues { a in b.withValues { b in a.elementsEqual(b) } }
        default:
            let a = Row(id: "", storage: lhs)
            let b = Row(id: "", storage: rhs)
            guard a.valueCount == b.valueCount else { return false }
            var equal = true
            a.forEachValue { name, value in
                if equal, b.value(of: name) != value { equal = false }
            }
            return equal
        }
    }

    /// As `Dictionary` hashes: each name and value hashed alone, the results combined in an order-free way.
    @usableFromInline package func hash(into hasher: inout Hasher) {
        var combined = 0
        Row(id: "", storage: self).forEachValue { name, value in
            var element = hasher
            element.combine(name)
            element.combine(value)
            combined ^= element.finalize()
        }
        hasher.combine(combined)
    }
}

/// A row's values by name (never `.null`), in an object of their own: ``Row/Storage``'s dictionary case. Immutable (a
/// row changing its values puts them in a new one; reads are plain loads, with no exclusivity check for a class's
/// variable).
@usableFromInline package final class RowValues: Sendable {
    let values: [String: Value]

    init(_ values: [String: Value]) {
        self.values = values
    }

    /// The values of every row without any, shared.
    static let empty = RowValues([:])
}
