// MARK: - SyncEvent
//
// What the server's Sync stream says, in domain terms: the wire decoder (`SyncEvent+Wire.swift`) turns each
// `SyncResponse` into one event outside the context's actor, so the context and its replica state never see a
// protobuf message and can be fed events directly in tests.

internal import MeridianCore

/// One message of the Sync stream, decoded.
enum SyncEvent: Sendable {
    /// The stream is open.
    case welcome(Welcome)
    /// A chunk of a subscription's snapshot, to stage until a Batch names it.
    case snapshotChunk(SnapshotChunk)
    /// One commit boundary: every subscription of the stream moves to its seq.
    case batch(Batch)
    /// Nothing affects the stream's subscriptions up to `seq`.
    case heartbeat(seq: Int64)
    /// The server rejected a Subscribe or a Replace.
    case subscriptionError(SubscriptionFailure)
    /// The server is closing the stream.
    case goodbye(reason: String)
    /// A message with no case this client knows.
    case unknown

    /// What `Welcome` says.
    struct Welcome: Sendable, Hashable {
        var seq: Int64
        var resumed: Bool
        var heartbeatIntervalMilliseconds: UInt32
        var schemaFingerprint: String
        var accessFingerprint: String = ""
    }

    /// One chunk of a snapshot.
    struct SnapshotChunk: Sendable, Hashable {
        var subscriptionID: String
        var epoch: UInt32
        /// The seq the snapshot is at.
        var seq: Int64
        var index: UInt32
        var isLast: Bool
        var resnapshot: Bool
        var rows: [VersionedRow]
    }

    /// One Batch: its seq and one delta per affected subscription (or one part of a Batch sent in parts).
    struct Batch: Sendable, Hashable {
        var seq: Int64
        var deltas: [Delta]
        /// More parts of this Batch follow (protocol version 2): hold it, and apply the parts together.
        var continued = false
    }

    /// What one Batch does to one subscription.
    struct Delta: Sendable, Hashable {
        var subscriptionID: String
        var epoch: UInt32
        /// The subscription's staged snapshot becomes its result (before any delta of the batch).
        var snapshot: Bool
        /// The delta answers the subscription's Replace.
        var replaced: Bool
        var left: [String]
        var entered: [VersionedRow]
        var updated: [VersionedRow]
        /// With `snapshot`: the seq of the snapshot it shows, its chunks' (0: not said, by a server before the field).
        var snapshotSeq: Int64 = 0
    }

    /// A rejected subscription or Replace.
    struct SubscriptionFailure: Sendable {
        var subscriptionID: String
        var epoch: UInt32
        var error: ClientError
        /// The server dropped the subscription (a Replace it waits for is not merely refused).
        var ended = false
    }
}

/// A server row with its version in the store.
struct VersionedRow: Sendable, Hashable {
    var row: Row
    var version: Int64
}
