// MARK: - OrderStatisticTree
//
// Why a treap in a node pool, and not a B-tree or a chunked array:
//
// - Every operation the results engine needs is O(log n): insert, remove, rank of an element, element at a rank, and
//   "how many elements come before this boundary" (used for section offsets). A chunked sorted array with a Fenwick
//   tree over chunk sizes is fast in practice but splitting a chunk shifts the Fenwick tree, which is O(n / chunk);
//   a counted B-tree has the best constants but is three times the code (splits, merges, borrowing), and this file
//   must be obviously correct.
// - A treap (a binary search tree that is also a heap on random priorities) is balanced in expectation whatever the
//   insertion order — sorted input included, which is what `reset` feeds it — and its split/merge operations are a
//   few lines each. Priorities are not stored: a node's priority is a hash of its slot number and a per-tree seed,
//   independent of the keys, which is all the expected-depth bound needs.
// - Nodes live in parallel arrays indexed by `Int32` slots (no per-node object, no reference counting on the hot
//   path, no pointer chasing through the allocator); freed slots are reused.
//
// Memory per element beyond the element itself: `left` + `right` + `size` = 12 bytes, plus the element array's
// optional tag (0 bytes for `Row?`, which uses a spare bit of `Row`), plus growth slack of the arrays (up to 2x).
// Expected depth at 1,000,000 elements is about 2 ln n ≈ 28.

/// An ordered set with ranks: insert, remove, rank and select in O(log n) expected.
///
/// Elements are ordered by `compare`, which must be a total order (zero only for the same element). The tree never
/// holds two elements that compare equal.
struct OrderStatisticTree<Element: Sendable>: Sendable {
    /// Negative when the first element comes first, zero for the same element, positive otherwise.
    typealias Comparator = @Sendable (Element, Element) -> Int

    /// A stable handle on a stored element: its slot in the node pool, valid until the element is removed.
    typealias Slot = Int32

    private static var none: Int32 { -1 }

    private var elements: [Element?] = []
    private var left: [Int32] = []
    private var right: [Int32] = []
    private var size: [Int32] = []
    private var freeSlots: [Int32] = []
    /// Per-node weights and subtree weight sums, kept only by weighted trees (empty otherwise).
    private var weights: [Int] = []
    private var weightSums: [Int] = []
    /// Whether the tree keeps weights (the section index weighs each section by its row count).
    let isWeighted: Bool
    private var root: Int32 = -1
    private let seed: UInt64
    /// The order of the elements.
    let compare: Comparator

    /// Creates an empty tree.
    ///
    /// - Parameters:
    ///   - seed: Mixed into the node priorities; any value gives the same expected balance.
    ///   - compare: The total order of the elements.
    ///   - weighted: Whether elements carry weights, summed by ``weight(where:)``.
    init(seed: UInt64 = 0x5EED_0F_7EA9, weighted: Bool = false, compare: @escaping Comparator) {
        self.seed = seed
        self.isWeighted = weighted
        self.compare = compare
    }

    // MARK: - Reading

    /// The number of elements.
    var count: Int { self.sizeOf(self.root) }

    /// Whether the tree is empty.
    var isEmpty: Bool { self.root == Self.none }

    /// The element stored in a slot.
    subscript(slot: Slot) -> Element { self.elements[Int(slot)]! }

    /// The element at a 0-based rank.
    ///
    /// - Precondition: `0 <= rank < count`.
    func element(at rank: Int) -> Element {
        precondition(rank >= 0 && rank < self.count, "rank \(rank) out of range 0..<\(self.count)")
        var t = self.root
        var r = rank
        while true {
            let leftSize = self.sizeOf(self.left[Int(t)])
            if r < leftSize {
                t = self.left[Int(t)]
            } else if r == leftSize {
                return self.elements[Int(t)]!
            } else {
                r -= leftSize + 1
                t = self.right[Int(t)]
            }
        }
    }

