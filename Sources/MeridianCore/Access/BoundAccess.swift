// MARK: - BoundAccess

/// An ``AccessPolicy`` bound for one caller: each entity's rules with the caller's claims substituted, ready to filter
/// reads and to decide writes. Get one from ``AccessPolicy/bind(_:schema:)``.
///
/// Two callers whose claims give the same bound read rule get equal predicates from ``read(_:in:)``, so a server that
/// shares work between equal predicates shares it between them too.
///
/// ```swift
/// let access = policy.bind(Principal(subject: "alice", claims: ["team": .int(7)]), schema: schema)
/// let visible = access.read(try PredicateExpression.parse("done == false").bind(to: note), in: "Note")
/// access.authorize(.update, entity: "Note", before: old, after: new)   // .allowed, .notFound or .denied(reason)
/// ```
public struct BoundAccess: Sendable, Hashable {
    /// One entity's bound rules (`FALSEPREDICATE` where the policy has none).
    struct EntityAccess: Sendable, Hashable {
        var read: RowPredicate
        var insert: RowPredicate
        var update: RowPredicate
        var delete: RowPredicate
        var immutable: [String]
    }

    /// Who the rules were bound for.
    public let principal: Principal
    let entities: [String: EntityAccess]

    private static let denyAll = EntityAccess(
        read: RowPredicate(node: .constant(false)),
        insert: RowPredicate(node: .constant(false)),
        update: RowPredicate(node: .constant(false)),
        delete: RowPredicate(node: .constant(false)),
        immutable: []
    )

    private func access(_ entity: String) -> EntityAccess {
        self.entities[entity] ?? Self.denyAll
    }

    /// The entity's bound read rule: which of its rows the caller may see.
    public func readRule(_ entity: String) -> RowPredicate {
        self.access(entity).read
    }

    /// A query's predicate AND-ed with the entity's read rule, on the checked tree: the one predicate to compile to
    /// SQL and to evaluate in memory.
    public func read(_ predicate: RowPredicate, in entity: String) -> RowPredicate {
        RowPredicate(node: RowPredicate.Node.and([predicate.node, self.readRule(entity).node]).simplified)
    }

    /// Whether the caller may see the row.
    public func canRead(_ row: Row, in entity: String) -> Bool {
        self.readRule(entity).evaluate(row)
    }

    /// The bound read rules of all entities: equal for two callers exactly when they see the same rows, so a stream
    /// that resumes or refreshes with equal read rules keeps what it has.
    public var readRules: [String: RowPredicate] {
        self.entities.mapValues(\.read)
    }

    /// A fingerprint of the bound read rules: equal exactly when two callers see the same rows of every entity. A
    /// resume under another fingerprint cannot be answered from the log (it does not say which rows became invisible
    /// under the new claims), so the server re-snapshots it.
    public var readFingerprint: String {
        let text = self.entities.keys.sorted { $0.utf8Compare($1) < 0 }
            .map { "\($0): \(self.entities[$0]!.read)" }.joined(separator: "\n")
        return FNV1a64.hex(of: text.utf8)
    }

    /// Decides one write from the row before it (`nil` for an insert) and after it (`nil` for a delete), inside the
    /// transaction that makes it.
    ///
    /// A row the caller cannot read is `notFound`, whatever the write, so that ids cannot be probed; an update must
    /// satisfy the update rule before and after, and leave the immutable attributes as they were.
    public func authorize(_ kind: WriteOperation.Kind, entity: String, before: Row?, after: Row?) -> WriteVerdict {
        let access = self.access(entity)
        if let before, !access.read.evaluate(before) { return .notFound }
        switch kind {
        case .insert,
            .upsert where before == nil:
            guard let after, access.insert.evaluate(after) else {
                return .denied("the rules of \(entity) do not allow this insert (rule: insert)")
            }
        case .update, .upsert:
            guard let before, let after else { return .notFound }
            guard access.update.evaluate(before) else {
                return .denied("the rules of \(entity) do not allow updating this row (rule: update)")
            }
            for name in access.immutable where before[name] != after[name] {
                return .denied("\(entity).\(name) is immutable under the rules; an update cannot change it")
            }
            guard access.update.evaluate(after) else {
                return .denied("the rules of \(entity) do not allow the row this update would make (rule: update)")
            }
        case .delete:
            guard let before, access.delete.evaluate(before) else {
                return before == nil
                    ? .notFound : .denied("the rules of \(entity) do not allow this delete (rule: delete)")
            }
        }
        return .allowed
    }
}

/// What the rules say of one write.
public enum WriteVerdict: Sendable, Hashable {
    /// The write may go ahead.
    case allowed
    /// The row is not visible to the caller: answered as if it did not exist.
    case notFound
    /// The write is not allowed; the reason names the rule, never another row's data.
    case denied(String)
}

// MARK: - WriteAuthorizer

/// Decides each write of a transaction inside the store transaction that makes it, from the row before and after it,
/// so that every storage engine applies the same rules (``BoundAccess`` is the implementation the server uses).
public protocol WriteAuthorizer: Sendable {
    /// The scope of the caller's idempotency keys: the same key from two callers names two transactions.
    var idempotencyScope: String { get }
    /// Whether the caller may see the row: a write to one it may not is answered as if the row were missing.
    func canRead(_ row: Row, in entity: String) -> Bool
    /// Decides one write; `before` is `nil` for an insert, `after` for a delete.
    func authorize(_ kind: WriteOperation.Kind, entity: String, before: Row?, after: Row?) -> WriteVerdict
}

extension BoundAccess: WriteAuthorizer {
    /// The principal's subject.
    public var idempotencyScope: String { self.principal.subject }
}
