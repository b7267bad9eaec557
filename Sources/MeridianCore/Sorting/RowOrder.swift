// MARK: - RowOrder

/// The order of a result: sort keys, then the id ascending as the implicit final tie-break, so the order is total.
///
/// Written as a comma-separated list of attribute names, `-` before a name for descending: `"title,-category"`.
/// The comparator (``compare(_:_:)``) and the `ORDER BY` the store compiles the order to agree exactly:
/// - values compare as SQLite does (numbers exactly across int and double, strings by UTF-8 bytes, bytes with
///   `memcmp`), see ``Value/compare(_:_:)``;
/// - nulls come first in ascending order and last in descending order (SQLite's default);
/// - `bool` attributes may be sort keys: they order as 0 and 1 (`false` first ascending).
///
/// ```swift
/// let order = try RowOrder(parsing: "title,-category").checked(against: point)
/// rows.sort { order.compare($0, $1) < 0 }
/// try await store.snapshot(entity: "Point", orderBy: order)  // ORDER BY "title" ASC, "category" DESC, "id" ASC
/// ```
///
/// - Note: Not named `SortOrder`, so that it never clashes with Foundation's type of that name.
public struct RowOrder: Sendable, Hashable, CustomStringConvertible {
    /// The explicit sort keys, most significant first (the id tie-break is implicit).
    public var descriptors: [SortKey]

    /// Creates an order from sort keys.
    public init(_ descriptors: [SortKey] = []) {
        self.descriptors = descriptors
    }

    /// The order by id only.
    public static let byID = RowOrder()

    /// Parses sort-key syntax: `"title,-category"`; spaces around names are ignored, `+` is allowed for ascending,
    /// and the empty string means "by id only".
    ///
    /// - Parameter text: The sort keys.
    /// - Throws: ``QueryError`` with code `syntax` and the character position of a malformed key.
    public init(parsing text: String) throws(QueryError) {
        var descriptors: [SortKey] = []
        let chars = Array(text)
        if chars.allSatisfy(\.isWhitespace) {
            self.init([])
            return
        }
        var start = 0
        while start <= chars.count {
            var end = start
            while end < chars.count, chars[end] != "," { end += 1 }
            var a = start
            var b = end
            while a < b, chars[a].isWhitespace { a += 1 }
            while b > a, chars[b - 1].isWhitespace { b -= 1 }
            var ascending = true
            if a < b, chars[a] == "-" || chars[a] == "+" {
                ascending = chars[a] == "+"
                a += 1
            }
            let name = String(chars[a..<b])
            guard !name.isEmpty else {
                throw QueryError(.syntax, "empty sort key (write keys as title,-category)", position: a)
            }
            guard Identifier.isValid(name) else {
                throw QueryError(
                    .syntax,
                    "sort key '\(name)' is not an attribute name",
                    position: a,
                    length: b - a
                )
            }
            descriptors.append(SortKey(name, ascending: ascending))
            start = end + 1
        }
        self.init(descriptors)
    }

    /// The order in sort-key syntax, e.g. `title,-category`.
    public var description: String {
        self.descriptors.map(\.description).joined(separator: ",")
    }

    /// The keys actually compared: the explicit keys up to and including an explicit `id` key, then `id`
    /// ascending unless it was already given.
    public var effectiveDescriptors: [SortKey] {
        var keys: [SortKey] = []
        for descriptor in self.descriptors {
            keys.append(descriptor)
            if descriptor.attribute == EntitySchema.idAttribute { return keys }
        }
        keys.append(SortKey(EntitySchema.idAttribute))
        return keys
    }

    // MARK: Checking

    /// Checks every key against an entity: it must be `id` or a stored attribute, and appear once.
    ///
    /// Any attribute type may be a key (`bool` orders as 0 and 1, `bytes` by `memcmp`).
    ///
    /// - Parameters:
    ///   - entity: The entity whose rows are sorted.
    ///   - sectionKey: The attribute results are sectioned by, if any; it must be the first sort key.
    /// - Returns: `self`, checked.
    /// - Throws: ``QueryError`` with code `unknownAttribute`, `syntax` (a key given twice) or
    ///   `invalidSectionKey`. Positions count keys (0 for the first key), since the order may not come from text.
    public func checked(against entity: EntitySchema, sectionKey: String? = nil) throws(QueryError) -> RowOrder {
        var seen: Set<String> = []
        for (i, descriptor) in self.descriptors.enumerated() {
            guard entity.hasQueryableAttribute(descriptor.attribute) else {
                let known = ([EntitySchema.idAttribute] + entity.attributes.map(\.name)).joined(separator: ", ")
                throw QueryError(
                    .unknownAttribute,
                    "unknown sort key '\(descriptor.attribute)' (\(entity.name) has: \(known))",
                    position: i
                )
            }
            guard seen.insert(descriptor.attribute).inserted else {
                throw QueryError(.syntax, "sort key '\(descriptor.attribute)' is given twice", position: i)
            }
        }
        if let sectionKey {
            guard let first = self.descriptors.first, first.attribute == sectionKey else {
                let actual = self.descriptors.first.map { "'\($0.attribute)'" } ?? "none (the order is by id only)"
                throw QueryError(
                    .invalidSectionKey,
                    "the section key '\(sectionKey)' must be the first sort key; the first sort key is \(actual)",
                    position: 0
                )
            }
        }
        return self
    }

    // MARK: Comparing

    /// Compares two rows: negative when `a` comes first, positive when `b` does, zero only for the same id.
    ///
    /// - Returns: A negative number, zero or a positive number.
    public func compare(_ a: Row, _ b: Row) -> Int {
        // `effectiveDescriptors`, walked without building its array (an allocation per comparison).
        for descriptor in self.descriptors {
            let c = Value.compare(a[descriptor.attribute], b[descriptor.attribute])
            if c != 0 { return descriptor.ascending ? c : -c }
            if descriptor.attribute == EntitySchema.idAttribute { return 0 }
        }
        return Value.compare(a[EntitySchema.idAttribute], b[EntitySchema.idAttribute])
    }

    /// Whether `a` comes before `b`, for `sort(by:)`.
    public func areInIncreasingOrder(_ a: Row, _ b: Row) -> Bool {
        self.compare(a, b) < 0
    }
}
