// MARK: - Row ↔ Meridian_V1_Row

package import MeridianCore

extension Meridian_V1_Row {
    /// The wire form of a row at a version.
    ///
    /// - Parameters:
    ///   - row: The row.
    ///   - version: The row's version in the store (0 when unknown, as for a row the client has not written yet).
    package init(_ row: Row, version: Int64 = 0) {
        self.init()
        self.id = row.id
        self.version = version
        self.values = [String: Meridian_V1_Value](row.values)
    }
}

extension Row {
    /// The Core form of a wire row; the version is dropped (read it from the message).
    ///
    /// An explicit null on the wire is an absent attribute in the row (see ``Row``).
    ///
    /// - Throws: ``ProtoConversionError`` naming the row and attribute whose value is invalid.
    package init(_ proto: Meridian_V1_Row) throws(ProtoConversionError) {
        do {
            self.init(id: proto.id, values: try [String: Value](proto.values))
        } catch {
            throw error.within("row \(Value.quote(proto.id))")
        }
    }
}

// MARK: - RowUpdate

extension Meridian_V1_RowUpdate {
    /// The wire form of an updated row with the names of its changed attributes.
    package init(_ row: Row, version: Int64, changed: [String]) {
        self.init()
        self.row = Meridian_V1_Row(row, version: version)
        self.changed = changed
    }

    /// The row, its version and its changed attribute names.
    ///
    /// - Throws: ``ProtoConversionError``: `missingField` without a row, `invalidValue` for NaN.
    package func decoded() throws(ProtoConversionError) -> (row: Row, version: Int64, changed: [String]) {
        guard self.hasRow else { throw ProtoConversionError(.missingField, "a row update carries no row") }
        return (try Row(self.row), self.row.version, self.changed)
    }
}
