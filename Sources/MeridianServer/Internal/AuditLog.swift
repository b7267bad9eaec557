// MARK: - AuditLog: who did what, as JSON lines

internal import Foundation
internal import Synchronization

/// The audit log (`--audit-log FILE`): one JSON object per line, appended, for authentications (never a credential
/// itself), refusals, streams, transactions, denials, refreshes and revocations.
///
/// ```json
/// {"event":"authenticated","method":"jwt","peer":"ipv4:127.0.0.1:51234","rpc":"Sync","sub":"alice","time":"2026-11-24T10:48:08.123Z"}
/// {"event":"apply","operations":3,"seq":42,"sub":"alice","time":"…"}
/// ```
///
/// Lines are written whole, under a lock, with the keys sorted; the file is created with mode 0600.
final class AuditLog: Sendable {
    private let handle: Mutex<FileHandle>

    /// Opens (or creates) the file for appending.
    ///
    /// - Throws: When the file cannot be created or opened for writing.
    init(path: String) throws {
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
            else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
            }
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        self.handle = Mutex(handle)
    }

    /// Appends one event.
    func record(_ event: String, _ fields: [String: any Sendable]) {
        // Absent values (a nil subject, a nil credential id) are left out rather than written as null.
        var object: [String: Any] = fields.compactMapValues { Self.unwrapped($0) }
        object["event"] = event
        object["time"] = Self.timestamp()
        guard
            var line = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        line.append(UInt8(ascii: "\n"))
        self.handle.withLock { handle in try? handle.write(contentsOf: line) }
    }

    /// The value inside an optional, or `nil` for an empty one; other values as they are.
    private static func unwrapped(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first.flatMap { Self.unwrapped($0.value) }
    }

    private static func timestamp() -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date())
    }
}
