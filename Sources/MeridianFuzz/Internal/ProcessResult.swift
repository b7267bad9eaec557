// MARK: - Running a child process with a deadline

internal import Foundation
internal import MeridianProcessIO

/// How a child process ended and what it printed.
struct ProcessResult: Sendable {
    var status: Int32
    /// Killed by a signal (`status` is then the signal number).
    var signalled: Bool
    /// Killed by the harness because it ran past its deadline.
    var timedOut: Bool
    var stdout: String
    var stderr: String

    /// Runs `executable` with `arguments`, writes `stdin` and closes it, and waits at most `timeout` (then kills it).
    static func run(_ executable: String, _ arguments: [String], stdin: Data, timeout: Duration) async throws
        -> ProcessResult
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "MERIDIAN_SERVER")
        process.environment = environment
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        // A child that exits before reading all of stdin (a crash, an early error) would otherwise kill this
        // process with SIGPIPE on the write below; ignored, the write fails with EPIPE instead.
        signal(SIGPIPE, SIG_IGN)
        try process.run()
        // Read both pipes and write stdin on Dispatch threads (blocking I/O must stay off Swift's cooperative pool,
        // which has one thread per core), so a chatty child never blocks on a full pipe.
        let io = DispatchGroup()
        let collected = Collected()
        DispatchQueue.global().async(group: io) {
            collected.stdout = output.fileHandleForReading.remainingData()
        }
        DispatchQueue.global().async(group: io) {
            collected.stderr = errors.fileHandleForReading.remainingData()
        }
        DispatchQueue.global().async(group: io) {
            try? input.fileHandleForWriting.write(contentsOf: stdin)
            try? input.fileHandleForWriting.close()
        }
        let deadline = ContinuousClock.now + timeout
        var timedOut = false
        while process.isRunning {
            if ContinuousClock.now >= deadline {
                timedOut = true
                process.terminate()
                kill(process.processIdentifier, SIGKILL)
                break
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        process.waitUntilExit()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            io.notify(queue: .global()) { continuation.resume() }
        }
        let stdout = String(decoding: collected.stdout, as: UTF8.self)
        let stderr = String(decoding: collected.stderr, as: UTF8.self)
        return ProcessResult(
            status: process.terminationStatus, signalled: process.terminationReason == .uncaughtSignal,
            timedOut: timedOut, stdout: stdout, stderr: stderr)
    }
}

/// The output of a child, written by one Dispatch block per field and read after the group they belong to has
/// finished (the group's `notify` orders the writes before the reads).
private final class Collected: @unchecked Sendable {
    var stdout = Data()
    var stderr = Data()
}
