// MARK: - RowLayout

/// The attribute names that rows of one shape share, in order: a row read from a store's columns or from a message
/// whose rows all carry the same attributes keeps one value per name, by position, instead of a dictionary of its
/// own (see ``Row``). Immutable once made, so any number of rows and threads may share it.
package final class RowLayout: Sendable {
    /// Up to this many names a name is looked for by comparing it with each (no hash table to make or hash into).
    static let scannedNames = 8

    /// The names, each once.
    package let names: [String]
    /// Each name's position, for a layout of more than `scannedNames` names (empty otherwise).
    private let positions: [String: Int]
    /// The names' UTF-8 bytes, one after the other, for the writers that copy names into their output
    /// (`DeltaWireEncoding`): name `i`'s bytes run from `nameEnds[i - 1]` (0 for the first) up to `nameEnds[i]`.
    package let nameBytes: [UInt8]
    package let nameEnds: [Int]

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
    }

    /// The number of names.
    package var count: Int { self.names.count }

    /// The position of `name`, or `nil` when the layout has no such name.
    @inline(__always)
    package func position(of name: String) -> Int? {
        if self.names.count > Self.scannedNames { return self.positions[name] }
        return self.names.firstIndex(of: name)
    }

    /// The position of `name`, trying `hint` first (rows of one shape usually list their attributes in one order, so
    /// the i-th attribute read is usually at position i): one string comparison instead of a hash lookup.
    @inline(__always)
    package func position(of name: String, hint: Int) -> Int? {
        if hint < self.names.count, self.names[hint] == name { return hint }
        return self.position(of: name)
    }
}

// MARK: - RowValueBuffer

/// A compact row's values: one per name of its layout, `.null` where the row has no value, in one allocation with
/// the layout. Copy-on-write through `Row`, which mutates a buffer only while it holds the only reference.
/// (Not `Sendable` itself, as no `ManagedBuffer` is: `Row.Storage` says why sharing one is safe.)
package final class RowValueBuffer: ManagedBuffer<RowLayout, Value> {
    /// A buffer of `layout.count` values, copied from `values` (which has exactly that many).
    static func make(_ layout: RowLayout, _ values: UnsafeBufferPointer<Value>) -> RowValueBuffer {
        precondition(values.count == layout.count, "a row has \(values.count) values for \(layout.count) names")
        let buffer = unsafeDowncast(Self.create(minimumCapacity: layout.count) { _ in layout }, to: RowValueBuffer.self)
        buffer.withUnsafeMutablePointerToElements { elements in
            if let base = values.baseAddress { elements.initialize(from: base, count: values.count) }
        }
        return buffer
    }

    deinit {
        _ = self.withUnsafeMutablePointers { header, elements in
            elements.deinitialize(count: header.pointee.count)
        }
    }

    var layout: RowLayout { self.header }

    /// The values, `.null` for a name without one.
    @inline(__always)
    func withValues<R>(_ body: (UnsafeBufferPointer<Value>) throws -> R) rethrows -> R {
        try self.withUnsafeMutablePointers { header, elements in
            try body(UnsafeBufferPointer(start: elements, count: header.pointee.count))
        }
    }

    @inline(__always)
    subscript(position: Int) -> Value {
        get {
            self.withUnsafeMutablePointerToElements { $0[position] }
        }
        set {
            self.withUnsafeMutablePointerToElements { $0[position] = newValue }
        }
    }

    /// A copy (for a write to a shared buffer).
    func copy() -> RowValueBuffer {
        self.withValues { RowValueBuffer.make(self.layout, $0) }
    }
}
