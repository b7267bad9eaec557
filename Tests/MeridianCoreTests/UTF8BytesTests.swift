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
}
