// MARK: - A row where a snapshot read's cursor stands

internal import CMeridianSQLite
public import MeridianCore

/// A row of a snapshot read, where the store's cursor stands
/// (``Store/streamSnapshotColumns(entity:where:orderBy:limit:_:)``): its id, version and values read
/// from the statement's columns when asked, texts and blobs not copied. Valid only during the reader's call that was
/// given it — the cursor's next step overwrites what it points to.
///
/// The values are the ones ``Store/streamSnapshot(entity:where:orderBy:limit:readerWaits:_:)``'s rows hold: typed by
/// the schema the same way, a stored value that does not fit its attribute given as it is stored (and counted as a
/// misfit), a text's invalid UTF-8 replaced as `String(decoding:as:)` replaces it.
public struct CursorRow {
    let statement: OpaquePointer
    let attributes: [Attribute]
    /// The read's state, shared by its rows.
    let state: UnsafeMutablePointer<ReadState>

    /// What the rows of one read share: the stored values that did not fit their attributes, and the read's time
    /// limit.
    struct ReadState {
        var misfits = 0
        /// When the read's time limit ends (`nil`: no limit); moved by the time its reader waits.
        var deadline: ContinuousClock.Instant?
        /// The read's `sqlite3 *`, whose progress handler keeps the limit.
        let connection: UnsafeMutableRawPointer?
    }

    /// The first attribute's column: the id and the version come first.
    static let firstValueColumn: CInt = 2

    /// The row's version.
    public var version: Int64 {
        var value = meridian_sqlite3_value()
        meridian_sqlite3_column(UnsafeMutableRawPointer(self.statement), 1, &value)
        return value.integer
    }

    /// The row's id.
    public var id: String { self.withID { String(decoding: $0, as: UTF8.self) } }

    /// Calls `body` with the UTF-8 of the row's id.
    public func withID<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        var value = meridian_sqlite3_value()
        meridian_sqlite3_column(UnsafeMutableRawPointer(self.statement), 0, &value)
        return try Self.withValidUTF8(value, body)
    }

    /// Runs `wait` — the reader waiting for its consumer — with the read's time limit paused: the limit counts
    /// SQLite's work, not the time a reader waits (``Configuration/readTimeout``). A wait shorter than a millisecond
    /// is not worth moving the limit for.
    public func pausingTimeLimit<Result>(_ wait: () throws -> Result) rethrows -> Result {
        guard self.state.pointee.deadline != nil else { return try wait() }
        let start = ContinuousClock.now
        defer {
            let now = ContinuousClock.now
            if now - start > .milliseconds(1), let deadline = self.state.pointee.deadline {
                let moved = deadline + (now - start)
                self.state.pointee.deadline = moved
                meridian_sqlite3_limit_time(self.state.pointee.connection, max(1, (moved - now).nanoseconds))
            }
        }
        return try wait()
    }

    /// Calls `body` with each attribute that has a value (not NULL), in the schema's order: the attribute's name and
    /// its value.
    public func forEachValue(_ body: (_ name: String, _ value: ColumnValue) throws -> Void) rethrows {
        let handle = UnsafeMutableRawPointer(self.statement)
        var value = meridian_sqlite3_value()
        // By index, each attribute read in place: an enumeration copied every attribute (its name, its default) for
        // every value of every row a snapshot streams.
        let attributes = self.attributes
        for i in attributes.indices {
            let type = attributes[i].type
            meridian_sqlite3_column(handle, Self.firstValueColumn + CInt(i), &value)
            switch value.type {
            case 1:
                let (typed, fits) = StoredValue.typed(integer: value.integer, as: type)
                if !fits { self.state.pointee.misfits += 1 }
                try body(attributes[i].name, .scalar(typed))
            case 2:
                let (typed, fits) = StoredValue.typed(real: value.real, as: type)
                if !fits { self.state.pointee.misfits += 1 }
                try body(attributes[i].name, .scalar(typed))
            case 3:
                if type != .string { self.state.pointee.misfits += 1 }
                try Self.withValidUTF8(value) { try body(attributes[i].name, .text($0)) }
            case 4:
                if type != .bytes { self.state.pointee.misfits += 1 }
                try body(
                    attributes[i].name, .bytes(UnsafeRawBufferPointer(start: value.bytes, count: Int(value.count))))
            default:
                continue
            }
        }
    }

    /// A text column's bytes as valid UTF-8: as stored when they are ASCII (``UTF8Bytes/isASCII(_:)``), else decoded
    /// with invalid bytes replaced (what a `String` read of the column holds).
    private static func withValidUTF8<Result>(
        _ value: meridian_sqlite3_value, _ body: (UnsafeRawBufferPointer) throws -> Result
    ) rethrows -> Result {
        let bytes = UnsafeRawBufferPointer(start: value.bytes, count: Int(value.count))
        if UTF8Bytes.isASCII(bytes) { return try body(bytes) }
        var text = String(decoding: bytes, as: UTF8.self)
        return try text.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }
}

/// A value of a ``CursorRow``: a text or a blob where SQLite holds it, anything else as a Core value.
public enum ColumnValue {
    /// A number, bool or timestamp (never `.string`, `.bytes` nor `.null`).
    case scalar(Value)
    /// A text's UTF-8 (valid).
    case text(UnsafeRawBufferPointer)
    /// A blob's bytes.
    case bytes(UnsafeRawBufferPointer)

    /// The value as a Core value (the bytes copied).
    public var value: Value {
        switch self {
        case .scalar(let value): value
        case .text(let utf8): .string(String(decoding: utf8, as: UTF8.self))
        case .bytes(let bytes): .bytes(Array(bytes))
        }
    }
}
