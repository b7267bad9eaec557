// MARK: - Standard streams and the terminal

#if canImport(Glibc)
    internal import Glibc
#elseif canImport(Musl)
    internal import Musl
#elseif canImport(Darwin)
    internal import Darwin
#endif

/// Writing to standard output and error, line by line and flushed, and what the CLI needs to know about the terminal.
enum Terminal {
    /// Writes `text` and a newline to standard output and flushes, so that a reader of a pipe sees each line at once.
    static func printLine(_ text: String) {
        Self.write(text + "\n", to: 1)
    }

    /// Writes `text` to standard output as is, and flushes.
    static func writeOut(_ text: String) {
        Self.write(text, to: 1)
    }

    /// Writes `text` to standard error as is.
    static func writeError(_ text: String) {
        Self.write(text, to: 2)
    }

    /// Writes UTF-8 bytes to standard output as they are, and flushes.
    static func writeOut(bytes: [UInt8]) {
        Self.write(bytes: bytes, to: 1)
    }

    /// Writes all of `text` to a file descriptor, retrying on short writes and EINTR. A closed pipe ends the process
    /// quietly with status 0, like `head` expects.
    static func write(_ text: String, to fd: Int32) {
        Self.write(bytes: Array(text.utf8), to: fd)
    }

    /// ``write(_:to:)`` of bytes.
    static func write(bytes: [UInt8], to fd: Int32) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in
                systemWrite(fd, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE { exit(0) }
                return
            }
            offset += n
        }
    }

    /// Whether a file descriptor is a terminal (`isatty`).
    static func isTerminal(_ fd: Int32) -> Bool {
        isatty(fd) == 1
    }

    /// The terminal's size in columns and rows, or `nil` when standard output is not a terminal.
    static func size() -> (columns: Int, rows: Int)? {
        var ws = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0, ws.ws_row > 0 else { return nil }
        return (Int(ws.ws_col), Int(ws.ws_row))
    }

    /// Ignores SIGPIPE so that a closed pipe is an `EPIPE` from `write`, handled above, rather than a kill.
    static func ignoreSIGPIPE() {
        signal(SIGPIPE, SIG_IGN)
    }
}

/// `write(2)`, named apart from ``Terminal/write(_:to:)``.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Darwin)
        Darwin.write(fd, buffer, count)
    #elseif canImport(Musl)
        Musl.write(fd, buffer, count)
    #else
        Glibc.write(fd, buffer, count)
    #endif
}
