// MARK: - RowLayout

/// The attribute names that rows of one shape share, in order: a row read from a store's columns or from a message
/// whose rows all carry the same attributes keeps one value per name, by position, instead of a dictionary of its
/// own (see ``Row``). Immutable once made, so any number of rows and threads may share it.
///
/// A layout may also be *shaped* (``shaped(like:)``): it then names each position's kind of value as well (an int, a
/// string, null, …), and a row whose values are of exactly those kinds keeps only their payloads, at offsets the
/// layout holds; any other row of the same names says its kinds itself (``RowValueBuffer``).
///
/// `@unchecked Sendable`: its `shape` is a pointer, written once in the initializer and only read after.
@usableFromInline package final class RowLayout: @unchecked Sendable {
    /// Up to this many names a name is looked for by comparing it with each (no hash table to make or hash into).
    static let scannedNames = 8

    /// The names, each once.
    @usableFromInline package let names: [String]
    /// Each name's position, for a layout of more than `scannedNames` names (empty otherwise).
    private let positions: [String: Int]
    /// The names' UTF-8 bytes, one after the other, for the writers that copy names into their output
    /// (`DeltaWireEncoding`): name `i`'s bytes run from `nameEnds[i - 1]` (0 for the first) up to `nameEnds[i]`.
    package let nameBytes: [UInt8]
    package let nameEnds: [Int]

    /// For a shaped layout, the words its rows' payloads take.
    @usableFromInline package let words: Int
    /// For a shaped layout, whether a payload holds a reference (a string's or bytes'), which a buffer releases.
    @usableFromInline package let holdsReferences: Bool
    /// For a shaped layout, the layout of names only it was shaped from (the header of its rows of other kinds).
    @usableFromInline package let unshaped: RowLayout?

    /// For a shaped layout, each position's offset in words shifted left by 8 and its kind's raw value, one `Int` a
    /// position (nil otherwise): what a buffer's reads walk, loaded without the reference counting of the arrays.
    @usableFromInline package let shape: UnsafeMutablePointer<Int>?
    /// The number of names, stored (read by every walk of a buffer's values).
    @usableFromInline package let slots: Int

    /// Whether the layout names its positions' kinds (``shaped(like:)``).
    @inlinable @usableFromInline package var isShaped: Bool { self.unshaped != nil }

    /// For a shaped layout, each position's kind (from `shape`); empty for a layout of names only.
    var kinds: [RowValueKind] {
        guard let shape = self.shape else { return [] }
        return (0..<self.slots).map { RowValueBuffer.kind(shape[$0]) }
    }
    /// For a shaped layout, each position's payload offset in the buffer, in words (from `shape`); empty otherwise.
    var offsets: [Int] {
        guard let shape = self.shape else { return [] }
        return (0..<self.slots).map { shape[$0] >> 8 }
    }

    /// A layout of these names, which must be distinct.
    package init(names: [String]) {
        var positions: [String: Int] = [:]
        if names.count > Self.scannedNames {
            positions = [String: Int](minimumCapacity: names.count)
            for (i, name) in names.enumerated() {
                precondition(positions.updateValue(i, forKey: name) == nil, "a row layout names '\(name)' twice")
            }
        } else {
            for (i, name) in names.enumerated() {
                precondition(!names[..<i].contains(name), "a row layout names '\(name)' twice")
            }
        }
        self.names = names
        self.positions = positions
        var nameBytes: [UInt8] = []
        var nameEnds: [Int] = []
        nameEnds.reserveCapacity(names.count)
        for name in names {
            nameBytes.append(contentsOf: name.utf8)
            nameEnds.append(nameBytes.count)
        }
        self.nameBytes = nameBytes
        self.nameEnds = nameEnds
        self.words = 0
        self.holdsReferences = false
        self.unshaped = nil
        self.shape = nil
        self.slots = names.count
    }

    deinit {
        self.shape?.deallocate()
    }

    private init(_ base: RowLayout, kinds: [RowValueKind]) {
        self.names = base.names
        self.positions = base.positions
        self.nameBytes = base.nameBytes
        self.nameEnds = base.nameEnds
        let shape = UnsafeMutablePointer<Int>.allocate(capacity: max(kinds.count, 1))
        var words = 0
        for (i, kind) in kinds.enumerated() {
            (shape + i).initialize(to: words << 8 | Int(kind.rawValue))
            words += kind.words
        }
        self.words = words
        self.holdsReferences = kinds.contains { $0.holdsReference }
        self.unshaped = base
        self.shape = shape
        self.slots = kinds.count
    }

    /// This layout's names shaped by the kinds of `values` (one per name): the layout that a reader gives the rows it
    /// reads after a first one, so that those of the same kinds — with the same columns set and unset, the usual
    /// case — keep their payloads only.
    package func shaped(like values: UnsafeBufferPointer<Value>) -> RowLayout {
        precondition(values.count == self.count, "a row has \(values.count) values for \(self.count) names")
        let base = self.unshaped ?? self
        return RowLayout(base, kinds: values.map(RowValueKind.init))
    }

    /// ``shaped(like:)`` of an array of values.
    package func shaped(like values: [Value]) -> RowLayout {
        values.withUnsafeBufferPointer { self.shaped(like: $0) }
    }

    /// Whether `values` are of exactly this shaped layout's kinds.
    @inline(__always)
    func fits(_ values: UnsafeBufferPointer<Value>) -> Bool {
        guard let shape = self.shape else { return false }
        for i in 0..<self.slots where RowValueKind(values[i]) != RowValueBuffer.kind(shape[i]) { return false }
        return true
    }

    /// The number of names.
    @inlinable @usableFromInline package var count: Int { self.names.count }

    /// The position of `name`, or `nil` when the layout has no such name.
    @inline(__always)
    package func position(of name: String) -> Int? {
        if self.names.count > Self.scannedNames { return self.positions[name] }
        return self.names.firstIndex(of: name)
    }

    /// The position of the name whose UTF-8 bytes are `key`, trying `hint` first, then every name of a layout of up to
    /// `scannedNames` names; `nil` when none has exactly those bytes (a caller then looks the name up as a `String`,
    /// which also finds a name spelled in other but equivalent bytes, and larger layouts' names).
    @inline(__always)
    package func position(ofUTF8 key: UnsafeRawBufferPointer, hint: Int) -> Int? {
        self.nameBytes.withUnsafeBytes { names -> Int? in
            func matches(_ i: Int) -> Bool {
                let start = i == 0 ? 0 : self.nameEnds[i - 1]
                let end = self.nameEnds[i]
                guard end - start == key.count else { return false }
                for j in 0..<key.count where names[start + j] != key[j] { return false }
                return true
            }
            if hint < self.slots, matches(hint) { return hint }
            guard self.slots <= Self.scannedNames else { return nil }
            for i in 0..<self.slots where i != hint && matches(i) { return i }
            return nil
        }
    }

    /// The position of `name`, trying `hint` first (rows of one shape usually list their attributes in one order, so
    /// the i-th attribute read is usually at position i): one string comparison instead of a hash lookup.
    @inline(__always)
    package func position(of name: String, hint: Int) -> Int? {
        if hint < self.names.count, self.names[hint] == name { return hint }
        return self.position(of: name)
    }
}

