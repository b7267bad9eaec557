internal import Foundation

// MARK: - StringOptions

/// The string modifiers of the predicate language: `[c]`, `[d]` and `[cd]`.
///
/// They apply to any operator on a string attribute (`==[c]`, `BEGINSWITH[cd]`, `IN[d]`, …). Both operands are
/// folded with ``Folding/fold(_:_:)`` before they are compared by their UTF-8 bytes.
public struct StringOptions: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int

    /// Creates options from their raw bits (1 = case-insensitive, 2 = diacritic-insensitive).
    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// `[c]`: case-insensitive (both sides lowercased).
    public static let caseInsensitive = StringOptions(rawValue: 1)
    /// `[d]`: diacritic-insensitive (combining marks dropped after canonical decomposition).
    public static let diacriticInsensitive = StringOptions(rawValue: 2)

    /// The modifier as written in the predicate language: `""`, `"[c]"`, `"[d]"` or `"[cd]"`.
    public var description: String {
        switch (self.contains(.caseInsensitive), self.contains(.diacriticInsensitive)) {
        case (false, false): ""
        case (true, false): "[c]"
        case (false, true): "[d]"
        case (true, true): "[cd]"
        }
    }

    /// Only the bits Meridian knows; anything else (from SQL, from the wire) is ignored.
    var normalized: StringOptions { self.intersection([.caseInsensitive, .diacriticInsensitive]) }
}

// MARK: - Folding

/// The one implementation of case and diacritic folding, used by the in-memory evaluator and registered with
/// SQLite as `meridian_fold` (see `MeridianStore`), so both sides fold identically.
///
/// Folding is deterministic and locale-independent:
/// 1. canonical decomposition (NFD), so precomposed `"é"` and decomposed `"e\u{301}"` become the same scalars;
/// 2. with ``StringOptions/caseInsensitive``, Unicode full lowercase mapping (`"É"` → `"é"`, `"İ"` → `"i̇"`;
///    `"ß"` stays `"ß"` and does not equal `"ss"`), then NFD again, and the final sigma `"ς"` becomes `"σ"` (as
///    Unicode case folding has it: the lowercase mapping alone, scalar by scalar, turns `"ΟΔΟΣ"` into `"οδοσ"`,
///    which would not equal the word as written, `"οδος"`);
/// 3. with ``StringOptions/diacriticInsensitive``, every nonspacing mark (general category Mn) is dropped.
///
/// With no options the string is returned unchanged: plain operators compare raw UTF-8 bytes, so a precomposed
/// and a decomposed `"é"` differ under `==` but are equal under `==[d]` and `==[c]`.
///
/// ```swift
/// Folding.fold("Crème Brûlée", [.caseInsensitive, .diacriticInsensitive])  // "creme brulee"
/// ```
public enum Folding {
    /// Folds a string under the given options.
    ///
    /// - Parameters:
    ///   - s: The string to fold.
    ///   - options: `[c]`, `[d]`, both, or neither (the string is then returned unchanged).
    /// - Returns: The folded string, to be compared by UTF-8 bytes.
    public static func fold(_ s: String, _ options: StringOptions) -> String {
        let options = options.normalized
        if options.isEmpty { return s }
        if s.utf8.allSatisfy({ $0 < 0x80 }) {
            // ASCII is already in NFD and has no marks; only the case may change.
            guard options.contains(.caseInsensitive) else { return s }
            return asciiLowercased(s)
        }
        var text = s.decomposedStringWithCanonicalMapping
        if options.contains(.caseInsensitive) {
            text = text.lowercased().decomposedStringWithCanonicalMapping
            if text.unicodeScalars.contains("\u{3C2}") {
                text = String(String.UnicodeScalarView(text.unicodeScalars.map { $0 == "\u{3C2}" ? "\u{3C3}" : $0 }))
            }
        }
        if options.contains(.diacriticInsensitive) {
            var out = String.UnicodeScalarView()
            for scalar in text.unicodeScalars where scalar.properties.generalCategory != .nonspacingMark {
                out.append(scalar)
            }
            text = String(out)
        }
        return text
    }

    static func asciiLowercased(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 >= 65 && $0 <= 90 }) else { return s }
        return String(decoding: s.utf8.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self)
    }
}
