// MARK: - ChildProcess: a child whose stdout lines are handed to the checker, and whose stderr goes to a file

internal import Foundation
internal import MeridianProcessIO
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// One child process (server, client, writer, `sqlite3`). Its stdout is read line by line on a thread of its own
/// and each line handed to `onLine`; `onExit` is called once with the exit status (negative: killed by that signal).
/// stderr is appended to a log file in the run directory. Signals go to the child's pid only.
final class ChildProcess: Sendable {
    let name: String
    private let process: Process
    private let input: FileHandle?
    private let exited = StopFlag()

    init(
        name: String,
        executable: String,
        arguments: [String],
        stderrPath: String,
        withStdin: Bool = false,
        onLine: @escaping @Sendable (String) -> Void,
        onExit: @escaping @Sendable (Int32) -> Void
    ) throws {
        self.name = name
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        if !FileManager.default.fileExists(atPath: stderrPath) {
            _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        }
        guard let errors = FileHandle(forWritingAtPath: stderrPath) else {
            throw CheckError("cannot open \(stderrPath) for \(name)'s stderr")
        }
        errors.seekToEndOfFile()
        process.standardError = errors
        var input: FileHandle?
        if withStdin {
            let pipe = Pipe()
            process.standardInput = pipe
            input = pipe.fileHandleForWriting
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        self.input = input
        self.process = process
        process.terminationHandler = { [exited = self.exited] process in
            exited.set()
            ChildRegistry.remove(process.processIdentifier)
            let status =
                process.terminationReason == .uncaughtSignal ? -process.terminationStatus : process.terminationStatus
            onExit(status)
        }
        do {
            try process.run()
        } catch {
            throw CheckError("cannot start \(name) (\(executable)): \(error)")
        }
        try? errors.close()
        ChildRegistry.add(process.processIdentifier)
        if self.exited.isSet { ChildRegistry.remove(process.processIdentifier) }
        let reading = output.fileHandleForReading
        Thread.detachNewThread {
            var buffer: [UInt8] = []
            while true {
                let data = reading.nextChunk()
                if data.isEmpty { break }
                buffer.append(contentsOf: data)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    onLine(String(decoding: buffer[..<newline], as: UTF8.self))
                    buffer.removeSubrange(...newline)
                }
            }
            if !buffer.isEmpty { onLine(String(decoding: buffer, as: UTF8.self)) }
            try? reading.close()
        }
    }

    var pid: Int32 { self.process.processIdentifier }

    var isRunning: Bool { !self.exited.isSet }

    /// Sends `signal` to the child (never to a process group).
    func signal(_ signal: Int32) {
        guard self.isRunning else { return }
        kill(self.pid, signal)
    }

    /// Writes text to the child's stdin.
    func write(_ text: String) throws {
        guard let input else { throw CheckError("\(self.name) has no stdin") }
        try input.write(contentsOf: Data(text.utf8))
    }

    /// Waits up to `timeout` for the child to exit; `false` if it is still running.
    func waitForExit(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while self.isRunning {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// SIGTERM, then SIGKILL after `grace`, then waits for the exit.
    func stop(grace: Duration = .seconds(3)) async {
        guard self.isRunning else { return }
        self.signal(SIGCONT)
        self.signal(SIGTERM)
        if await self.waitForExit(timeout: grace) { return }
        self.signal(SIGKILL)
        _ = await self.waitForExit(timeout: .seconds(10))
    }
}

/// The path of the running executable.
func currentExecutablePath() -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard count > 0 else { return CommandLine.arguments[0] }
    return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Every live child's pid, so that a signal ending the checker (SIGINT, SIGTERM) can kill them all at once.
public enum ChildRegistry {
    private static let pids = Mutex<Set<Int32>>([])

    static func add(_ pid: Int32) { _ = self.pids.withLock { $0.insert(pid) } }
    static func remove(_ pid: Int32) { _ = self.pids.withLock { $0.remove(pid) } }

    /// Sends SIGCONT and SIGKILL to every child still registered (each by its pid).
    public static func killAll() {
        for pid in self.pids.withLock({ $0 }) {
            kill(pid, SIGCONT)
            kill(pid, SIGKILL)
        }
    }
}
