// MARK: - LiveResults
//
// The engine inside a results controller: the rows of one entity that match a predicate, kept in order, optionally
// sectioned and limited, turning each batch of row mutations into one fetched-results-controller change set.
//
// Structures, and what they cost per matching row (beyond the `Row` value itself, whose id and attribute dictionary
// are shared with the cache, not copied):
// - `tree`, an order-statistic treap over the rows (`OrderStatisticTree<Row>`): the `Row?` slot (24 bytes, the Row's
//   own inline size: its id and its values' one reference) plus left/right/size links (12 bytes): 36 bytes;
// - `slots`, id → slot (`SlotIndex`: the slot and 32 hash bits, the id read from the tree): 8 bytes a bucket at a
//   load factor of 3/8 to 3/4, so 11–21 bytes (10.7 after a reset, whose table is made for its rows);
// - sections: a treap of distinct section values weighted by their row counts (so a section's row offset is
//   O(log sections)) and a value → count dictionary: per section, not per row.
// So 47–57 bytes per row, plus array growth slack; `indexBytes` measures it by capacity.
//
// Every read below is O(log n) except those that return O(n) things (`rows`, `snapshot`) or one entry per section
// (`sections`).

/// The live, ordered, optionally sectioned and limited result of a fetch request, maintained from row mutations.
///
/// `LiveResults` holds every row of an entity that matches its predicate, in its order (the id breaks ties, so the
/// order is total). It exposes the first `limit` of them (all of them without a limit), grouped in sections by the
/// section key (the first sort key) when there is one, and a single section keyed ``SectionedList/unsectionedKey``
/// when there is none.
///
/// Feed it the full after-image of every changed row; it decides membership itself by evaluating the predicate, so a
/// row that starts matching enters and a row that stops matching leaves — whatever changed. Each call to
/// ``apply(_:)`` is one commit and returns one ``ChangeSet`` whose old paths address the state before the call and
/// whose new paths address the state after it. A batch of k mutations costs O(k log n) for n matching rows
/// (O(n + k log k) when it is large against them: it is merged in).
///
/// ```swift
/// var results = try LiveResults(
///     predicate: try PredicateExpression.parse("category < 3").bind(to: point),
///     order: try RowOrder(parsing: "category,title").checked(against: point, sectionKey: "category"),
///     sectionKey: "category",
///     limit: 50
/// )
/// _ = results.reset(rows: cachedRows)           // fresh snapshot
/// let changes = results.apply([.upsert(row), .delete(id: "9")])
/// try changes.validate(oldSectionCounts: before, newSectionCounts: results.sections.map(\.count))
/// results.object(at: ListIndexPath(0, 0))
/// ```
///
/// A controller that narrows cached rows locally — another predicate or order over the rows of an existing
/// subscription — is just another `LiveResults`, reset from the cached rows and fed the same mutations.
///
/// - Note: `LiveResults` is a value type whose storage is copied on write: keep one owner (an actor) and mutate it
///   in place; copying it and then mutating both copies costs O(n) once.
public struct LiveResults: Sendable {
    /// The predicate a row must match to be in the results.
    public let predicate: RowPredicate
    /// The order of the rows (the id is the implicit final tie-break).
    public let order: RowOrder
    /// The attribute the rows are sectioned by (the first sort key), or `nil` for one unnamed section.
    public let sectionKey: String?
    /// The most rows the results show, or `nil` for no limit.
    public let limit: Int?

    /// Turns a section value into the section's display name.
    let sectionName: @Sendable (Value) -> String
    /// Compares two rows in the results order.
    let compareRows: @Sendable (Row, Row) -> Int
    /// `1` when sections ascend, `-1` when they descend.
    let sectionDirection: Int
    /// The attributes compared, most significant first, ending with the id.
    let sortKeys: [SortKey]
    /// For each sort key, whether it is the id (compared as the rows' ids directly, not as values looked up by name).
    let sortKeyIsID: [Bool]

    /// Every matching row, in order (the window is a prefix of it).
    var tree: OrderStatisticTree<Row>
    /// The slot of every matching row in `tree`, by id.
    var slots = SlotIndex()
    /// The distinct section values of the matching rows, in section order (empty when unsectioned).
    var sectionValues: OrderStatisticTree<Value>
    /// The number of matching rows with each section value (empty when unsectioned).
    var sectionCounts: [Value: Int] = [:]

