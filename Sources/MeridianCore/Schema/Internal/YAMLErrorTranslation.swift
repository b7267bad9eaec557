internal import Yams

// MARK: - YAMLErrorTranslation

/// Turns Yams' `YamlError` into a ``SchemaError`` with a line and column.
enum YAMLErrorTranslation {
    static func schemaError(from error: YamlError, text: String, file: String?) -> SchemaError {
        switch error {
        case .scanner(let context, let problem, let mark, _),
            .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            var message = problem
            if let context {
                message += " (\(context.text) at line \(context.mark.line), column \(context.mark.column))"
            }
            return SchemaError(.syntax, message, file: file, line: mark.line, column: mark.column)

        case .reader(let problem, let offset, _, _):
            let position = offset.map { Self.position(ofCharacterOffset: $0, in: text) }
            return SchemaError(.syntax, problem, file: file, line: position?.line, column: position?.column)

        case .duplicatedKeysInMapping(let duplicates, let context):
            let key = duplicates.first ?? "?"
            let first = context.mark
            let message = "key '\(key)' is declared twice in the same mapping"
            if let second = Self.secondOccurrence(of: key, after: first, in: text) {
                return SchemaError(
                    .duplicateName,
                    message + " (first at line \(first.line), column \(first.column))",
                    file: file,
                    line: second.line,
                    column: second.column
                )
            }
            return SchemaError(.duplicateName, message, file: file, line: first.line, column: first.column)

        default:
            return SchemaError(.syntax, "\(error)", file: file)
        }
    }

    /// The 1-based line and column (in Unicode scalars, as libyaml counts) of a character offset.
    static func position(ofCharacterOffset offset: Int, in text: String) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for character in text.prefix(offset) {
            if character == "\n" || character == "\r\n" {
                line += 1
                column = 1
            } else {
                column += character.unicodeScalars.count
            }
        }
        return (line, column)
    }

    /// Where a duplicated key appears again, so the error points at the repetition rather than the original.
    ///
    /// Yams reports only the first occurrence. In block style the repetition is a later line with the key at the
    /// same column (before the mapping's indentation ends); in flow style (and JSON) it is the next `key:`,
    /// `"key":` or `'key':` token after the first. Returns `nil` when neither is found.
    static func secondOccurrence(of key: String, after first: Mark, in text: String) -> (line: Int, column: Int)? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            Array($0.unicodeScalars.filter { $0 != "\r" })
        }
        let spellings = [key, "\"\(key)\"", "'\(key)'"].map { Array($0.unicodeScalars) }
        func keyAt(_ line: [Unicode.Scalar], _ start: Int) -> Bool {
            guard start >= 0, start <= line.count else { return false }
            if start > 0, !" \t{,".unicodeScalars.contains(line[start - 1]) { return false }
            for spelling in spellings where start + spelling.count <= line.count {
                guard Array(line[start..<start + spelling.count]) == spelling else { continue }
                var i = start + spelling.count
                while i < line.count, line[i] == " " || line[i] == "\t" { i += 1 }
                if i < line.count, line[i] == ":" { return true }
            }
            return false
        }
        let firstLine = first.line - 1
        let column = first.column - 1
        guard firstLine >= 0, firstLine < lines.count else { return nil }

        // Block style: same column on a later line, while the mapping's indentation lasts.
        var index = firstLine + 1
        while index < lines.count {
            let line = lines[index]
            let indent = line.prefix { $0 == " " }.count
            let blank = indent == line.count || line[indent] == "#"
            if !blank {
                if indent < column { break }
                if indent == column, keyAt(line, column) { return (index + 1, column + 1) }
            }
            index += 1
        }
        // Flow style: the next key token after the first occurrence.
        index = firstLine
        var start = column + 1
        while index < lines.count {
            let line = lines[index]
            var position = start
            while position < line.count {
                if keyAt(line, position) { return (index + 1, position + 1) }
                position += 1
            }
            index += 1
            start = 0
        }
        return nil
    }
}
