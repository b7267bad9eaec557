// MARK: - InsertImages

internal import MeridianCore
internal import Synchronization

/// The rows the store's own inserts just wrote, by the seq of their log entries, for the fan-out's next read.
///
/// An insert's log entry holds no image (``TransactionExecutor``: writing one cost more than the insert), so a
/// reader of the log reads each inserted row back from its table, a join of the log to the table: for the fan-out,
/// which reads every commit right after it, that read was 8–15% of the server's CPU with inserts (perf of
/// `meridian-bench server` and `bulk`). The executor knows those rows already: for each insert whose values SQLite
/// stores exactly as given, it keeps the row as a reader of the table would give it (``TransactionExecutor/image``),
/// and the group commit publishes them once it has committed (never those of a transaction that failed). The
/// fan-out's read (``FeedTransaction``) takes the image of each insert it reads instead of reading the row back;
/// an insert without one — a value SQLite would change, a row written by another process, an image already dropped —
/// is read from its table as before.
///
/// Kept only while the fan-out asks for them (``ChangeFeed/keepInsertImages(_:)``: while clients are connected), and
/// at most ``limit`` rows: the fan-out reads in seq order, so older images than the one it asks for are dropped.
final class InsertImages: Sendable {
    /// One inserted row, at the seq of its log entry.
    struct Image: Sendable {
        var seq: Int64
        var entity: String
        var row: Row
    }

    /// The most images kept; the oldest go first (a 20,000-row commit fits; a larger one is partly read back).
    static let limit = 65_536

    private struct State {
        var keeping = false
        /// The images kept from `head` on, in seq order (those before `head` were taken or dropped, and go in one
        /// move once they are most of the array).
        var images: [Image] = []
        var head = 0
        var taken = 0

        var first: Image? { self.head < self.images.count ? self.images[self.head] : nil }

        mutating func dropFirst(_ count: Int = 1) {
            self.head += count
            if self.head == self.images.count {
                self.images.removeAll(keepingCapacity: true)
                self.head = 0
            } else if self.head >= 1_024, self.head * 2 >= self.images.count {
                self.images.removeFirst(self.head)
                self.head = 0
            }
        }
    }

    private let state = Mutex(State())

    /// Whether the executor should build images (read once per group commit).
    var isKeeping: Bool { self.state.withLock { $0.keeping } }

    /// Starts or stops keeping images; stopping drops those kept.
    func keep(_ keeping: Bool) {
        self.state.withLock { state in
            guard state.keeping != keeping else { return }
            state.keeping = keeping
            if !keeping {
                state.images = []
                state.head = 0
            }
        }
    }

    /// Adds a committed group's images, in seq order, dropping the oldest beyond ``limit``.
    func publish(_ images: [Image]) {
        guard !images.isEmpty else { return }
        self.state.withLock { state in
            guard state.keeping else { return }
            state.images.append(contentsOf: images)
            let kept = state.images.count - state.head
            if kept > Self.limit { state.dropFirst(kept - Self.limit) }
        }
    }

    /// Gives each insert of `changes` (in seq order) with no image yet its kept image, if the image is of that seq,
    /// entity and id; drops every image older than the last insert's seq.
    ///
    /// - Returns: How many inserts got an image.
    @discardableResult
    func fill(_ changes: inout [Change]) -> Int {
        self.state.withLock { state in
            guard state.first != nil else { return 0 }
            var filled = 0
            for i in changes.indices where changes[i].kind == .insert && changes[i].after == nil {
                let seq = changes[i].seq
                while let first = state.first, first.seq < seq { state.dropFirst() }
                guard let first = state.first else { break }
                if first.seq == seq, first.entity == changes[i].entity, first.row.id == changes[i].id {
                    changes[i].after = first.row
                    state.dropFirst()
                    filled += 1
                }
            }
            state.taken += filled
            return filled
        }
    }

    /// How many images readers took, for tests that pin that the images are used.
    var takenCount: Int { self.state.withLock { $0.taken } }
}