    /// Creates empty results for a fetch request; fill them with ``reset(rows:)``.
    ///
    /// - Parameters:
    ///   - predicate: Rows must match it to be in the results; defaults to every row.
    ///   - order: The order of the rows, already checked against the entity
    ///     (``RowOrder/checked(against:sectionKey:)``).
    ///   - sectionKey: The attribute to section by; it must be the first sort key.
    ///   - limit: The most rows to show, or `nil` for all of them.
    ///   - sectionName: The display name of a section value; defaults to ``Value/displayText``.
    /// - Throws: ``QueryError`` with code `invalidSectionKey` when the section key is not the first sort key, or
    ///   `invalidValue` for a negative limit.
    public init(
        predicate: RowPredicate = .all,
        order: RowOrder = .byID,
        sectionKey: String? = nil,
        limit: Int? = nil,
        sectionName: @escaping @Sendable (Value) -> String = { $0.displayText }
    ) throws(QueryError) {
        if let sectionKey, order.descriptors.first?.attribute != sectionKey {
            let actual = order.descriptors.first.map { "'\($0.attribute)'" } ?? "none (the order is by id only)"
            throw QueryError(
                .invalidSectionKey,
                "the section key '\(sectionKey)' must be the first sort key; the first sort key is \(actual)",
                position: 0
            )
        }
        if let limit, limit < 0 {
            throw QueryError(.invalidValue, "the limit must be 0 or more, not \(limit)", position: 0)
        }
        self.predicate = predicate
        self.order = order
        self.sectionKey = sectionKey
        self.limit = limit
        self.sectionName = sectionName

        let keys = order.effectiveDescriptors
        self.sortKeys = keys
        self.sortKeyIsID = keys.map { $0.attribute == EntitySchema.idAttribute }
        let compareRows: @Sendable (Row, Row) -> Int = { a, b in
            for key in keys {
                let c = Value.compare(a[key.attribute], b[key.attribute])
                if c != 0 { return key.ascending ? c : -c }
            }
            return 0
        }
        let direction = (order.descriptors.first?.ascending ?? true) ? 1 : -1
        self.compareRows = compareRows
        self.sectionDirection = direction
        self.tree = OrderStatisticTree(compare: compareRows)
        self.sectionValues = OrderStatisticTree(seed: 0x5EC7_1095, weighted: true) { a, b in
            direction * Value.compare(a, b)
        }
    }

    // MARK: - Reading

    /// The number of rows in the results (at most the limit).
    public var count: Int { self.visibleCount }

    /// The number of rows that match the predicate, including those beyond the limit.
    public var matchingCount: Int { self.tree.count }

    /// The last row that matches the predicate (beyond the limit too), in order; `nil` when none does.
    public var lastMatchingRow: Row? {
        self.tree.count == 0 ? nil : self.tree.element(at: self.tree.count - 1)
    }

    /// The matching rows from `rank` on (beyond the limit too), in order.
    public func matchingRows(from rank: Int) -> [Row] {
        (max(0, rank)..<self.tree.count).map { self.tree.element(at: $0) }
    }

    /// The rows in the results, in order. O(n).
    public var rows: [Row] { self.tree.prefix(self.visibleCount) }

    /// The sections of the results, in order: key, display name and row count. O(sections).
    ///
    /// Without a section key there is always exactly one section, keyed ``SectionedList/unsectionedKey``, possibly
    /// empty; with one, a section exists while it shows at least one row.
    public var sections: [ResultsSection] {
        guard self.sectionKey != nil else {
            return [ResultsSection(key: SectionedList<Row>.unsectionedKey, name: "", count: self.visibleCount)]
        }
        var result: [ResultsSection] = []
        var offset = 0
        let visible = self.visibleCount
        for key in self.sectionValues.prefix(self.sectionValues.count) {
            guard offset < visible else { break }
            let count = min(self.sectionCounts[key] ?? 0, visible - offset)
            result.append(ResultsSection(key: key, name: self.sectionName(key), count: count))
            offset += count
        }
        return result
    }

    /// The row at an index path. O(log n).
    ///
    /// - Precondition: The path addresses a row of the results (a table view never asks for any other).
    public func object(at indexPath: ListIndexPath) -> Row {
        let visible = self.visibleCount
        let start: Int
        let end: Int
        if self.sectionKey == nil {
            precondition(indexPath.section == 0, "section \(indexPath.section) out of range: there is one section")
            (start, end) = (0, visible)
        } else {
            precondition(
                indexPath.section >= 0 && indexPath.section < self.sectionValues.count,
                "section \(indexPath.section) out of range"
            )
            let key = self.sectionValues.element(at: indexPath.section)
            start = self.sectionOffset(key)
            end = min(visible, start + (self.sectionCounts[key] ?? 0))
        }
        precondition(
            indexPath.row >= 0 && start + indexPath.row < end,
            "row \(indexPath.row) out of range in section \(indexPath.section) of \(max(0, end - start)) rows"
        )
        return self.tree.element(at: start + indexPath.row)
    }

