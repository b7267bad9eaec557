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
}
