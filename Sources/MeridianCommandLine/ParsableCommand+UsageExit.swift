// MARK: - Exit status 2 for usage errors, shared by the executables

public import ArgumentParser
internal import Foundation

extension ParsableCommand {
    /// Parses `arguments` (the process's, when nil) as this command or one of its subcommands and runs it. A usage
    /// error exits with status 2, as meridian-server's, meridian-check's and meridian-fuzz's contracts say, not
    /// ArgumentParser's 64; help and `ExitCode`s exit as ArgumentParser decides.
    package static func runExitingTwoOnUsageErrors(_ arguments: [String]? = nil) async {
        do {
            var command = try self.parseAsRoot(arguments)
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            if self.exitCode(for: error) == .success || error is ExitCode { self.exit(withError: error) }
            FileHandle.standardError.write(Data((self.fullMessage(for: error) + "\n").utf8))
            Foundation.exit(2)
        }
    }
}