    /// The index path of the row with this id, or `nil` when it is not in the results. O(log n).
    public func indexPath(for id: String) -> ListIndexPath? {
        guard let slot = self.slot(of: id) else { return nil }
        let row = self.tree[slot]
        let rank = self.rank(of: row)
        guard rank < self.visibleCount else { return nil }
        return self.path(of: row, rank: rank)
    }

    /// The row with this id, or `nil` when it is not in the results (it does not match, or it is beyond the limit).
    /// O(log n) with a limit, O(1) without.
    public func row(id: String) -> Row? {
        guard let slot = self.slot(of: id) else { return nil }
        let row = self.tree[slot]
        if let limit, limit < self.tree.count, self.rank(of: row) >= limit { return nil }
        return row
    }

    /// The results as a sectioned list, the state a table view shows. O(n).
    public var snapshot: SectionedList<Row> {
        let rows = self.rows
        guard let sectionKey else { return SectionedList(unsectioned: rows) }
        var sections: [ListSection<Row>] = []
        var start = 0
        for section in self.sections {
            let elements = Array(rows[start..<(start + section.count)])
            assert(elements.allSatisfy { Value.compare($0[sectionKey], section.key) == 0 })
            sections.append(ListSection(key: section.key, name: section.name, elements: elements))
            start += section.count
        }
        return SectionedList(sections: sections)
    }

    // MARK: - Fresh snapshot

    /// Replaces every row with `rows` (a fresh snapshot, or a resnapshot after a reconnect) and returns the change
    /// set from what the results showed before. O(n log n) for n rows.
    ///
    /// Rows that do not match the predicate are ignored; when an id appears more than once, the last row wins.
    ///
    /// - Parameter rows: Every row of the entity (or at least every row that may match).
    /// - Returns: The change set from the previous results to the new ones (computed by
    ///   ``ChangeSet/between(old:new:)``, so a reconnect never looks like "delete everything, insert everything").
    @discardableResult
    public mutating func reset(rows: [Row]) -> ChangeSet<Row> {
        var latest = [String: Row](minimumCapacity: rows.count)
        for row in rows { latest[row.id] = row }
        // Every id once: as given (the order of the input does not matter, the results' order is total).
        return self.reset(uniqueRows: latest.count == rows.count ? rows : Array(latest.values))
    }

    /// ``reset(rows:)`` for rows whose ids are known to be distinct (a cache's members), without the pass that
    /// keeps the last row of each id.
    ///
    /// - Precondition: No id appears twice in `rows`.
    @discardableResult
    package mutating func reset(uniqueRows rows: [Row]) -> ChangeSet<Row> {
        let before = self.snapshot
        self.fill(uniqueRows: rows)
        do {
            // `fill` checked that no id repeats.
            return try ChangeSet.between(old: before, new: self.snapshot, newIsDistinct: true)
        } catch {
            preconditionFailure("results never repeat an id or a section: \(error)")
        }
    }

    /// ``reset(uniqueRows:)`` without its change set, for results whose changes nobody is told one by one (a client
    /// controller without change observers): whether what they show changed — exactly when the change set would not
    /// be empty (the same rows, equal, in the same order, make the same sections). A first load builds no snapshot of
    /// the rows before and after, nor an insert for every row (a 200,000-row load spent a third of its reset on them).
    ///
    /// - Precondition: No id appears twice in `rows`.
    @discardableResult
    package mutating func replace(uniqueRows rows: [Row]) -> Bool {
        let before = self.visibleCount == 0 ? [] : self.rows
        self.fill(uniqueRows: rows)
        guard before.count == self.visibleCount else { return true }
        return before.isEmpty ? false : before != self.rows
    }

    /// Fills the results with `rows` (distinct ids), whatever they held.
    private mutating func fill(uniqueRows rows: [Row]) {
        // Every row of an unfiltered controller matches: not copied into a filtered array of the same rows.
        let ordered = self.sorted(self.predicate.matchesEveryRow ? rows : rows.filter { self.predicate.evaluate($0) })
        self.rebuild(ordered: ordered)
        self.sectionValues.removeAll()
        self.sectionCounts = [:]
        if self.sectionKey != nil {
            for row in ordered { self.addToSection(row) }
        }
    }

