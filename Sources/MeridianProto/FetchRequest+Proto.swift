// MARK: - FetchRequest

/// A sort key as the wire carries it, in Core terms: an attribute and its direction.
package typealias WireSortKey = (attribute: String, ascending: Bool)

extension Meridian_V1_FetchRequest {
    /// A fetch request for the wire.
    ///
    /// - Parameters:
    ///   - entity: The entity fetched.
    ///   - predicate: Predicate text; empty selects every row.
    ///   - variables: Values for the predicate's `$name` variables, by name without the `$`.
    ///   - sort: Sort keys, most significant first (the id is the implicit final tie-break).
    ///   - sectionKey: The attribute the result is sectioned by (it must be the first sort key).
    ///   - limit: At most this many rows.
    package init(
        entity: String,
        predicate: String = "",
        variables: [String: WireVariable] = [:],
        sort: [WireSortKey] = [],
        sectionKey: String? = nil,
        limit: UInt32? = nil
    ) {
        self.init()
        self.entity = entity
        self.predicate = predicate
        self.variables = variables.mapValues(Meridian_V1_Variable.init)
        self.sort = sort.map { key in
            var proto = Meridian_V1_SortKey()
            proto.attribute = key.attribute
            proto.descending = !key.ascending
            return proto
        }
        if let sectionKey { self.sectionKey = sectionKey }
        if let limit { self.limit = limit }
    }

    /// The sort keys as (attribute, ascending) pairs.
    package var sortKeys: [WireSortKey] {
        self.sort.map { ($0.attribute, !$0.descending) }
    }

    /// The section key, or `nil` when the result is not sectioned.
    package var sectionKeyIfPresent: String? {
        self.hasSectionKey ? self.sectionKey : nil
    }

    /// The limit, or `nil` when there is none.
    ///
    /// - Throws: ``ProtoConversionError`` with code `invalidRequest` for a zero limit.
    package func limitIfPresent() throws(ProtoConversionError) -> UInt32? {
        guard self.hasLimit else { return nil }
        guard self.limit > 0 else { throw ProtoConversionError(.invalidRequest, "limit must be at least 1") }
        return self.limit
    }

    /// The predicate's variables in Core terms.
    ///
    /// - Throws: ``ProtoConversionError`` naming the variable that has no value or holds NaN.
    package func decodedVariables() throws(ProtoConversionError) -> [String: WireVariable] {
        var out: [String: WireVariable] = [:]
        out.reserveCapacity(self.variables.count)
        for (name, variable) in self.variables {
            do {
                out[name] = try WireVariable(variable)
            } catch {
                throw error.within("variable $\(name)")
            }
        }
        return out
    }
}
