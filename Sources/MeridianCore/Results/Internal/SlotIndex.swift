// MARK: - SlotIndex
//
// `LiveResults`' id → tree slot map, without the ids: an open-addressing hash table (linear probing, at most 3/4 of
// its buckets used) whose buckets hold a slot and 32 bits of its id's hash. The id a bucket stands for is the id of the
// row in that slot, read from the tree: 8 bytes a bucket, where `[String: Int32]` took 20 (its keys a second copy of
// every id the tree holds).
//
// The number of buckets is any number from 8 up, not a power of two: an id's home bucket is its hash bits scaled to
// the table (`hash × count >> 32`, no modulo), so that a table made for n entries — a first load's, which reserves
// its rows at once — has n × 4/3 buckets. A power of two just over that took up to twice as many: 200,000 rows got
// 524,288 buckets (21 bytes a row), now 266,667 (10.7). A table that fills while entries are added one by one
// doubles, as before.
//
// The caller hands every operation `idOf`, the id of the row in a slot. Every bucket names a slot whose row is in the
// tree: an entry is removed before its row leaves the tree, and added after its row entered.
//
// Removal shifts the entries after the hole back (no tombstones), and growth re-places entries by their stored hash
// bits: no id is hashed twice. Keys compare as `String`'s `==` and hash as its `hashValue`, as `Dictionary` keys do.

/// id → slot, the ids read from where the slots point.
struct SlotIndex: Sendable {
    typealias Slot = Int32

    /// Per bucket: the slot + 1 in the low 32 bits (0: an empty bucket), the id's 32 hash bits in the high 32.
    private var buckets: [UInt64] = []
    /// The number of entries.
    private(set) var count = 0
    /// The 32 hash bits of an id (`String.hashValue`'s low bits; other functions in tests, to force collisions).
    private let hash: @Sendable (String) -> UInt32

    init() {
        self.hash = Self.stringHash
    }

    /// An index whose ids hash with `hash` (tests: a weak function makes long probe runs and equal hash bits).
    init(hash: @escaping @Sendable (String) -> UInt32) {
        self.hash = hash
    }

    /// The index of `count` distinct ids at the slots 0..<count, `idOf(slot)` the id at each: what an emptied tree
    /// filled in order holds. Made for them at once (about `count` × 4/3 buckets) and placed in the order of their home
    /// buckets (``place(_:sameHash:)``), not one by one.
    init(distinct count: Int, idOf: (Slot) -> String, hash: @escaping @Sendable (String) -> UInt32 = Self.stringHash) {
        precondition(count >= 0 && count < Int(Slot.max), "a tree slot is 0..<Int32.max")
        self.hash = hash
        guard count > 0 else { return }
        self.buckets = [UInt64](repeating: 0, count: Self.buckets(toHold: count))
        var entries = [UInt64]()
        entries.reserveCapacity(count)
        for slot in 0..<Slot(count) { entries.append(Self.bucket(slot, hash(idOf(slot)))) }
        self.place(entries) { bucket, entry in
            let placed = Slot(truncatingIfNeeded: bucket & 0xFFFF_FFFF) - 1
            let slot = Slot(truncatingIfNeeded: entry & 0xFFFF_FFFF) - 1
            precondition(idOf(placed) != idOf(slot), "the slots \(placed) and \(slot) both hold id \(idOf(slot))")
        }
        self.count = count
    }

    /// `String.hashValue`'s low 32 bits: the hash of an index made without one.
    static let stringHash: @Sendable (String) -> UInt32 = { UInt32(truncatingIfNeeded: $0.hashValue) }

    /// The bytes its buckets take.
    var storageBytes: Int { self.buckets.capacity * MemoryLayout<UInt64>.stride }

    /// The slot of `id`, if it has one.
    func slot(for id: String, idOf: (Slot) -> String) -> Slot? {
        guard !self.buckets.isEmpty else { return nil }
        let hash = self.hash(id)
        return self.find(id, hash: hash, idOf: idOf).slot
    }

    /// Gives `id` the slot `slot`; returns the slot it had, if any.
    @discardableResult
    mutating func insert(_ slot: Slot, for id: String, idOf: (Slot) -> String) -> Slot? {
        precondition(slot >= 0 && slot < Slot.max, "a tree slot is 0..<Int32.max")
        let hash = self.hash(id)
        // The empty bucket that ends the id's probe run takes it, unless the table must grow first.
        var empty: Int?
        if !self.buckets.isEmpty {
            let found = self.find(id, hash: hash, idOf: idOf)
            if let old = found.slot {
                self.buckets[found.bucket] = Self.bucket(slot, hash)
                return old
            }
            empty = found.bucket
        }
        if (self.count + 1) * 4 > self.buckets.count * 3 {
            // Doubling (amortized O(1) an insert), not growing to the exact need.
            self.resize(toHold: max(self.count + 1, 2 * self.count))
            empty = self.firstEmpty(from: hash)
        }
        self.buckets[empty!] = Self.bucket(slot, hash)
        self.count += 1
        return nil
    }

