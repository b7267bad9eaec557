// MARK: - Suggestion

/// "Did you mean …?" hints for misspelt keys, types and names.
enum Suggestion {
    /// The candidate closest to `word`, if it is close enough to be a plausible typo.
    ///
    /// Distance is the optimal-string-alignment edit distance (insertions, deletions, substitutions and adjacent
    /// transpositions each cost 1) over lowercased text; a candidate qualifies within `max(1, min(2, n / 3))`
    /// edits, `n` being the candidate's length. Ties go to the earlier candidate, so the result is deterministic.
    static func closest(to word: String, in candidates: [String]) -> String? {
        let target = Array(word.lowercased().unicodeScalars)
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let scalars = Array(candidate.lowercased().unicodeScalars)
            let limit = max(1, min(2, scalars.count / 3))
            let distance = Self.distance(target, scalars)
            guard distance <= limit else { continue }
            if best == nil || distance < best!.distance {
                best = (candidate, distance)
            }
        }
        return best?.candidate
    }

    /// `" (did you mean 'x'?)"` or the empty string.
    static func hint(for word: String, in candidates: [String]) -> String {
        guard let match = Self.closest(to: word, in: candidates) else { return "" }
        return " (did you mean '\(match)'?)"
    }

    /// Optimal-string-alignment distance between two scalar arrays.
    static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    value = min(value, previous2[j - 2] + 1)
                }
                current[j] = value
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}
