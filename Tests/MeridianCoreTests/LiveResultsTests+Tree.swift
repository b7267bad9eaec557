import Testing

@testable import MeridianCore

// MARK: - The order-statistic tree alone

extension LiveResultsTests {
    @Test("order-statistic tree: random inserts and removes agree with a sorted array on rank and element(at:)")
    func treeAgainstSortedArray() {
        let seed = SplitMix64.seedFromEnvironment()
        var rng = SplitMix64(seed: seed)
        var tree = OrderStatisticTree<Int> { $0 < $1 ? -1 : ($0 > $1 ? 1 : 0) }
        var reference: [Int] = []
        for step in 0..<20_000 {
            let value = Int.random(in: 0..<2_000, using: &rng)
            let index = reference.partitionPoint { $0 >= value }
            let present = index < reference.count && reference[index] == value
            if present {
                #expect(tree.remove(value) == value)
                reference.remove(at: index)
            } else if Bool.random(using: &rng) || reference.isEmpty {
                tree.insert(value)
                reference.insert(value, at: index)
            } else {
                #expect(tree.remove(value) == nil)
            }
            guard tree.count == reference.count else {
                Issue.record("MERIDIAN_SEED=\(seed) step \(step): count \(tree.count), want \(reference.count)")
                return
            }
            #expect(tree.rank(of: value) == index, "MERIDIAN_SEED=\(seed) step \(step)")
            if !reference.isEmpty {
                let r = Int.random(in: 0..<reference.count, using: &rng)
                #expect(tree.element(at: r) == reference[r], "MERIDIAN_SEED=\(seed) step \(step)")
                #expect(tree.rank(of: reference[r]) == r, "MERIDIAN_SEED=\(seed) step \(step)")
                let bound = Int.random(in: 0..<2_000, using: &rng)
                #expect(tree.partitionRank { $0 < bound } == reference.partitionPoint { $0 >= bound })
            }
            if step % 1_000 == 0 {
                #expect(tree.prefix(Int.max) == reference, "MERIDIAN_SEED=\(seed) step \(step)")
                #expect(tree.prefix(3) == Array(reference.prefix(3)))
            }
        }
    }

    @Test("weighted tree: weight(where:) sums the weights before a bound, through inserts, removes and addWeight")
    func weightedTree() {
        let seed = SplitMix64.seedFromEnvironment()
        var rng = SplitMix64(seed: seed)
        var tree = OrderStatisticTree<Int>(weighted: true) { $0 < $1 ? -1 : ($0 > $1 ? 1 : 0) }
        var reference: [Int: Int] = [:]
        for step in 0..<5_000 {
            let key = Int.random(in: 0..<300, using: &rng)
            let compareKey: (Int) -> Int = { key < $0 ? -1 : (key > $0 ? 1 : 0) }
            if let weight = reference[key] {
                if Bool.random(using: &rng) {
                    tree.remove(key)
                    reference[key] = nil
                } else {
                    let delta = Int.random(in: -weight...5, using: &rng)
                    tree.addWeight(delta, ordering: compareKey)
                    reference[key] = weight + delta
                }
            } else {
                let weight = Int.random(in: 0...9, using: &rng)
                tree.insert(key, weight: weight)
                reference[key] = weight
            }
            let bound = Int.random(in: 0..<300, using: &rng)
            let expected = reference.filter { $0.key < bound }.values.reduce(0, +)
            guard tree.weight(where: { $0 < bound }) == expected else {
                Issue.record("MERIDIAN_SEED=\(seed) step \(step): weight before \(bound)")
                return
            }
        }
    }

    @Test("order-statistic tree: appending sorted input builds the same set, and slots are reused")
    func treeAppend() {
        var tree = OrderStatisticTree<Int> { $0 < $1 ? -1 : ($0 > $1 ? 1 : 0) }
        for i in 0..<1_000 { tree.append(i * 2) }
        #expect(tree.prefix(Int.max) == (0..<1_000).map { $0 * 2 })
        #expect(tree.rank(of: 501) == 251)
        let slot = tree.insert(501)
        #expect(tree[slot] == 501)
        tree.remove(501)
        let reused = tree.insert(-1)
        #expect(reused == slot)
        #expect(tree.element(at: 0) == -1)
        tree.removeAll()
        #expect(tree.isEmpty && tree.count == 0)
    }
}