    /// Takes `id` out; returns its slot, if it had one.
    @discardableResult
    mutating func remove(_ id: String, idOf: (Slot) -> String) -> Slot? {
        guard !self.buckets.isEmpty else { return nil }
        let found = self.find(id, hash: self.hash(id), idOf: idOf)
        guard let slot = found.slot else { return nil }
        // Backward shift: each entry after the hole that may sit in it (the hole lies between its home bucket and
        // where it is) moves into it, until an empty bucket ends the run.
        var hole = found.bucket
        var j = self.next(hole)
        while self.buckets[j] != 0 {
            let home = self.home(UInt32(truncatingIfNeeded: self.buckets[j] >> 32))
            if self.distance(from: home, to: j) >= self.distance(from: hole, to: j) {
                self.buckets[hole] = self.buckets[j]
                hole = j
            }
            j = self.next(j)
        }
        self.buckets[hole] = 0
        self.count -= 1
        return slot
    }

    /// Makes room for `count` entries in all, so that adding up to that many re-places none: a table that must grow
    /// for them gets about `count` × 4/3 buckets.
    mutating func reserveCapacity(_ count: Int) {
        if count * 4 > self.buckets.count * 3 { self.resize(toHold: count) }
    }

    /// Removes every entry and releases the buckets.
    mutating func removeAll() {
        self.buckets = []
        self.count = 0
    }

    // MARK: - Inside

    private static func bucket(_ slot: Slot, _ hash: UInt32) -> UInt64 {
        UInt64(hash) << 32 | UInt64(UInt32(slot + 1))
    }

    /// The bucket holding `id`, or the empty bucket that ends its probe run (`slot` nil).
    private func find(_ id: String, hash: UInt32, idOf: (Slot) -> String) -> (bucket: Int, slot: Slot?) {
        var i = self.home(hash)
        while true {
            let bucket = self.buckets[i]
            if bucket == 0 { return (i, nil) }
            if UInt32(truncatingIfNeeded: bucket >> 32) == hash {
                let slot = Slot(truncatingIfNeeded: bucket & 0xFFFF_FFFF) - 1
                if idOf(slot) == id { return (i, slot) }
            }
            i = self.next(i)
        }
    }

    /// The home bucket of `hash`: its bits scaled to the number of buckets (the high bits of `hash × count`), so
    /// that any number of buckets takes every hash value, evenly.
    @inline(__always)
    private func home(_ hash: UInt32) -> Int {
        Int(truncatingIfNeeded: (UInt64(hash) &* UInt64(self.buckets.count)) >> 32)
    }

    /// The bucket after `i`, the first after the last.
    @inline(__always)
    private func next(_ i: Int) -> Int {
        i + 1 == self.buckets.count ? 0 : i + 1
    }

    /// How many buckets a probe walks from `start` to reach `end`, wrapping past the last.
    @inline(__always)
    private func distance(from start: Int, to end: Int) -> Int {
        end >= start ? end - start : end + self.buckets.count - start
    }

    /// The fewest buckets (at least 8) that hold `count` entries at most 3/4 full.
    private static func buckets(toHold count: Int) -> Int { max(8, (count * 4 + 2) / 3) }

    /// Moves the entries into the fewest buckets that hold `count` at most 3/4 full.
    private mutating func resize(toHold count: Int) {
        let old = self.buckets.filter { $0 != 0 }
        self.buckets = [UInt64](repeating: 0, count: Self.buckets(toHold: count))
        self.place(old) { _, _ in }
    }

    /// Puts `entries` (buckets' contents, none of them in the table yet) each into the first empty bucket from its
    /// home on; `sameHash(bucket, entry)` is told of every occupied bucket with the entry's hash bits that a probe
    /// passes (where an insert would compare the ids).
    ///
    /// Placed one after the other in any order, the entries would each probe a random part of a table of megabytes, a
    /// cache miss apiece: a 1,000,000-row fill's index took longer than its tree on the other thread (~170 ns an
    /// entry). They are first grouped by their home's range of about 512 buckets (a counting sort on the hash's high
    /// bits, which orders homes the same way), so that the probes of each group stay in a few kilobytes of the table.
    /// Linear probing gives a valid table for any order of insertion.
    private mutating func place(_ entries: [UInt64], sameHash: (UInt64, UInt64) -> Void) {
        let groups = max(1, self.buckets.count / 512)
        @inline(__always) func group(_ entry: UInt64) -> Int {
            Int(truncatingIfNeeded: ((entry >> 32) &* UInt64(groups)) >> 32)
        }
        var starts = [Int](repeating: 0, count: groups + 1)
        for entry in entries { starts[group(entry) + 1] += 1 }
        for g in 0..<groups { starts[g + 1] += starts[g] }
        var grouped = [UInt64](repeating: 0, count: entries.count)
        for entry in entries {
            let g = group(entry)
            grouped[starts[g]] = entry
            starts[g] += 1
        }
        self.buckets.withUnsafeMutableBufferPointer { buckets in
            let size = buckets.count
            for entry in grouped {
                let hash = entry >> 32
                var i = Int(truncatingIfNeeded: (hash &* UInt64(size)) >> 32)
                while buckets[i] != 0 {
                    if buckets[i] >> 32 == hash { sameHash(buckets[i], entry) }
                    i = i + 1 == size ? 0 : i + 1
                }
                buckets[i] = entry
            }
        }
    }

    /// The first empty bucket from the home bucket of `hash` on.
    private func firstEmpty(from hash: UInt32) -> Int {
        var i = self.home(hash)
        while self.buckets[i] != 0 { i = self.next(i) }
        return i
    }
}
