// LiveResults' id → slot index, alone: random inserts, replacements and removals against a dictionary, the ids read
// from a slot table as the tree would give them.

import Testing

@testable import MeridianCore

@Suite struct SlotIndexTests {
    @Test(
        "the index answers as a dictionary would through random inserts, replacements, removals and growth, from empty or from a fill's index",
        arguments: [0, 1, 2, 3, 4], [false, true])
    func randomOperations(hashing: Int, filled: Bool) {
        // 0: String's hash; 1: four hash values (long probe runs, equal hash bits for different ids); 2: one value;
        // 3: the largest value, whose home is the last bucket (every probe run wraps past it to the first); 4: the
        // two ends, runs from the last bucket and from the first meeting.
        let hash: @Sendable (String) -> UInt32 =
            switch hashing {
            case 0: { UInt32(truncatingIfNeeded: $0.hashValue) }
            case 1: { UInt32($0.utf8.count % 4) }
            case 2: { _ in 7 }
            case 3: { _ in .max }
            default: { $0.utf8.last! % 2 == 0 ? 0 : .max }
            }
        var rng = SplitMix64(seed: 0x51_07 &+ UInt64(hashing) &+ (filled ? 0x100 : 0))
        var index = SlotIndex(hash: hash)
        var expected: [String: Int32] = [:]
        // The "tree": the id in each slot (nil: free), and the free slots, reused as the tree reuses them.
        var table: [String?] = []
        var free: [Int32] = []
        let ids = (0..<(hashing == 0 ? 400 : 60)).map { "id\($0)" }
        if filled {
            // A fill: half the ids, shuffled, at the slots 0..<n.
            table = ids.shuffled(using: &rng).prefix(ids.count / 2).map { $0 }
            index = SlotIndex(distinct: table.count, idOf: { table[Int($0)]! }, hash: hash)
            for (slot, id) in table.enumerated() { expected[id!] = Int32(slot) }
            #expect(index.count == table.count)
            for id in ids { #expect(index.slot(for: id) { table[Int($0)]! } == expected[id], "\(id) after the fill") }
        }
        for step in 0..<6_000 {
            let id = ids.randomElement(using: &rng)!
            if let slot = expected[id], Int.random(in: 0..<3, using: &rng) == 0 {
                // The row leaves: out of the index first, then out of the table.
                #expect(index.remove(id) { table[Int($0)]! } == slot)
                table[Int(slot)] = nil
                free.append(slot)
                expected[id] = nil
            } else if let old = expected[id] {
                // The row moves to another slot: the index gives the one it had.
                let slot = Self.take(&table, &free, id)
                #expect(index.insert(slot, for: id) { table[Int($0)]! } == old)
                table[Int(old)] = nil
                free.append(old)
                expected[id] = slot
            } else {
                let slot = Self.take(&table, &free, id)
                #expect(index.insert(slot, for: id) { table[Int($0)]! } == nil)
                expected[id] = slot
            }
            if step % 500 == 0 { index.reserveCapacity(expected.count + Int.random(in: 0..<200, using: &rng)) }
            #expect(index.count == expected.count)
            for probe in ids.prefix(12) {
                #expect(index.slot(for: probe) { table[Int($0)]! } == expected[probe], "\(probe) at step \(step)")
            }
        }
        for id in ids {
            #expect(index.slot(for: id) { table[Int($0)]! } == expected[id])
        }
        #expect(index.remove("absent") { table[Int($0)]! } == nil)
        index.removeAll()
        #expect(index.count == 0 && index.slot(for: ids[0]) { table[Int($0)]! } == nil)
    }

    @Test("a table reserved for n entries has about n × 4/3 buckets, not the power of two above them")
    func exactReservation() {
        for n in [1, 6, 7, 100, 196_609, 200_000] {
            var index = SlotIndex()
            index.reserveCapacity(n)
            // By capacity, which the allocator may round up a little (a page, for a large table).
            let buckets = index.storageBytes / MemoryLayout<UInt64>.stride
            let wanted = max(8, (n * 4 + 2) / 3)
            #expect(buckets >= wanted && buckets <= wanted + wanted / 64 + 8, "\(n) entries: \(buckets) buckets")
            #expect(n * 4 <= wanted * 3, "\(n) entries fit at most 3/4 full")
        }
        // Filled to its reservation, it does not grow; one more entry doubles it.
        let ids = (0..<1_000).map { "r\($0)" }
        var index = SlotIndex()
        index.reserveCapacity(ids.count)
        let reserved = index.storageBytes
        for (i, id) in ids.enumerated() { index.insert(Int32(i), for: id) { ids[Int($0)] } }
        #expect(index.storageBytes == reserved)
        for (i, id) in ids.enumerated() { #expect(index.slot(for: id) { ids[Int($0)] } == Int32(i)) }
        let more = ids + ["r1000"]
        index.insert(1_000, for: "r1000") { more[Int($0)] }
        #expect(index.storageBytes > reserved * 3 / 2)
        for (i, id) in more.enumerated() { #expect(index.slot(for: id) { more[Int($0)] } == Int32(i)) }
    }

    @Test("an index made for a fill's ids at once answers as one they were inserted into one by one, at any size")
    func filledAtOnce() {
        for n in [0, 1, 7, 8, 1_000, 70_000] {
            let ids = (0..<n).map { "r\($0)" }.shuffled()
            let filled = SlotIndex(distinct: n) { ids[Int($0)] }
            var inserted = SlotIndex()
            inserted.reserveCapacity(n)
            for (i, id) in ids.enumerated() { inserted.insert(Int32(i), for: id) { ids[Int($0)] } }
            #expect(filled.count == n && filled.storageBytes == inserted.storageBytes)
            for (i, id) in ids.enumerated() { #expect(filled.slot(for: id) { ids[Int($0)] } == Int32(i)) }
            #expect(filled.slot(for: "absent") { ids[Int($0)] } == nil)
        }
    }

    /// A free slot for `id` in the table (a reused one when there is one).
    private static func take(_ table: inout [String?], _ free: inout [Int32], _ id: String) -> Int32 {
        if let slot = free.popLast() {
            table[Int(slot)] = id
            return slot
        }
        table.append(id)
        return Int32(table.count - 1)
    }
}
