internal import Foundation

// MARK: - Ids in normalization form C

extension String {
    /// Whether the string is in Unicode normalization form C (NFC), as every row id must be.
    ///
    /// Swift compares and hashes strings by canonical equivalence: `"\u{E9}"` (é precomposed) and `"e\u{301}"` (e and
    /// a combining acute accent) are one `String` to `==`, to a `Dictionary` and to every client cache, while SQLite
    /// keeps them as two primary keys. Two rows whose ids differ only so would be one row to every client — its
    /// change sets would lie. Among strings in NFC, canonically equivalent ones are the same bytes, so ids in NFC
    /// compare alike in Swift and in SQLite. ASCII (every generated id, most ids) is NFC as it is.
    package var isNormalizedID: Bool {
        var text = self
        if text.withUTF8({ UTF8Bytes.isASCII(UnsafeRawBufferPointer($0)) }) { return true }
        return self.precomposedStringWithCanonicalMapping.utf8.elementsEqual(self.utf8)
    }
}
