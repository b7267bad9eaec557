// MARK: - JSONLogHandler: `--log-format json`

import Foundation
import Logging
import MeridianCore

/// Writes each log record as one JSON object on one line of standard error, for log shippers (Vector, Fluent Bit,
/// Loki's promtail, `jq`):
///
/// ```json
/// {"time":"2026-11-24T19:02:03.123456Z","level":"info","label":"meridian.server","message":"meridian server starting","meridian.seq":"42"}
/// ```
///
/// `time` is UTC with microseconds; the record's metadata (the handler's, then the logger's, then the call's, later
/// keys winning) follows as string members, nested metadata as JSON arrays and objects. `source`, `file` and `line`
/// are added at `debug` and `trace`.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    /// Where lines go; one `write` per record, so that records of concurrent tasks never interleave.
    private let output: @Sendable (String) -> Void

    init(label: String, output: @escaping @Sendable (String) -> Void = Self.standardError) {
        self.label = label
        self.output = output
    }

    static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data(line.utf8))
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let level = event.level
        var record = "{\"time\":\"\(Self.timestamp())\",\"level\":\"\(level.rawValue)\",\"label\":"
        JSONText.write(self.label, to: &record)
        record += ",\"message\":"
        JSONText.write(event.message.description, to: &record)
        var merged = self.metadata
        if let metadata = event.metadata { merged.merge(metadata) { _, new in new } }
        // Members in a stable order (sorted keys), never one the record itself writes.
        for key in merged.keys.sorted() where !["time", "level", "label", "message"].contains(key) {
            record += ","
            JSONText.write(key, to: &record)
            record += ":"
            Self.write(merged[key]!, to: &record)
        }
        if level <= .debug {
            record += ",\"source\":"
            JSONText.write(event.source, to: &record)
            record += ",\"file\":"
            JSONText.write(event.file, to: &record)
            record += ",\"line\":\(event.line)"
        }
        record += "}\n"
        self.output(record)
    }

    private static func write(_ value: Logger.Metadata.Value, to out: inout String) {
        switch value {
        case .string(let text): JSONText.write(text, to: &out)
        case .stringConvertible(let convertible): JSONText.write(convertible.description, to: &out)
        case .array(let values):
            out += "["
            for (i, value) in values.enumerated() {
                if i > 0 { out += "," }
                Self.write(value, to: &out)
            }
            out += "]"
        case .dictionary(let dictionary):
            out += "{"
            for (i, key) in dictionary.keys.sorted().enumerated() {
                if i > 0 { out += "," }
                JSONText.write(key, to: &out)
                out += ":"
                Self.write(dictionary[key]!, to: &out)
            }
            out += "}"
        }
    }

    /// Now, as `2026-11-24T19:02:03.123456Z`.
    private static func timestamp() -> String {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        var seconds = time_t(time.tv_sec)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(time.tv_nsec / 1000))
    }
}