    /// The number of leading elements for which `isBefore` holds; `isBefore` must be true on a prefix of the order
    /// and false after it (a lower bound).
    func partitionRank(where isBefore: (Element) -> Bool) -> Int {
        var t = self.root
        var rank = 0
        while t != Self.none {
            if isBefore(self.elements[Int(t)]!) {
                rank += self.sizeOf(self.left[Int(t)]) + 1
                t = self.right[Int(t)]
            } else {
                t = self.left[Int(t)]
            }
        }
        return rank
    }

    /// The rank `element` has, or would have if it were inserted.
    func rank(of element: Element) -> Int {
        self.partitionRank { self.compare($0, element) < 0 }
    }

    /// The sum of the weights of the leading elements for which `isBefore` holds (monotone, as in
    /// ``partitionRank(where:)``). Only for weighted trees.
    func weight(where isBefore: (Element) -> Bool) -> Int {
        precondition(self.isWeighted, "weights are kept by weighted trees only")
        var t = self.root
        var sum = 0
        while t != Self.none {
            let l = self.left[Int(t)]
            if isBefore(self.elements[Int(t)]!) {
                sum += (l == Self.none ? 0 : self.weightSums[Int(l)]) + self.weights[Int(t)]
                t = self.right[Int(t)]
            } else {
                t = l
            }
        }
        return sum
    }

    /// The first `n` elements in order (all of them when `n >= count`). O(n + log count).
    func prefix(_ n: Int) -> [Element] {
        var result: [Element] = []
        result.reserveCapacity(min(max(n, 0), self.count))
        var stack: [Int32] = []
        var t = self.root
        while result.count < n, t != Self.none || !stack.isEmpty {
            while t != Self.none {
                stack.append(t)
                t = self.left[Int(t)]
            }
            let node = stack.removeLast()
            result.append(self.elements[Int(node)]!)
            t = self.right[Int(node)]
        }
        return result
    }

    /// The slots of all elements, in order. O(n).
    func slotsInOrder() -> [Slot] {
        var result: [Slot] = []
        result.reserveCapacity(self.count)
        var stack: [Int32] = []
        var t = self.root
        while t != Self.none || !stack.isEmpty {
            while t != Self.none {
                stack.append(t)
                t = self.left[Int(t)]
            }
            let node = stack.removeLast()
            result.append(node)
            t = self.right[Int(node)]
        }
        return result
    }

    /// One more than the highest slot in use: the size of an array indexed by slot.
    var slotCount: Int { self.elements.count }

    /// The bytes the node pool holds (capacity, not count), beyond what the elements themselves point to.
    var storageBytes: Int {
        self.elements.capacity * MemoryLayout<Element?>.stride
            + (self.left.capacity + self.right.capacity + self.size.capacity + self.freeSlots.capacity)
            * MemoryLayout<Int32>.stride + (self.weights.capacity + self.weightSums.capacity) * MemoryLayout<Int>.stride
    }

    // MARK: - Writing

    /// Inserts an element that compares different from every stored one, and returns its slot.
    @discardableResult
    mutating func insert(_ element: Element, weight: Int = 1) -> Slot {
        let compare = self.compare
        return self.insert(element, weight: weight) { compare(element, $0) }
    }

    /// Inserts an element, locating it with `ordering` (how `element` compares with a stored one), which may be
    /// cheaper than the tree's comparator; returns its slot.
    @discardableResult
    mutating func insert(_ element: Element, weight: Int = 1, ordering: (Element) -> Int) -> Slot {
        let node = self.allocate(element, weight: weight)
        self.root = self.insert(node, into: self.root, ordering: ordering)
        return node
    }

