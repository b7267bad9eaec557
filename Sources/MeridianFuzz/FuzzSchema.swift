// MARK: - The schema fuzzing runs against

public import MeridianCore

/// The schema of the in-process server the wire and apply campaigns start when no server is given, and the one the
/// predicate and apply-script campaigns bind to: every attribute type, optional and defaulted attributes, both id
/// policies, a unique index (so random inserts collide) and a derived coordinate.
public enum FuzzSchema {
    /// The schema's YAML text.
    public static let yaml = """
        version: 1
        entities:
          Point:
            id: auto
            attributes:
              title: string
              category: { type: int, default: 0 }
              latitude: double?
              longitude: double?
              visible: { type: bool, default: true }
              photo: bytes?
              updatedAt: timestamp?
            indexes:
              - [category, title]
              - { name: by_updated, attributes: [updatedAt] }
            derived:
              coordinate: { coordinate: [latitude, longitude] }
          Author:
            id: client
            attributes:
              firstName: string
              lastName: { type: string, optional: true, default: "" }
              email: string?
            indexes:
              - { name: unique_email, attributes: [email], unique: true }

        """

    /// The schema.
    public static let schema: Schema = {
        do {
            return try Schema.parse(yaml: Self.yaml, file: "fuzz.yaml")
        } catch {
            preconditionFailure("the fuzz schema does not load: \(error)")
        }
    }()
}