// MARK: - RowValueKind

/// The kind of a value as a compact row keeps it, and the words (8 bytes each) its payload takes there: none for
/// null, two for a string, one for the rest. (A boolean is one kind whatever its value, so that rows of a boolean
/// column fit one shaped layout.)
@usableFromInline package enum RowValueKind: UInt8, Sendable {
    case null, int, double, string, bool, bytes, timestamp

    @inlinable @usableFromInline
    package init(_ value: Value) {
        switch value {
        case .null: self = .null
        case .int: self = .int
        case .double: self = .double
        case .string: self = .string
        case .bool: self = .bool
        case .bytes: self = .bytes
        case .timestamp: self = .timestamp
        }
    }

    @inlinable @usableFromInline
    package var words: Int {
        switch self {
        case .null: 0
        case .string: 2
        case .int, .double, .bool, .bytes, .timestamp: 1
        }
    }

    var holdsReference: Bool { self == .string || self == .bytes }

    /// Writes `value`'s payload (of this kind) to uninitialized memory at `at`.
    @inlinable @usableFromInline
    package static func store(_ value: Value, at: UnsafeMutableRawPointer) {
        switch value {
        case .null: break
        case .int(let i): at.storeBytes(of: i, as: Int64.self)
        case .bool(let b): at.storeBytes(of: b ? 1 : 0, as: UInt64.self)
        case .double(let d): at.storeBytes(of: d, as: Double.self)
        case .string(let s): at.initializeMemory(as: String.self, repeating: s, count: 1)
        case .bytes(let b): at.initializeMemory(as: [UInt8].self, repeating: b, count: 1)
        case .timestamp(let t): at.storeBytes(of: t.microseconds, as: Int64.self)
        }
    }

    /// The value whose payload of this kind is at `at`.
    @inlinable @usableFromInline
    package func load(at: UnsafeMutableRawPointer) -> Value {
        switch self {
        case .null: .null
        case .int: .int(at.load(as: Int64.self))
        case .double: .double(at.load(as: Double.self))
        case .string: .string(at.assumingMemoryBound(to: String.self).pointee)
        case .bool: .bool(at.load(as: UInt64.self) != 0)
        case .bytes: .bytes(at.assumingMemoryBound(to: [UInt8].self).pointee)
        case .timestamp: .timestamp(Timestamp(microseconds: at.load(as: Int64.self)))
        }
    }

    /// Ends the payload of this kind at `at` (releases a string's or bytes' storage).
    @inlinable @usableFromInline
    package func deinitialize(at: UnsafeMutableRawPointer) {
        switch self {
        case .string: at.assumingMemoryBound(to: String.self).deinitialize(count: 1)
        case .bytes: at.assumingMemoryBound(to: [UInt8].self).deinitialize(count: 1)
        case .null, .int, .double, .bool, .timestamp: break
        }
    }
}

