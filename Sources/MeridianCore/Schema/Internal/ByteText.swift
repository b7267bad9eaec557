// MARK: - ByteText

/// Decoding of byte strings written as text in schema files: `hex:…` and `base64:…`.
enum ByteText {
    /// Decodes hexadecimal digits (either case, an even number of them); `nil` if malformed.
    static func hex(_ text: Substring) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let high = Self.hexDigit(digits[i]), let low = Self.hexDigit(digits[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }

    /// Decodes standard base64 (RFC 4648 alphabet `A–Z a–z 0–9 + /`); padding is optional, whitespace (as in a
    /// folded YAML `!!binary` scalar) is ignored. `nil` if malformed.
    static func base64(_ text: Substring) -> [UInt8]? {
        var sextets: [UInt8] = []
        var padding = 0
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                continue
            case UInt8(ascii: "="):
                padding += 1
            default:
                guard padding == 0, let value = Self.base64Digit(c) else { return nil }
                sextets.append(value)
            }
        }
        guard padding <= 2, sextets.count % 4 != 1 else { return nil }
        if padding > 0, (sextets.count + padding) % 4 != 0 { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(sextets.count * 3 / 4)
        var i = 0
        while i < sextets.count {
            let chunk = sextets[i..<min(i + 4, sextets.count)].map(UInt32.init)
            var bits: UInt32 = 0
            for k in 0..<4 { bits = bits << 6 | (k < chunk.count ? chunk[chunk.startIndex + k] : 0) }
            let bytes = [UInt8(bits >> 16 & 0xFF), UInt8(bits >> 8 & 0xFF), UInt8(bits & 0xFF)]
            out += bytes.prefix(chunk.count - 1)
            i += 4
        }
        return out
    }

    private static func hexDigit(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func base64Digit(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
