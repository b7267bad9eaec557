// MARK: - RandomID

internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#elseif canImport(Darwin)
    internal import Darwin
#endif

/// Time-ordered (version 7, RFC 9562) UUIDs as lowercase strings: the ids the store generates for inserts without one,
/// and those a client gives the rows it creates:
/// `xxxxxxxx-xxxx-7xxx-[89ab]xxx-xxxxxxxxxxxx`.
///
/// Why time-ordered: an entity's `id` is its primary key, a B-tree. Random (version 4) ids land each insert on a
/// random leaf page, so a commit of n single-row transactions rewrites n index pages into the WAL; ids that grow with
/// time land together on the rightmost page. Measured with SQLite alone (Python, WAL, `synchronous=NORMAL`), 8
/// single-row inserts in one commit cost 170 µs with random ids and 78–95 µs with ordered ones, against 46–55 µs
/// for one: random ids made group commit, which shares one commit among concurrent writers, pay almost as much per
/// writer as separate commits.
///
/// Layout: 48 bits of Unix time in milliseconds; the version; 12 bits of counter (RFC 9562 §6.2, method 1), started
/// at a random value below 2048 each millisecond and incremented for every id within it, so that ids made by this
/// process are strictly increasing (when a millisecond's counter runs out, or the clock steps back, the timestamp is
/// carried on from the last id's); the variant; 62 random bits.
///
/// The random bits come from a pool of bytes drawn 4 KiB at a time from `arc4random_buf` (the kernel's `getrandom`):
/// one system call per id had cost about 4.5% of the store's CPU. (The pool is per process; Meridian starts other
/// processes with `posix_spawn`, never a bare `fork`, which would share it.)
package enum RandomID {
    private struct State {
        var pool = [UInt8](repeating: 0, count: 4096)
        var used = 4096
        var millis: UInt64 = 0
        var counter: UInt64 = 0

        mutating func randomWord() -> UInt64 {
            if self.used + 8 > self.pool.count {
                self.pool.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
                self.used = 0
            }
            var word: UInt64 = 0
            self.pool.withUnsafeBytes { bytes in
                let slice = UnsafeRawBufferPointer(rebasing: bytes[self.used..<self.used + 8])
                withUnsafeMutableBytes(of: &word) { $0.copyMemory(from: slice) }
            }
            self.used += 8
            return word
        }

        /// The next id's timestamp and counter: later than the last one's.
        mutating func nextStamp(now: UInt64) -> (millis: UInt64, counter: UInt64) {
            if now > self.millis {
                self.millis = now
                self.counter = self.randomWord() & 0x7FF
            } else if self.counter < 0xFFF {
                self.counter += 1
            } else {
                self.millis += 1
                self.counter = self.randomWord() & 0x7FF
            }
            return (self.millis, self.counter)
        }
    }

    private static let state = Mutex(State())

    /// Milliseconds since the Unix epoch.
    private static func nowMillis() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return UInt64(time.tv_sec) &* 1000 &+ UInt64(time.tv_nsec) / 1_000_000
    }

    package static func uuidString() -> String {
        let now = self.nowMillis()
        let (millis, counter, random) = self.state.withLock { state in
            let stamp = state.nextStamp(now: now)
            return (stamp.millis, stamp.counter, state.randomWord())
        }
        let high = (millis & 0xFFFF_FFFF_FFFF) << 16 | 0x7000 | counter
        let low = (random & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // variant 10
        return String(unsafeUninitializedCapacity: 36) { buffer in
            let digits: StaticString = "0123456789abcdef"
            var out = 0
            /// One group of hex digits (the `nibbles` below bit `shift` of `word`), after a dash unless it is the first.
            func group(_ word: UInt64, _ nibbles: Int, _ shift: Int) {
                if out > 0 {
                    buffer[out] = UInt8(ascii: "-")
                    out += 1
                }
                var s = shift
                for _ in 0..<nibbles {
                    s -= 4
                    buffer[out] = digits.utf8Start[Int((word >> UInt64(s)) & 0xF)]
                    out += 1
                }
            }
            group(high, 8, 64)
            group(high, 4, 32)
            group(high, 4, 16)
            group(low, 4, 64)
            group(low, 12, 48)
            return out
        }
    }
}