// MARK: - RowValueBuffer

/// A compact row's values: one per name of its layout, `.null` where the row has no value, in one allocation with
/// the layout, each as its payload alone (an int's 8 bytes, a string's 16, nothing for null) rather than
/// as a `Value` (24 bytes whatever it holds). Where the payloads lie is said by the layout when it is shaped and the
/// values are of its kinds (then the buffer holds nothing else), else by a byte of kind per position at the start of
/// the buffer (in the first `(count + 7) / 8` words), each payload after the one before. Copy-on-write through
/// `Row`, which mutates a buffer only while it holds the only reference. (Not `Sendable` itself, as no
/// `ManagedBuffer` is: `Row.Storage` says why sharing one is safe.)
@usableFromInline package final class RowValueBuffer: ManagedBuffer<RowLayout, UInt64> {
    /// A buffer of `layout.count` values, copied from `values` (which has exactly that many): payloads only when
    /// `layout` is shaped and `values` are of its kinds, with their kinds otherwise (and `layout`'s names only).
    static func make(_ layout: RowLayout, _ values: UnsafeBufferPointer<Value>) -> RowValueBuffer {
        precondition(values.count == layout.count, "a row has \(values.count) values for \(layout.count) names")
        if layout.fits(values) {
            let buffer = unsafeDowncast(Self.create(minimumCapacity: layout.words) { _ in layout }, to: Self.self)
            var i = 0
            buffer.forEachPayload { _, at in
                RowValueKind.store(values[i], at: at)
                i &+= 1
            }
            return buffer
        }
        let names = layout.unshaped ?? layout
        let tagWords = (values.count &+ 7) >> 3
        var words = tagWords
        for value in values { words &+= RowValueKind(value).words }
        let buffer = unsafeDowncast(Self.create(minimumCapacity: words) { _ in names }, to: Self.self)
        buffer.withUnsafeMutablePointerToElements { elements in
            let base = UnsafeMutableRawPointer(elements)
            var at = base + tagWords &* 8
            for i in 0..<values.count {
                let kind = RowValueKind(values[i])
                base.storeBytes(of: kind.rawValue, toByteOffset: i, as: UInt8.self)
                RowValueKind.store(values[i], at: at)
                at += kind.words &* 8
            }
        }
        return buffer
    }

    deinit {
        let layout = self.layout
        if layout.isShaped, !layout.holdsReferences { return }
        self.forEachPayload { kind, at in kind.deinitialize(at: at) }
    }

    /// Read through the header's pointer, not `header`: that is a stored `var` of a class, so every read of it was a
    /// dynamic exclusivity check (`swift_beginAccess`, a thread-local look-up): about 2% of a watcher's CPU for a
    /// 20,000-row change line, in every reader of a row's values.
    @inlinable @usableFromInline package var layout: RowLayout { self.withUnsafeMutablePointerToHeader { $0.pointee } }

    /// Calls `body` with each position's kind and payload, in order.
    @inlinable @usableFromInline
    package func forEachPayload(_ body: (RowValueKind, UnsafeMutableRawPointer) throws -> Void) rethrows {
        try self.withUnsafeMutablePointers { header, elements in
            let base = UnsafeMutableRawPointer(elements)
            // The layout without a retain and release around the walk: the buffer holds it.
            try UnsafeRawPointer(header).load(as: Unmanaged<RowLayout>.self)._withUnsafeGuaranteedRef { layout in
                let count = layout.slots
                if let shape = layout.shape {
                    for i in 0..<count {
                        let entry = shape[i]
                        try body(Self.kind(entry), base + (entry >> 8) &* 8)
                    }
                } else {
                    var at = base + ((count &+ 7) >> 3) &* 8
                    for i in 0..<count {
                        let kind = Self.tag(base, i)
                        try body(kind, at)
                        at += kind.words &* 8
                    }
                }
            }
        }
    }

    /// The kind in an entry of a shaped layout's `shape`.
    @inlinable @usableFromInline
    package static func kind(_ entry: Int) -> RowValueKind {
        unsafeBitCast(UInt8(truncatingIfNeeded: entry), to: RowValueKind.self)
    }

    @inlinable @usableFromInline
    package static func tag(_ base: UnsafeMutableRawPointer, _ position: Int) -> RowValueKind {
        // Written by `make` from a `RowValueKind`.
        unsafeBitCast(base.load(fromByteOffset: position, as: UInt8.self), to: RowValueKind.self)
    }

    /// The kind and payload of the value at `position`.
    @inline(__always)
    private func payload<R>(_ position: Int, _ body: (RowValueKind, UnsafeMutableRawPointer) -> R) -> R {
        self.withUnsafeMutablePointers { header, elements in
            let base = UnsafeMutableRawPointer(elements)
            return UnsafeRawPointer(header).load(as: Unmanaged<RowLayout>.self)._withUnsafeGuaranteedRef { layout in
                if let shape = layout.shape {
                    precondition(position < layout.slots, "position \(position) of a row of \(layout.slots) values")
                    let entry = shape[position]
                    return body(Self.kind(entry), base + (entry >> 8) &* 8)
                }
                precondition(position < layout.count, "position \(position) of a row of \(layout.count) values")
                var at = base + ((layout.count &+ 7) >> 3) &* 8
                for i in 0..<position { at += Self.tag(base, i).words &* 8 }
                return body(Self.tag(base, position), at)
            }
        }
    }

    /// Calls `body` with each position and its value (`.null` for a name without one), in order.
    @inlinable @usableFromInline
    package func forEachValue(_ body: (Int, Value) throws -> Void) rethrows {
        var i = 0
        try self.forEachPayload { kind, at in
            try body(i, kind.load(at: at))
            i &+= 1
        }
    }

    /// The values, `.null` for a name without one, copied out for `body` to read by position.
    @inline(__always)
    func withValues<R>(_ body: (UnsafeBufferPointer<Value>) throws -> R) rethrows -> R {
        try self.withValueCopy { try body(UnsafeBufferPointer($0)) }
    }

    /// The values copied out on the stack, for `body` to read or change by position.
    @inline(__always)
    private func withValueCopy<R>(_ body: (UnsafeMutableBufferPointer<Value>) throws -> R) rethrows -> R {
        try withUnsafeTemporaryAllocation(of: Value.self, capacity: self.layout.count) { values in
            var i = 0
            self.forEachPayload { kind, at in
                (values.baseAddress! + i).initialize(to: kind.load(at: at))
                i &+= 1
            }
            defer { values.baseAddress?.deinitialize(count: i) }
            return try body(values)
        }
    }

    /// The number of values that are not null.
    var nonNullCount: Int {
        var count = 0
        self.forEachPayload { kind, _ in if kind != .null { count &+= 1 } }
        return count
    }

    /// The value at `position`.
    @inline(__always)
    subscript(position: Int) -> Value {
        self.payload(position) { kind, at in kind.load(at: at) }
    }

    /// Sets the value at `position` in place when it is of the kind the one there is (the caller holds the only
    /// reference); `false`, changing nothing, when it is not.
    func replaceInPlace(_ position: Int, with value: Value) -> Bool {
        self.payload(position) { kind, at in
            guard RowValueKind(value) == kind else { return false }
            kind.deinitialize(at: at)
            RowValueKind.store(value, at: at)
            return true
        }
    }

    /// A new buffer of these values with `value` at `position`.
    func replacing(_ position: Int, with value: Value) -> RowValueBuffer {
        self.withValueCopy { values in
            values[position] = value
            return RowValueBuffer.make(self.layout, UnsafeBufferPointer(values))
        }
    }
}

// MARK: - RowShaper

/// The layout a reader gives the rows it reads with one layout of names: shaped like the first row (``RowLayout/
/// shaped(like:)``), and shaped again like a later row when that many rows in a row have not fitted it (a first row
/// unlike the others; a column that is null from some point on), so that most rows keep their payloads only.
package struct RowShaper {
    /// After this many rows in a row that do not fit the shaped layout, the next is shaped anew.
    static let misfitsBeforeReshaping = 64

    private var layout: RowLayout
    private var misfits = 0

    /// A shaper of rows with `layout`'s names.
    package init(_ layout: RowLayout) {
        self.layout = layout
    }

    /// The layout to make the row of `values` (one per name) with.
    @inline(__always)
    package mutating func layout(for values: UnsafeBufferPointer<Value>) -> RowLayout {
        if self.layout.fits(values) {
            self.misfits = 0
        } else if !self.layout.isShaped || self.misfits >= Self.misfitsBeforeReshaping {
            self.layout = self.layout.shaped(like: values)
            self.misfits = 0
        } else {
            self.misfits += 1
        }
        return self.layout
    }
}
