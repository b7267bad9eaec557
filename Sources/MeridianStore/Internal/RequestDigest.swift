// MARK: - RequestDigest: what an idempotency key is recorded with

internal import Crypto
internal import MeridianCore

/// The SHA-256 of a transaction's request — its operations and conflict policy, in a canonical byte form — recorded
/// with its idempotency key, so that the key answers a retry of the same request and refuses a different one.
///
/// An insert without an id digests without one, so its retry matches although the store chose the id.
enum RequestDigest {
    static func of(_ operations: [WriteOperation], policy: ConflictPolicy) -> [UInt8] {
        var hasher = SHA256()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512)
        func flush() {
            hasher.update(data: bytes)
            bytes.removeAll(keepingCapacity: true)
        }
        func integer(_ value: Int64) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
        func text(_ value: String) {
            integer(Int64(value.utf8.count))
            bytes.append(contentsOf: value.utf8)
        }
        text(policy.rawValue)
        integer(Int64(operations.count))
        for operation in operations {
            text(operation.kind.rawValue)
            text(operation.entity)
            if let id = operation.id {
                bytes.append(1)
                text(id)
            } else {
                bytes.append(0)
            }
            if let version = operation.expectedVersion {
                bytes.append(1)
                integer(version)
            } else {
                bytes.append(0)
            }
            let names = operation.values.keys.sorted { $0.utf8Compare($1) < 0 }
            integer(Int64(names.count))
            for name in names {
                text(name)
                switch operation.values[name]! {
                case .null:
                    bytes.append(0)
                case .int(let value):
                    bytes.append(1)
                    integer(value)
                case .double(let value):
                    bytes.append(2)
                    integer(Int64(bitPattern: value.bitPattern))
                case .string(let value):
                    bytes.append(3)
                    text(value)
                case .bool(let value):
                    bytes.append(4)
                    bytes.append(value ? 1 : 0)
                case .bytes(let value):
                    bytes.append(5)
                    integer(Int64(value.count))
                    bytes.append(contentsOf: value)
                case .timestamp(let value):
                    bytes.append(6)
                    integer(value.microseconds)
                }
            }
            if bytes.count >= 4096 { flush() }
        }
        flush()
        return Array(hasher.finalize())
    }
}
