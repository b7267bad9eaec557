// MARK: - RowMutation

/// One change to one row of an entity, as a results engine receives it: the row's full after-image, or its removal.
///
/// A mutation says nothing about membership: ``LiveResults`` evaluates its own predicate on the after-image, so an
/// upsert can make a row enter, leave, move or change in place.
///
/// ```swift
/// let changes = results.apply([
///     .upsert(Row(id: "7", values: ["title": "Café", "category": 2])),
///     .delete(id: "9"),
/// ])
/// ```
public enum RowMutation: Sendable, Hashable, CustomStringConvertible {
    /// The row was inserted or changed; the payload is its full after-image.
    case upsert(Row)
    /// The row with this id was deleted.
    case delete(id: String)

    /// The id of the row the mutation is about.
    public var id: String {
        switch self {
        case .upsert(let row): row.id
        case .delete(let id): id
        }
    }

    /// The mutation as `upsert Row("7", …)` or `delete "9"`.
    public var description: String {
        switch self {
        case .upsert(let row): "upsert \(row)"
        case .delete(let id): "delete \(Value.quote(id))"
        }
    }
}
