// MARK: - ChangeSetError

/// A change set that cannot be applied, would trip a table view's consistency check, or lists that cannot be diffed.
///
/// Printed as `code: message`, e.g. `rowCountMismatch: Invalid update: invalid number of rows in section 0. …`.
/// Compare ``code`` with the static members of ``Code``; the message is for people.
public struct ChangeSetError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A category of change-set error; compare with the static members (`ChangeSetError.Code.rowCountMismatch`).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Wrapped: String, Sendable, Hashable {
            case sectionOutOfRange, duplicateSection, sectionCountMismatch
            case indexPathOutOfRange, duplicateIndexPath, rowCountMismatch, incompleteSection
            case duplicateID, updateAcrossSections, idMismatch, resultMismatch, invalidList
        }

        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// A deleted or inserted section index is outside the old or new list.
        public static let sectionOutOfRange = Code(.sectionOutOfRange)
        /// The same section index is deleted, or inserted, twice.
        public static let duplicateSection = Code(.duplicateSection)
        /// The new section count is not the old count minus deleted plus inserted sections.
        public static let sectionCountMismatch = Code(.sectionCountMismatch)
        /// A row's old path is outside the old list, or its new path outside the new list.
        public static let indexPathOutOfRange = Code(.indexPathOutOfRange)
        /// The same old path is removed or updated twice, or the same new path filled twice.
        public static let duplicateIndexPath = Code(.duplicateIndexPath)
        /// A surviving section's new row count does not follow from its old count and the changes.
        public static let rowCountMismatch = Code(.rowCountMismatch)
        /// A deleted section keeps rows, or an inserted section lacks some (the completeness contract).
        public static let incompleteSection = Code(.incompleteSection)
        /// One id appears in two changes.
        public static let duplicateID = Code(.duplicateID)
        /// An update's old and new paths are not in the same surviving section (that is a move).
        public static let updateAcrossSections = Code(.updateAcrossSections)
        /// The row at a change's path, or the element it carries, has another id than the change.
        public static let idMismatch = Code(.idMismatch)
        /// Applying the change set to the old list does not yield the new list.
        public static let resultMismatch = Code(.resultMismatch)
        /// A list given to the diff repeats an element id or a section key.
        public static let invalidList = Code(.invalidList)

        /// The code's name, e.g. `rowCountMismatch`.
        public var description: String { self.wrapped.rawValue }
    }

    /// What kind of error this is.
    public var code: Code
    /// What is wrong, in words; for the table-view checks, phrased like UIKit's own exception.
    public var message: String

    /// Creates a change-set error.
    ///
    /// - Parameters:
    ///   - code: The category.
    ///   - message: What is wrong, in words.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The error as `code: message`.
    public var description: String { "\(self.code): \(self.message)" }
}
