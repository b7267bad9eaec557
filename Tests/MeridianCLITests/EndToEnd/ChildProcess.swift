// MARK: - Child processes for end-to-end tests

import Foundation
import MeridianProcessIO
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The folder holding the built products (`meridian`, `meridian-server`): the test bundle's own folder.
let productsFolder: String = {
    let candidates = [
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path,
        Bundle.main.bundleURL.deletingLastPathComponent().path,
        repositoryRoot + "/.build/debug",
    ]
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0 + "/meridian") } ?? candidates[2]
}()

/// A built product's path.
func product(_ name: String) -> String { productsFolder + "/" + name }

/// What a finished command printed and how it exited.
struct CommandResult: Sendable, CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String

    var description: String { "exit \(self.status)\nstdout:\n\(self.stdout)\nstderr:\n\(self.stderr)" }
}

/// Runs `meridian` with `arguments` (and `stdin`), waits for it, and returns what it printed.
func runMeridian(
    _ arguments: [String],
    server: String? = nil,
    stdin: String? = nil,
    environment: [String: String] = [:]
) async throws -> CommandResult {
    let child = try ChildProcess(
        product("meridian"), (server.map { ["--server", $0] } ?? []) + arguments, stdin: stdin,
        environment: environment)
    let status = await child.waitForExit()
    return CommandResult(status: status, stdout: await child.allOutput(), stderr: await child.allErrorOutput())
}

/// An end-to-end test's executable is not built (or not where the tests look for it).
struct MissingExecutable: Error, CustomStringConvertible {
    var path: String
    var description: String { "\(self.path) is not an executable file (`swift build --build-tests` builds it)" }
}

/// A running child process whose standard output is read line by line and standard error kept.
///
/// Each instance is owned by one test; reader threads hand data over through `Mutex`es.
final class ChildProcess: Sendable {
    let process: Process
    private let errors = Locked<Data>(Data())
    /// Whether standard error has ended (its reader thread saw end of file).
    private let errorsEnded = Locked<Bool>(false)
    /// Standard output's lines so far, whether it has ended, and how many lines `nextLine` has handed out.
    private let output = Locked<(lines: [String], ended: Bool, read: Int)>(([], false, 0))

    /// Starts `executable` with `arguments`; `stdin`, when given, is written and closed.
    init(_ executable: String, _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:])
        throws
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "MERIDIAN_SERVER")
        env.removeValue(forKey: "MERIDIAN_TOKEN")
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        self.process = process
        // The test targets depend on the executables, so `swift build --build-tests` builds them: one that is
        // missing is a failure of the test that needs it, never a skip.
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw MissingExecutable(path: executable)
        }
        try process.run()

        let outHandle = out.fileHandleForReading
        let output = self.output
        Thread.detachNewThread {
            var buffer = Data()
            while true {
                let data = outHandle.nextChunk()
                if data.isEmpty { break }
                buffer.append(data)
                var lines: [String] = []
                while let newline = buffer.firstIndex(of: 10) {
                    lines.append(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...newline)
                }
                if !lines.isEmpty { output.withLock { $0.lines += lines } }
            }
            let rest = buffer.isEmpty ? [] : [String(decoding: buffer, as: UTF8.self)]
            output.withLock {
                $0.lines += rest
                $0.ended = true
            }
        }
        let errHandle = err.fileHandleForReading
        let errors = self.errors
        let errorsEnded = self.errorsEnded
        Thread.detachNewThread {
            while true {
                let data = errHandle.nextChunk()
                if data.isEmpty { break }
                errors.withLock { $0.append(data) }
            }
            errorsEnded.withLock { $0 = true }
        }
        if let stdin {
            input.fileHandleForWriting.write(Data(stdin.utf8))
        }
        try? input.fileHandleForWriting.close()
    }

    /// What the process wrote on standard error so far.
    var errorOutput: String { String(decoding: self.errors.withLock { $0 }, as: UTF8.self) }

    /// Everything the process wrote on standard error, once it has closed it (an exited process's last message may
    /// still be in the pipe when its exit is seen: reading `errorOutput` then lost it under load).
    /// A grandchild that still holds the pipe (a process the child left running) cannot hold this up past `timeout`.
    func allErrorOutput(timeout: Duration = .seconds(10)) async -> String {
        let deadline = ContinuousClock.now + timeout
        while !self.errorsEnded.withLock({ $0 }), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(2))
        }
        return self.errorOutput
    }

    /// The next line of standard output, or `nil` at its end or after `timeout`.
    func nextLine(timeout: Duration = .seconds(30)) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let next: String?? = self.output.withLock { state in
                if state.read < state.lines.count {
                    state.read += 1
                    return .some(state.lines[state.read - 1])
                }
                return state.ended ? .some(nil) : nil
            }
            if let next { return next }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return nil
    }

    /// Every line of standard output, once the process has closed it.
    func allOutput() async -> String {
        while !self.output.withLock({ $0.ended }) {
            try? await Task.sleep(for: .milliseconds(2))
        }
        let lines = self.output.withLock { $0.lines }
        return lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n"
    }

    /// Sends a signal.
    func signal(_ signal: Int32) {
        if self.process.isRunning { kill(self.process.processIdentifier, signal) }
    }

    /// Waits for the process to exit (killing it after `timeout`) and returns its status; -1 when Foundation never
    /// saw it exit.
    ///
    /// Never calls `Process.waitUntilExit()`: on Linux, when Foundation misses a child's exit (seen under load, the
    /// child left a zombie), that call spins on a cooperative thread for ever and stalls every other test. Polling
    /// `isRunning` with a bound turns that into one failing test.
    func waitForExit(timeout: Duration = .seconds(60)) async -> Int32 {
        var deadline = ContinuousClock.now + timeout
        var killed = false
        while self.process.isRunning {
            if ContinuousClock.now > deadline {
                if killed { return -1 }
                // Killed, it gets a few seconds to be reaped (it was given 2 ms, and a stop on a loaded machine
                // then read as -1 though the process was on its way out).
                self.signal(SIGKILL)
                killed = true
                deadline = ContinuousClock.now + .seconds(5)
            }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return self.process.terminationStatus
    }

    /// Stops the process with SIGTERM (SIGKILL after 30 s) and returns its status. (A graceful stop took more than
    /// 10 s once, in a full parallel test run on two cores whose tests each took minutes.)
    @discardableResult
    func stop() async -> Int32 {
        self.signal(SIGTERM)
        return await self.waitForExit(timeout: .seconds(30))
    }
}

/// A `Mutex` in a class, so that reader threads and the test can share it.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { self.mutex = Mutex(value) }

    func withLock<R: Sendable>(_ body: (inout sending Value) throws -> sending R) rethrows -> R {
        try self.mutex.withLock(body)
    }
}