    /// Makes `ordered` (distinct ids, in the results' order) the tree's rows, their slots 0..<n, and indexes them;
    /// the sections are the caller's.
    mutating func rebuild(ordered: [Row]) {
        self.tree.removeAll()
        self.slots = SlotIndex()
        if ordered.count >= Self.concurrentFillRows {
            // An emptied tree gives the rows the slots 0..<n in their order, so the id index needs nothing of the
            // tree: it is built on a second thread while this one builds the tree (each about half of a large first
            // load's fill, which runs after the last snapshot chunk, when nothing else keeps the second core busy).
            let emptied = self.tree
            let parts = concurrently(2) { part -> FillPart in
                part == 0 ? .tree(Self.tree(emptied, filledWith: ordered)) : .slots(Self.index(of: ordered))
            }
            for case .success(let part) in parts {
                switch part {
                case .tree(let tree): self.tree = tree
                case .slots(let slots): self.slots = slots
                }
            }
        } else {
            self.tree = Self.tree(self.tree, filledWith: ordered)
            self.slots = Self.index(of: ordered)
        }
    }

    /// The fills of at least this many rows build the tree and the id index at once, on two threads.
    static let concurrentFillRows = 16_384

    /// What each thread of a large fill builds.
    private enum FillPart: Sendable {
        case tree(OrderStatisticTree<Row>)
        case slots(SlotIndex)
    }

    /// `emptied` (a tree with no rows and no storage) with `ordered` appended, their slots 0..<n.
    private static func tree(_ emptied: OrderStatisticTree<Row>, filledWith ordered: [Row]) -> OrderStatisticTree<Row> {
        var tree = emptied
        tree.reserveCapacity(ordered.count)
        tree.append(contentsOf: ordered)
        return tree
    }

    /// The id index of `ordered` given the slots 0..<n in order (an emptied tree's slots for them).
    private static func index(of ordered: [Row]) -> SlotIndex {
        SlotIndex(distinct: ordered.count) { ordered[Int($0)].id }
    }

    /// Rows in the results' order.
    func sorted(_ rows: consuming [Row]) -> [Row] {
        let keys = self.sortKeys
        // Ordered by id alone (no sort given): the ids compared directly, no key values to extract.
        if keys.count == 1, self.sortKeyIsID[0] { return Self.sortedByID(rows, ascending: keys[0].ascending) }
        // Sorted on extracted key values: no dictionary lookups inside the O(n log n) comparisons.
        var keyed: [(keys: [Value], row: Row)] = []
        keyed.reserveCapacity(rows.count)
        for row in rows { keyed.append((keys: keys.map { row[$0.attribute] }, row: row)) }
        keyed.sort { a, b in
            for i in keys.indices {
                let c = Value.compare(a.keys[i], b.keys[i])
                if c != 0 { return keys[i].ascending ? c < 0 : c > 0 }
            }
            return false
        }
        return keyed.map(\.row)
    }

    /// `rows` in the order of their ids' UTF-8 bytes (``Swift/String/utf8Compare(_:)``), ascending or descending;
    /// rows of equal ids keep their order.
    ///
    /// Sorted as keys of two words, each id's first eight bytes read as a big-endian integer (zeros past the end of a
    /// shorter id) and the row's position: two keys whose first words differ order their ids as the ids' bytes do,
    /// so only ids that share their first eight bytes are compared whole. Sorting the rows themselves compared two
    /// ids as strings at every step (each copied to the stack when small) and moved whole rows: a 20,000-row batch's
    /// sort in a watching `meridian` took about twice the samples it takes now (perf; docs/speed-of-light.md).
    package static func sortedByID(_ rows: consuming [Row], ascending: Bool) -> [Row] {
        guard rows.count > 1 else { return rows }
        // Already in order (a snapshot arrives in the results' order): one pass says so, where making the keys and
        // taking the rows back in their order took about twice what the sort of ordered rows did (1,000,000 rows:
        // `MERIDIAN_BENCH_ONLY=sortByID`).
        if Self.isOrderedByID(rows, ascending: ascending) { return rows }
        var keys: [(prefix: UInt64, position: Int)] = []
        keys.reserveCapacity(rows.count)
        for (position, row) in rows.enumerated() { keys.append((Self.idPrefix(row.id), position)) }
        rows.withUnsafeBufferPointer { rows in
            keys.sort { a, b in
                if a.prefix != b.prefix { return ascending ? a.prefix < b.prefix : a.prefix > b.prefix }
                let c = rows[a.position].id.utf8Compare(rows[b.position].id)
                if c != 0 { return ascending ? c < 0 : c > 0 }
                return a.position < b.position
            }
        }
        return keys.map { rows[$0.position] }
    }

