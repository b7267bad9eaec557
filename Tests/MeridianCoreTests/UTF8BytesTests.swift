import MeridianCore
import Testing

@Suite struct UTF8BytesTests {
    @Test("ASCII is told from UTF-8 that is not, at every position of a word")
    func ascii() {
        for length in 0..<20 {
            let plain = [UInt8](repeating: 0x61, count: length)
            #expect(plain.withUnsafeBytes { UTF8Bytes.isASCII($0) })
            for position in 0..<length {
                var bytes = plain
                bytes[position] = 0xC3
                #expect(!bytes.withUnsafeBytes { UTF8Bytes.isASCII($0) }, "length \(length), position \(position)")
            }
        }
    }

    @Test("a NUL byte is found at every position of a word, in small and large strings, and only when there is one")
    func nul() {
        // Bytes next to a zero that the word test could mistake (0x01 borrows, 0x80 and 0xFF have the high bit).
        for filler: UInt8 in [0x61, 0x01, 0x7F] {
            for length in 0..<40 {
                let plain = String(decoding: [UInt8](repeating: filler, count: length), as: UTF8.self)
                #expect(!UTF8Bytes.containsNUL(plain), "filler \(filler), length \(length)")
                for position in 0..<length {
                    var bytes = [UInt8](repeating: filler, count: length)
                    bytes[position] = 0
                    let text = String(decoding: bytes, as: UTF8.self)
                    #expect(UTF8Bytes.containsNUL(text), "filler \(filler), length \(length), position \(position)")
                }
            }
        }
        // Multi-byte characters (bytes of 0x80 and above) around a NUL, and without one.
        #expect(!UTF8Bytes.containsNUL("café ÿ€ 日本語 — naïve façade"))
        #expect(UTF8Bytes.containsNUL("café ÿ€ 日本語\u{0}— naïve façade"))
    }
}