    /// Adds `delta` to the weight of the stored element located by `ordering`. Only for weighted trees.
    mutating func addWeight(_ delta: Int, ordering: (Element) -> Int) {
        precondition(self.isWeighted, "weights are kept by weighted trees only")
        var t = self.root
        while t != Self.none {
            let c = ordering(self.elements[Int(t)]!)
            self.weightSums[Int(t)] += delta
            if c == 0 {
                self.weights[Int(t)] += delta
                return
            }
            t = c < 0 ? self.left[Int(t)] : self.right[Int(t)]
        }
        preconditionFailure("addWeight: no such element")
    }

    /// Appends an element that comes after every stored one, in O(log n) expected without comparing anything.
    @discardableResult
    mutating func append(_ element: Element) -> Slot {
        let node = self.allocate(element)
        self.root = self.merge(self.root, node)
        return node
    }

    /// Appends `elements`, which come in order after every stored one, and returns their slots; unweighted trees
    /// only. The same tree as appending them one at a time (a treap is fixed by its order and its priorities),
    /// built in O(n) instead of O(n log n): the right spine is kept on a stack, and a new element takes the spine's
    /// nodes of lower priority as its left subtree (Cartesian-tree construction). A node's size is computed once its
    /// subtree is final: when a new element takes it off the spine, or at the end.
    @discardableResult
    mutating func append(contentsOf elements: some Collection<Element>) -> [Slot] {
        precondition(!self.isWeighted, "append(contentsOf:) is for unweighted trees")
        var slots: [Slot] = []
        slots.reserveCapacity(elements.count)
        var spine: [Int32] = []
        var t = self.root
        while t != Self.none {
            spine.append(t)
            t = self.right[Int(t)]
        }
        for element in elements {
            let node = self.allocate(element)
            let priority = self.priority(node)
            // `merge` puts the later of two equal priorities above: so does `<=`.
            var below = Self.none
            while let top = spine.last, self.priority(top) <= priority {
                spine.removeLast()
                self.update(top)
                below = top
            }
            self.left[Int(node)] = below
            if let top = spine.last { self.right[Int(top)] = node } else { self.root = node }
            spine.append(node)
            slots.append(node)
        }
        while let top = spine.popLast() { self.update(top) }
        return slots
    }

    /// The tree's links and sizes, for tests that compare two trees' shapes.
    var shape: (root: Int32, left: [Int32], right: [Int32], size: [Int32]) {
        (self.root, self.left, self.right, self.size)
    }

    /// Removes the stored element that compares equal to `element`, and returns it (`nil` if there is none).
    @discardableResult
    mutating func remove(_ element: Element) -> Element? {
        let compare = self.compare
        return self.remove { compare(element, $0) }
    }

    /// Removes the stored element located by `ordering` (how the element sought compares with a stored one).
    @discardableResult
    mutating func remove(ordering: (Element) -> Int) -> Element? {
        var removed: Int32 = Self.none
        self.root = self.remove(from: self.root, ordering: ordering, removed: &removed)
        guard removed != Self.none else { return nil }
        let value = self.elements[Int(removed)]
        self.elements[Int(removed)] = nil
        self.freeSlots.append(removed)
        return value
    }

    /// Makes room for `count` elements in all, so that appending up to that many grows no storage.
    mutating func reserveCapacity(_ count: Int) {
        self.elements.reserveCapacity(count)
        self.left.reserveCapacity(count)
        self.right.reserveCapacity(count)
        self.size.reserveCapacity(count)
        if self.isWeighted {
            self.weights.reserveCapacity(count)
            self.weightSums.reserveCapacity(count)
        }
    }

    /// Removes every element and releases the storage.
    mutating func removeAll() {
        self.elements = []
        self.left = []
        self.right = []
        self.size = []
        self.freeSlots = []
        self.weights = []
        self.weightSums = []
        self.root = Self.none
    }

    // MARK: - Internals

    private func sizeOf(_ t: Int32) -> Int {
        t == Self.none ? 0 : Int(self.size[Int(t)])
    }