    /// Whether every row's id comes after (`ascending`) or before the one of the row before it, or equals it.
    private static func isOrderedByID(_ rows: [Row], ascending: Bool) -> Bool {
        for i in rows.indices.dropFirst() {
            let c = rows[i - 1].id.utf8Compare(rows[i].id)
            if ascending ? c > 0 : c < 0 { return false }
        }
        return true
    }

    /// The first eight bytes of `id`'s UTF-8 as a big-endian integer, zeros past its end: for any two ids, a smaller
    /// prefix means a smaller id in ``Swift/String/utf8Compare(_:)``'s order (only equal prefixes leave it open).
    @inline(__always)
    static func idPrefix(_ id: String) -> UInt64 {
        var id = id
        return id.withUTF8 { bytes in
            var prefix: UInt64 = 0
            for i in 0..<8 { prefix = prefix << 8 | UInt64(i < bytes.count ? bytes[i] : 0) }
            return prefix
        }
    }

    /// How `row` compares with `other` in the results' order, negative when `row` comes first: what
    /// ``ordering(of:)`` gives, for a caller that compares many rows once each (a batch's merge), without the closure
    /// and the array of key values made for every row.
    func compare(_ row: Row, _ other: Row) -> Int {
        let keys = self.sortKeys
        for i in keys.indices {
            let c =
                self.sortKeyIsID[i]
                ? row.id.utf8Compare(other.id)
                : Value.compare(row.value(of: keys[i].attribute), other.value(of: keys[i].attribute))
            if c != 0 { return keys[i].ascending ? c : -c }
        }
        return 0
    }

    /// The bytes the engine's own structures hold (tree, id index, sections), by capacity; the rows' ids and
    /// attribute dictionaries, which the cache shares, are not counted. For benchmarks and memory reports.
    package var indexBytes: Int {
        // A native dictionary has a power-of-two bucket count with at most 3/4 of the buckets used; each bucket
        // holds a key and a value, plus one bit of occupancy.
        func dictionaryBytes(capacity: Int, bucket: Int) -> Int {
            guard capacity > 0 else { return 0 }
            var buckets = 1
            while buckets * 3 / 4 < capacity { buckets *= 2 }
            return buckets * bucket + buckets / 8
        }
        let sectionBucket = MemoryLayout<Value>.stride + MemoryLayout<Int>.stride
        return self.tree.storageBytes + self.sectionValues.storageBytes
            + self.slots.storageBytes
            + dictionaryBytes(capacity: self.sectionCounts.capacity, bucket: sectionBucket)
    }

    // MARK: - Helpers

    /// The tree slot of the row with this id, if it matches.
    func slot(of id: String) -> OrderStatisticTree<Row>.Slot? {
        self.slots.slot(for: id) { self.tree[$0].id }
    }

    /// Gives the row with this id, just put in the tree, its slot.
    mutating func index(_ slot: OrderStatisticTree<Row>.Slot, for id: String) {
        var slots = self.slots
        self.slots = SlotIndex()
        slots.insert(slot, for: id) { self.tree[$0].id }
        self.slots = slots
    }

    /// Forgets the slot of the row with this id, before the row leaves the tree.
    mutating func unindex(_ id: String) {
        var slots = self.slots
        self.slots = SlotIndex()
        slots.remove(id) { self.tree[$0].id }
        self.slots = slots
    }

    /// The number of rows shown: the matching rows, capped by the limit.
    var visibleCount: Int {
        guard let limit else { return self.tree.count }
        return min(limit, self.tree.count)
    }

    /// The section value of a row (``SectionedList/unsectionedKey`` when unsectioned).
    func sectionValue(of row: Row) -> Value {
        guard let sectionKey else { return SectionedList<Row>.unsectionedKey }
        return row[sectionKey]
    }

