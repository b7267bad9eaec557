// MARK: - Canonical description and fingerprint

extension Schema {
    /// A canonical, stable text form of the schema, independent of how the schema file was written.
    ///
    /// One line per item, each ending in `\n`; entities, attributes, indexes and derived attributes in declaration
    /// order (the order of the `Schema` value, so two schemas have the same description exactly when they are
    /// equal). Names are identifiers and need no quoting; defaults are written as ``Value/description`` writes
    /// them (strings quoted and escaped, doubles in Swift's shortest round-trip form, timestamps in ISO-8601 UTC,
    /// bytes as `x'…'`).
    ///
    /// ```text
    /// schema 1
    /// entity Point id=auto
    ///   attribute title string
    ///   attribute category int default=0
    ///   attribute latitude double?
    ///   index category_title (category, title)
    ///   index by_title unique (title)
    ///   derived coordinate coordinate(latitude, longitude)
    /// ```
    ///
    /// The form is frozen: stores record the ``fingerprint`` computed from it, so changing the form would make
    /// every store see a schema change.
    public var canonicalDescription: String {
        var out = "schema \(self.version)\n"
        for entity in self.entities {
            out += "entity \(entity.name) id=\(entity.idPolicy.rawValue)\n"
            for attribute in entity.attributes {
                out += "  attribute \(attribute.name) \(attribute.type)"
                if attribute.isOptional { out += "?" }
                if let value = attribute.defaultValue { out += " default=\(value)" }
                out += "\n"
            }
            for index in entity.indexes {
                out += "  index \(index.name)"
                if index.isUnique { out += " unique" }
                out += " (" + index.attributes.joined(separator: ", ") + ")\n"
            }
            for derived in entity.derived {
                switch derived.kind {
                case .coordinate(let latitude, let longitude):
                    out += "  derived \(derived.name) coordinate(\(latitude), \(longitude))\n"
                }
            }
        }
        return out
    }

    /// A fingerprint of the schema: 16 lowercase hex digits of the 64-bit FNV-1a hash of the UTF-8 bytes of
    /// ``canonicalDescription``.
    ///
    /// Stable across runs, processes and platforms (it uses neither `hashValue` nor Foundation). Stores record
    /// it to notice that the schema they serve has changed; equal schemas always have equal fingerprints.
    public var fingerprint: String {
        FNV1a64.hex(of: self.canonicalDescription.utf8)
    }
}