    /// The priority of a slot: a SplitMix64 finalizer over the slot and the seed.
    private func priority(_ t: Int32) -> UInt64 {
        var z = (UInt64(UInt32(bitPattern: t)) &+ self.seed) &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private mutating func allocate(_ element: Element, weight: Int = 1) -> Int32 {
        if let slot = self.freeSlots.popLast() {
            let i = Int(slot)
            self.elements[i] = element
            self.left[i] = Self.none
            self.right[i] = Self.none
            self.size[i] = 1
            if self.isWeighted {
                self.weights[i] = weight
                self.weightSums[i] = weight
            }
            return slot
        }
        if self.isWeighted {
            self.weights.append(weight)
            self.weightSums.append(weight)
        }
        precondition(self.elements.count < Int(Int32.max), "an order-statistic tree holds at most 2^31 - 1 elements")
        self.elements.append(element)
        self.left.append(Self.none)
        self.right.append(Self.none)
        self.size.append(1)
        return Int32(self.elements.count - 1)
    }

    private mutating func update(_ t: Int32) {
        let i = Int(t)
        let l = self.left[i]
        let r = self.right[i]
        self.size[i] = Int32(self.sizeOf(l) + self.sizeOf(r) + 1)
        if self.isWeighted {
            self.weightSums[i] =
                self.weights[i] + (l == Self.none ? 0 : self.weightSums[Int(l)])
                + (r == Self.none ? 0 : self.weightSums[Int(r)])
        }
    }

    private mutating func insert(_ node: Int32, into t: Int32, ordering: (Element) -> Int) -> Int32 {
        if t == Self.none { return node }
        if self.priority(node) > self.priority(t) {
            let (l, r) = self.split(t, ordering: ordering)
            self.left[Int(node)] = l
            self.right[Int(node)] = r
            self.update(node)
            return node
        }
        if ordering(self.elements[Int(t)]!) < 0 {
            self.left[Int(t)] = self.insert(node, into: self.left[Int(t)], ordering: ordering)
        } else {
            self.right[Int(t)] = self.insert(node, into: self.right[Int(t)], ordering: ordering)
        }
        self.update(t)
        return t
    }

    /// Splits `t` into the elements before the pivot and the elements from the pivot on; `ordering` tells how the
    /// pivot compares with an element.
    private mutating func split(_ t: Int32, ordering: (Element) -> Int) -> (Int32, Int32) {
        if t == Self.none { return (Self.none, Self.none) }
        if ordering(self.elements[Int(t)]!) > 0 {
            let (l, r) = self.split(self.right[Int(t)], ordering: ordering)
            self.right[Int(t)] = l
            self.update(t)
            return (t, r)
        } else {
            let (l, r) = self.split(self.left[Int(t)], ordering: ordering)
            self.left[Int(t)] = r
            self.update(t)
            return (l, t)
        }
    }

    /// Joins two trees whose elements are all ordered `a` before `b`.
    private mutating func merge(_ a: Int32, _ b: Int32) -> Int32 {
        if a == Self.none { return b }
        if b == Self.none { return a }
        if self.priority(a) > self.priority(b) {
            self.right[Int(a)] = self.merge(self.right[Int(a)], b)
            self.update(a)
            return a
        } else {
            self.left[Int(b)] = self.merge(a, self.left[Int(b)])
            self.update(b)
            return b
        }
    }

    private mutating func remove(from t: Int32, ordering: (Element) -> Int, removed: inout Int32) -> Int32 {
        if t == Self.none { return t }
        let c = ordering(self.elements[Int(t)]!)
        if c == 0 {
            removed = t
            return self.merge(self.left[Int(t)], self.right[Int(t)])
        }
        if c < 0 {
            self.left[Int(t)] = self.remove(from: self.left[Int(t)], ordering: ordering, removed: &removed)
        } else {
            self.right[Int(t)] = self.remove(from: self.right[Int(t)], ordering: ordering, removed: &removed)
        }
        if removed != Self.none { self.update(t) }
        return t
    }
}
