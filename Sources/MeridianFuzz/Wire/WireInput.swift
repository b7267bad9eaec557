// MARK: - One wire input and its corpus file

internal import GRPCCore
internal import MeridianProto

/// A method of `meridian.v1.Meridian` a wire input is sent to.
enum WireMethod: String, CaseIterable, Sendable {
    case sync = "Sync"
    case apply = "Apply"
    case applyStream = "ApplyStream"
    case query = "Query"
    case getSchema = "GetSchema"

    var descriptor: MethodDescriptor {
        switch self {
        case .sync: Meridian_V1_Meridian.Method.Sync.descriptor
        case .apply: Meridian_V1_Meridian.Method.Apply.descriptor
        case .applyStream: Meridian_V1_Meridian.Method.ApplyStream.descriptor
        case .query: Meridian_V1_Meridian.Method.Query.descriptor
        case .getSchema: Meridian_V1_Meridian.Method.GetSchema.descriptor
        }
    }

    /// Whether the method takes a stream of requests.
    var isClientStreaming: Bool { self == .sync || self == .applyStream }
}

/// What a wire input sends: a method and the raw bytes of each request message, in order.
///
/// On `Sync`, the harness follows the messages with a probe `Subscribe` (id `fuzz-probe`) and expects either an
/// error status or the probe's answer: that proves the stream still processes requests after the input.
///
/// Its corpus file is text, one directive a line, `#` starting a comment:
///
/// ```text
/// # an ApplyRequest whose operation kind is an unknown enum value
/// method Apply
/// message 0a0808e707120550...
/// ```
struct WireInput: Sendable, Equatable {
    var method: WireMethod
    var messages: [[UInt8]]

    /// The corpus file text, with `comment` lines first.
    func corpusText(comment: String = "") -> String {
        var lines = comment.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }.map {
            "# " + $0
        }
        lines.append("method \(self.method.rawValue)")
        for message in self.messages { lines.append("message " + Self.hex(message)) }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Reads a corpus file's text.
    ///
    /// - Throws: ``CorpusError`` naming the line that is not `method NAME`, `message HEX`, blank or a comment.
    init(corpusText text: String) throws(CorpusError) {
        var method: WireMethod?
        var messages: [[UInt8]] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingPrefix(while: { $0 == " " })
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let parts = trimmed.split(separator: " ", maxSplits: 1)
            switch (parts.first, parts.count) {
            case ("method", 2):
                guard let m = WireMethod(rawValue: String(parts[1])) else {
                    throw CorpusError("line \(number + 1): unknown method '\(parts[1])'")
                }
                method = m
            case ("message", 2):
                guard let bytes = Self.bytes(hex: parts[1]) else {
                    throw CorpusError("line \(number + 1): 'message' needs hexadecimal bytes")
                }
                messages.append(bytes)
            case ("message", 1):
                messages.append([])
            default:
                throw CorpusError("line \(number + 1): expected 'method NAME' or 'message HEX', found '\(line)'")
            }
        }
        guard let method else { throw CorpusError("no 'method' line") }
        self.method = method
        self.messages = messages
    }

    init(method: WireMethod, messages: [[UInt8]]) {
        self.method = method
        self.messages = messages
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func bytes(hex: Substring) -> [UInt8]? {
        let utf8 = Array(hex.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let high = Self.nibble(utf8[i]), let low = Self.nibble(utf8[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// A corpus file that cannot be read.
public struct CorpusError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, with the line.
    public var message: String

    init(_ message: String) { self.message = message }

    public var description: String { "corpus: \(self.message)" }
}
