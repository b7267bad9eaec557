// MARK: - Lines of an input

/// The lines of `meridian apply`'s and `meridian import`'s JSON-lines input.
enum InputLines {
    /// The lines of `text`, ended by LF or CR LF (a CR alone stays in its line), the last one included even when
    /// empty: the lines `split` over Characters gave (LF never joins a grapheme cluster with its neighbours; CR LF
    /// is one), found in the UTF-8 bytes — splitting over Characters was a fifth of `meridian apply`'s CPU.
    static func split(_ text: String) -> [String] {
        var text = text
        return text.withUTF8 { bytes in
            Self.ranges(bytes).map { String(decoding: UnsafeBufferPointer(rebasing: bytes[$0]), as: UTF8.self) }
        }
    }

    /// Where the lines of ``split(_:)`` are in `bytes` (each without its LF or CR LF), for a reader that reads them
    /// in place instead of copying each into a `String` of its own.
    static func ranges(_ bytes: UnsafeBufferPointer<UInt8>) -> [Range<Int>] {
        var lines: [Range<Int>] = []
        var start = 0
        for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
            let end = index > start && bytes[index - 1] == UInt8(ascii: "\r") ? index - 1 : index
            lines.append(start..<end)
            start = index + 1
        }
        lines.append(start..<bytes.count)
        return lines
    }
}