    /// How `row` compares with another row (negative when `row` comes first), with `row`'s key values read once:
    /// a search then reads only the other rows' attributes.
    ///
    /// Not inlined: where the closure is seen at the tree's call, the optimizer specializes the tree's recursive
    /// descent for it, passing its four captures as arguments, and retained and released each of them around every
    /// recursive call (a change's apply took nearly twice as long). Passed as an opaque closure, it is called through
    /// its context, as it was before rows kept a compact form made the closure small enough to specialize.
    @inline(never)
    func ordering(of row: Row) -> (Row) -> Int {
        let keys = self.sortKeys
        let isID = self.sortKeyIsID
        let values = keys.map { row[$0.attribute] }
        let id = row.id
        // `other[name]` would compare the name with "id" and wrap the id in a value at every step of a tree descent.
        return { other in
            for i in keys.indices {
                let c =
                    isID[i]
                    ? id.utf8Compare(other.id) : Value.compare(values[i], other.value(of: keys[i].attribute))
                if c != 0 { return keys[i].ascending ? c : -c }
            }
            return 0
        }
    }

    /// The rank a row has (or would have) among the matching rows.
    func rank(of row: Row) -> Int {
        let ordering = self.ordering(of: row)
        return self.tree.partitionRank { ordering($0) > 0 }
    }

    /// The number of matching rows in sections before `key`: O(log sections), from the section index's weights.
    func sectionOffset(_ key: Value) -> Int {
        guard self.sectionKey != nil else { return 0 }
        let direction = self.sectionDirection
        return self.sectionValues.weight { direction * Value.compare($0, key) < 0 }
    }

    /// The index of the section `key` among all sections (visible sections are a prefix).
    func sectionIndex(_ key: Value) -> Int {
        self.sectionKey == nil ? 0 : self.sectionValues.rank(of: key)
    }

    /// The number of rows of section `key` inside the window, and the section's index and row offset.
    func sectionPlacement(_ key: Value) -> SectionPlacement {
        let offset = self.sectionOffset(key)
        let total = self.sectionKey == nil ? self.tree.count : (self.sectionCounts[key] ?? 0)
        let visible = max(0, min(self.visibleCount, offset + total) - offset)
        return SectionPlacement(index: self.sectionIndex(key), offset: offset, visibleCount: visible)
    }

    /// The index path of a matching row at `rank` (which must be inside the window).
    func path(of row: Row, rank: Int) -> ListIndexPath {
        guard self.sectionKey != nil else { return ListIndexPath(0, rank) }
        let key = self.sectionValue(of: row)
        return ListIndexPath(self.sectionIndex(key), rank - self.sectionOffset(key))
    }

    /// Counts a row that joined the matching rows in its section.
    mutating func addToSection(_ row: Row) {
        guard self.sectionKey != nil else { return }
        let key = self.sectionValue(of: row)
        let count = self.sectionCounts[key, default: 0]
        let direction = self.sectionDirection
        if count == 0 {
            self.sectionValues.insert(key, weight: 1)
        } else {
            self.sectionValues.addWeight(1) { direction * Value.compare(key, $0) }
        }
        self.sectionCounts[key] = count + 1
    }

    /// Uncounts a row that left the matching rows.
    mutating func removeFromSection(_ row: Row) {
        guard self.sectionKey != nil else { return }
        let key = self.sectionValue(of: row)
        let count = self.sectionCounts[key, default: 0]
        if count <= 1 {
            self.sectionCounts[key] = nil
            self.sectionValues.remove(key)
        } else {
            let direction = self.sectionDirection
            self.sectionValues.addWeight(-1) { direction * Value.compare(key, $0) }
            self.sectionCounts[key] = count - 1
        }
    }
}

// MARK: - ResultsSection

/// One section of ``LiveResults``: its key (the section value its rows share), display name and row count.
public struct ResultsSection: Sendable, Hashable {
    /// The section value its rows share.
    public var key: Value
    /// The display name of the section.
    public var name: String
    /// The number of rows the section shows.
    public var count: Int

    /// Creates a section description.
    public init(key: Value, name: String, count: Int) {
        self.key = key
        self.name = name
        self.count = count
    }
}

/// Where one section sits in the results: its index, the rank of its first row, and how many of its rows show.
struct SectionPlacement {
    var index: Int
    var offset: Int
    var visibleCount: Int
}

// MARK: - From a fetch request

extension LiveResults {
    /// Creates the engine for a bound fetch request: its predicate, order, section key and limit.
    ///
    /// - Throws: ``QueryError`` when the limit is negative (binding already checked the section key).
    public init(
        _ request: BoundFetchRequest,
        sectionName: @escaping @Sendable (Value) -> String = { $0.displayText }
    ) throws(QueryError) {
        try self.init(
            predicate: request.predicate,
            order: request.order,
            sectionKey: request.sectionKey,
            limit: request.limit,
            sectionName: sectionName
        )
    }
}
