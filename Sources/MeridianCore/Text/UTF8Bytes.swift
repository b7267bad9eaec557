// MARK: - UTF-8 bytes

/// Checks on UTF-8 bytes read from the wire or from SQLite, before they are made into strings.
package enum UTF8Bytes {
    /// Whether every byte is below 0x80 (checked a word at a time): ASCII, valid UTF-8 as it is. The wire decoders and
    /// the store's cursor rows take such bytes without validating them again.
    @inlinable
    package static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            if word & 0x8080_8080_8080_8080 != 0 { return false }
            offset += 8
        }
        while offset < bytes.count {
            if bytes[offset] & 0x80 != 0 { return false }
            offset += 1
        }
        return true
    }

    /// Whether `text` holds a NUL byte, read from its UTF-8 in place, a word at a time (`String.utf8.contains(0)` walks
    /// the view's iterator a byte at a time: the NUL checks of ids and texts were a seventh of the store's quick
    /// validation of a write, perf).
    @inlinable
    package static func containsNUL(_ text: String) -> Bool {
        let found = text.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
            let bytes = UnsafeRawBufferPointer(utf8)
            var offset = 0
            while offset + 8 <= bytes.count {
                let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                // A zero byte: the classic test, exact for the presence of one (not for which byte it is).
                if (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 != 0 { return true }
                offset += 8
            }
            while offset < bytes.count {
                if bytes[offset] == 0 { return true }
                offset += 1
            }
            return false
        }
        return found ?? text.utf8.contains(0)
    }
}
