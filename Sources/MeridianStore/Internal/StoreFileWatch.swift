// MARK: - StoreFileWatch: a wake-up when a store's files are written

#if canImport(Glibc)
    internal import Glibc
    internal import MeridianCore

    /// Wakes a waiting ``CommitPoller`` when any process writes the store's files (inotify, Linux): another process's
    /// commit writes its frames to the `-wal` file before it becomes visible, so a poller that sleeps until then need not
    /// poll while nothing is written.
    ///
    /// The directory is watched, not the files (a `-wal` file is created, truncated and deleted as connections come and
    /// go), and only names that start with the store file's name count. A write to the file says that a commit may be
    /// coming, not that it is visible: SQLite makes it visible after the write (and its flush), through the shared memory
    /// index, which writes no file. The poller therefore keeps polling for a while after each write (see
    /// ``CommitPoller``), and still polls now and then while nothing is written, in case the watch misses something
    /// (a file system that does not report writes, such as a network one).
    final class StoreFileWatch: Sendable {
        /// What ``wait(timeout:)`` saw.
        enum Wake {
            /// A store file was written (or the watch's queue overflowed).
            case written
            /// Nothing within the timeout.
            case timeout
            /// ``stop()`` was called.
            case stopped
            /// The wait itself failed: the watch is of no further use.
            case failed
        }

        private let inotify: Int32
        private let stopRead: Int32
        private let stopWrite: Int32
        private let name: [UInt8]

        /// A watch of the directory of the store file at `path`, or `nil` when it cannot be made.
        init?(path: String) {
            let slash = path.lastIndex(of: "/")
            let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
            let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
            guard !name.isEmpty else { return nil }
            let inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            guard inotify >= 0 else { return nil }
            let mask = UInt32(IN_MODIFY) | UInt32(IN_CREATE) | UInt32(IN_MOVED_TO)
            guard inotify_add_watch(inotify, directory, mask) >= 0 else {
                Glibc.close(inotify)
                return nil
            }
            // A pipe whose read end becomes readable when ``stop()`` writes to it.
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else {
                Glibc.close(inotify)
                return nil
            }
            for end in ends {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            }
            self.inotify = inotify
            self.stopRead = ends[0]
            self.stopWrite = ends[1]
            self.name = Array(name.utf8)
        }

        deinit {
            Glibc.close(self.inotify)
            Glibc.close(self.stopRead)
            Glibc.close(self.stopWrite)
        }

        /// Reads every event queued without waiting; whether one was about a store file.
        func drain() -> Bool {
            var written = false
            let size = 4096
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
            defer { buffer.deallocate() }
            while true {
                let count = read(self.inotify, buffer, size)
                guard count > 0 else { return written }
                var offset = 0
                while offset + MemoryLayout<inotify_event>.size <= count {
                    let event = (buffer + offset).loadUnaligned(as: inotify_event.self)
                    let nameStart = buffer + offset + MemoryLayout<inotify_event>.size
                    if event.mask & UInt32(IN_Q_OVERFLOW) != 0 || self.isStoreFile(nameStart, Int(event.len)) {
                        written = true
                    }
                    offset += MemoryLayout<inotify_event>.size + Int(event.len)
                }
            }
        }

        /// Waits until a store file is written, `timeout` passes or ``stop()`` is called.
        func wait(timeout: Duration) -> Wake {
            let deadline = ContinuousClock.now + timeout
            while true {
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero else { return .timeout }
                var fds = [
                    pollfd(fd: self.stopRead, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: self.inotify, events: Int16(POLLIN), revents: 0),
                ]
                // Rounded up: a wait that ends early would poll once more for nothing.
                let milliseconds = Int32(clamping: left.nanoseconds / 1_000_000 + 1)
                let ready = poll(&fds, 2, milliseconds)
                if ready < 0 {
                    if errno == EINTR { continue }
                    return .failed
                }
                // A descriptor in error would be ready at once, again and again: the watch is given up instead.
                let broken = Int16(POLLERR) | Int16(POLLHUP) | Int16(POLLNVAL)
                if fds[0].revents & broken != 0 || fds[1].revents & broken != 0 { return .failed }
                if fds[0].revents != 0 { return .stopped }
                // Events about other files of the directory (a log, another store) do not end the wait.
                if fds[1].revents != 0, self.drain() { return .written }
            }
        }

        /// Ends a ``wait(timeout:)`` under way, and every later one, at once.
        func stop() {
            var one: UInt8 = 1
            _ = write(self.stopWrite, &one, 1)
        }

        /// Whether an event's name (`length` bytes, NUL-padded) starts with the store file's name: the file itself, its
        /// `-wal`, `-shm` or `-journal`.
        private func isStoreFile(_ name: UnsafeMutableRawPointer, _ length: Int) -> Bool {
            guard length >= self.name.count else { return false }
            for (i, byte) in self.name.enumerated() where name.load(fromByteOffset: i, as: UInt8.self) != byte {
                return false
            }
            return true
        }
    }
#endif
