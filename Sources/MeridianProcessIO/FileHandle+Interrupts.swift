// MARK: - Reading a child's pipes without dying on EINTR

public import Foundation

#if canImport(Glibc)
    internal import Glibc
#endif

/// swift-corelibs-foundation reads with `try!`: `availableData`, `readDataToEndOfFile()` and `readData(ofLength:)`
/// stop the whole process with a fatal error when a `read(2)` is interrupted by a signal (EINTR). A process that
/// starts children meets that signal every time one exits (SIGCHLD), so the test suites, the checker, the fuzzers
/// and the benchmarks read their children's pipes here instead: plain `read(2)`, again after EINTR.
/// (`read(upToCount:)` throws instead, but waits for the whole count on a pipe.)
extension FileHandle {
    /// The next bytes of the file, as soon as any are there (at most 64 KiB); empty at its end or on a read error.
    public func nextChunk() -> Data {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let count = buffer.withUnsafeMutableBytes { Self.read(self.fileDescriptor, into: $0) }
        return count > 0 ? Data(buffer[..<count]) : Data()
    }

    /// Every byte up to the end of the file (a pipe: until every writer has closed it).
    public func remainingData() -> Data {
        var data = Data()
        while true {
            let chunk = self.nextChunk()
            if chunk.isEmpty { return data }
            data.append(chunk)
        }
    }

    /// One byte, or nil at the end of the file (a reader of lines that must not take bytes past its newline).
    public func nextByte() -> UInt8? {
        var byte: UInt8 = 0
        let count = withUnsafeMutableBytes(of: &byte) { Self.read(self.fileDescriptor, into: $0) }
        return count == 1 ? byte : nil
    }

    /// `read(2)` into `buffer`, again while it is interrupted: the count read, 0 at the end, -1 on another error.
    private static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
            if count < 0, errno == EINTR { continue }
            return count
        }
    }
}
