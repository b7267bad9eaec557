// MARK: - String literals

/// JSON string literals, for every JSON text the package writes (the CLI's output, the fuzzers' inputs, the server's
/// JSON logs, the admin endpoint, the benchmarks' figures).
package enum JSONText {
    /// Writes a JSON string literal: `"` and `\` escaped, control characters as `\n`, `\t`, `\u00XX`; everything
    /// else (non-ASCII included) as UTF-8.
    package static func write(_ s: String, to out: inout String) {
        out += "\""
        // Most strings need no escape: appended whole (one scalar at a time was most of `meridian watch`'s JSON
        // writing).
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") })
        {
            out += s
            out += "\""
            return
        }
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}

extension JSONText {
    /// A JSON string literal, quotes included.
    package static func quoted(_ s: String) -> String {
        var out = ""
        Self.write(s, to: &out)
        return out
    }
}