extension LiveResultsTests {
    @Test("order-statistic tree: appending a run at once builds the tree appending one at a time builds")
    func treeAppendRun() {
        let seed = SplitMix64.seedFromEnvironment()
        var rng = SplitMix64(seed: seed)
        for round in 0..<300 {
            let compare: OrderStatisticTree<Int>.Comparator = { $0 < $1 ? -1 : ($0 > $1 ? 1 : 0) }
            let treeSeed = rng.next()
            var oneByOne = OrderStatisticTree<Int>(seed: treeSeed, compare: compare)
            var atOnce = OrderStatisticTree<Int>(seed: treeSeed, compare: compare)
            // Some elements there already (some removed, so that slots are reused), then a run after them.
            var next = 0
            for _ in 0..<Int.random(in: 0..<40, using: &rng) {
                next += Int.random(in: 1...3, using: &rng)
                oneByOne.insert(next)
                atOnce.insert(next)
            }
            for _ in 0..<Int.random(in: 0..<5, using: &rng) where !oneByOne.isEmpty {
                let victim = oneByOne.element(at: Int.random(in: 0..<oneByOne.count, using: &rng))
                oneByOne.remove(victim)
                atOnce.remove(victim)
            }
            let run = (0..<Int.random(in: 0..<200, using: &rng)).map { next + 1 + $0 * 2 }
            var slots: [OrderStatisticTree<Int>.Slot] = []
            for element in run { slots.append(oneByOne.append(element)) }
            let atOnceSlots = atOnce.append(contentsOf: run)
            #expect(atOnceSlots == slots, "MERIDIAN_SEED=\(seed) round \(round)")
            #expect(atOnce.shape == oneByOne.shape, "MERIDIAN_SEED=\(seed) round \(round)")
            #expect(atOnce.prefix(Int.max) == oneByOne.prefix(Int.max))
        }
    }
}

extension Array {
    /// The first index whose element satisfies `belongsInSecondPartition` (which must be monotone).
    fileprivate func partitionPoint(where belongsInSecondPartition: (Element) -> Bool) -> Int {
        var low = 0
        var high = self.count
        while low < high {
            let mid = (low + high) / 2
            if belongsInSecondPartition(self[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}

// MARK: - Sorting by id

extension LiveResultsTests {
    @Test("sorting by id on eight-byte prefixes gives the ids' byte order, stable, both ways")
    func sortedByIDAgainstByteOrder() {
        let seed = SplitMix64.seedFromEnvironment()
        var rng = SplitMix64(seed: seed)
        // Ids that share their first eight bytes or end inside them, NUL and non-ASCII bytes, equal ids (rows of
        // one id keep their order), small and native strings.
        let pieces = ["", "a", "b", "\u{0}", "é", "e\u{301}", "row-0000", "row-0001", "😀", "Z", "zz"]
        for step in 0..<300 {
            let count = Int.random(in: 0...80, using: &rng)
            let rows = (0..<count).map { position in
                let id = (0..<Int.random(in: 1...4, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }
                    .joined()
                return Row(id: id, values: ["title": .int(Int64(position))])
            }
            /// `input` in the order of its ids' bytes, stable: what the sort must give.
            func expected(_ input: [Row], ascending: Bool) -> [Row] {
                input.enumerated().sorted { a, b in
                    let c = a.element.id.utf8Compare(b.element.id)
                    return c != 0 ? (ascending ? c < 0 : c > 0) : a.offset < b.offset
                }.map(\.element)
            }
            for ascending in [true, false] {
                // Some steps sort rows already in the order asked for (a snapshot's), or in the other one.
                let input =
                    switch step % 4 {
                    case 0: expected(rows, ascending: ascending)
                    case 1: expected(rows, ascending: !ascending)
                    default: rows
                    }
                let expected = expected(input, ascending: ascending)
                let sorted = LiveResults.sortedByID(input, ascending: ascending)
                guard sorted == expected else {
                    Issue.record(
                        "MERIDIAN_SEED=\(seed) step \(step) ascending \(ascending): \(sorted.map(\.id)) not \(expected.map(\.id))"
                    )
                    return
                }
            }
        }
    }
}
