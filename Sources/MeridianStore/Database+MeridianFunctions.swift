package import GRDB
internal import MeridianCore

// MARK: - Meridian's SQL functions

/// The SQLite functions compiled predicates call, backed by the very Swift functions the in-memory evaluator
/// uses, so SQL and memory fold and match strings identically:
///
/// - `meridian_fold(text, flags)` → `Folding.fold(text, StringOptions(rawValue: flags))`; NULL in, NULL out;
///   a non-text value is returned unchanged.
/// - `meridian_match(op, flags, value, pattern)` → 1 or 0 from `StringMatcher.matches`, `op` being
///   `'beginswith'`, `'endswith'`, `'contains'` or `'like'` and `pattern` already folded; NULL when `value` is
///   not text (NULL included).
///
/// Both are deterministic (`pure`), so SQLite may use them in indexes on expressions. Triggers must not call
/// them: a process that has not registered them (the `sqlite3` shell) must still be able to write.
package enum MeridianFunctions {
    /// `meridian_fold(text, flags)`.
    package static let fold = DatabaseFunction(RowPredicate.foldFunctionName, argumentCount: 2, pure: true) { args in
        guard case .string(let text) = args[0].storage else { return args[0] }
        let flags = Int.fromDatabaseValue(args[1]) ?? 0
        return Folding.fold(text, StringOptions(rawValue: flags))
    }

    /// `meridian_match(op, flags, value, pattern)`.
    package static let match = DatabaseFunction(RowPredicate.matchFunctionName, argumentCount: 4, pure: true) { args in
        guard let opName = String.fromDatabaseValue(args[0]), let op = StringMatchOperator(rawValue: opName) else {
            throw DatabaseError(message: "\(RowPredicate.matchFunctionName): unknown operator \(args[0])")
        }
        guard case .string(let value) = args[2].storage, case .string(let pattern) = args[3].storage else {
            return nil
        }
        let flags = Int.fromDatabaseValue(args[1]) ?? 0
        let matched = StringMatcher.matches(
            op, options: StringOptions(rawValue: flags), value: value, foldedPattern: pattern)
        return matched ? 1 : 0
    }
}

extension Database {
    /// Registers `meridian_fold` and `meridian_match` on this connection.
    ///
    /// ```swift
    /// let queue = try DatabaseQueue()
    /// try queue.inDatabase { db in db.registerMeridianFunctions() }
    /// ```
    package func registerMeridianFunctions() {
        self.add(function: MeridianFunctions.fold)
        self.add(function: MeridianFunctions.match)
    }
}

extension Configuration {
    /// Registers Meridian's SQL functions on every connection opened with this configuration.
    ///
    /// ```swift
    /// var config = Configuration()
    /// config.registerMeridianFunctions()
    /// let pool = try DatabasePool(path: path, configuration: config)
    /// ```
    package mutating func registerMeridianFunctions() {
        self.prepareDatabase { db in db.registerMeridianFunctions() }
    }
}
