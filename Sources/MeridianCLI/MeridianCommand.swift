// MARK: - meridian

internal import ArgumentParser
internal import Logging

#if canImport(Glibc)
    internal import Glibc
#elseif canImport(Musl)
    internal import Musl
#elseif canImport(Darwin)
    internal import Darwin
#endif

/// The entry point of the `meridian` executable.
public enum MeridianMain {
    /// Parses the process's arguments, runs the command and exits with the contract's status.
    ///
    /// Unlike ArgumentParser's `main()`, usage errors exit 2 (not 64), and a ``CLIError`` prints `error: message`
    /// and exits with its status.
    public static func run() async -> Never {
        Terminal.ignoreSIGPIPE()
        // Libraries log through swift-log; the CLI keeps standard output for its own output.
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let arguments = MeridianCommand.hoistingGlobalOptions(Array(CommandLine.arguments.dropFirst()))
        let code = await MeridianCommand.run(arguments: arguments)
        exit(code)
    }
}

/// The `meridian` command: a client for a Meridian server, one subcommand per task.
///
/// Exit statuses (a contract, docs/cli.md): 0 success; 2 usage or bad input; 3 server unreachable; 4 write
/// rejected; 5 credentials refused; 1 anything else.
struct MeridianCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "meridian",
        abstract: "A client for a Meridian replication server.",
        discussion: """
            Every command talks to the server at --server HOST:PORT (default: $MERIDIAN_SERVER, else \
            127.0.0.1:7400). Values in key=value are parsed by the attribute's type in the served schema; \
            key= sets null.

            The identity sent with every call: --token TOKEN, --token-file PATH, or $MERIDIAN_TOKEN.

            Exit status: 0 success; 2 usage or bad input; 3 server unreachable; 4 write rejected \
            (conflict, validation, not found, not allowed by the rules); 5 credentials refused (none, invalid or \
            expired); 1 any other failure.
            """,
        version: "0.1.0",
        subcommands: [
            SchemaCommand.self,
            HealthCommand.self,
            InsertCommand.self,
            UpdateCommand.self,
            UpsertCommand.self,
            DeleteCommand.self,
            ApplyCommand.self,
            QueryCommand.self,
        ] + Self.liveCommands + [
            ImportCommand.self,
            ExportCommand.self,
            TokenCommand.self,
        ]
    )

    /// `watch` and `map`, built on MeridianClient.
    static var liveCommands: [any ParsableCommand.Type] {
        #if canImport(MeridianClient)
            [WatchCommand.self, MapCommand.self]
        #else
            []
        #endif
    }

    /// Runs the command line `arguments` and returns the exit status (printing what the command prints).
    static func run(arguments: [String]) async -> Int32 {
        do {
            var command = try Self.parseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return 0
        } catch let error as CLIError {
            Terminal.writeError("error: \(error.message)\n")
            return error.status.code
        } catch {
            let code = Self.exitCode(for: error)
            let message = Self.fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { Terminal.printLine(message) }
                return 0
            }
            if !message.isEmpty { Terminal.writeError(message + "\n") }
            // ArgumentParser's usage errors exit 64 (EX_USAGE); the contract says 2.
            return code == .validationFailure ? CLIError.Status.badInput.code : code.rawValue
        }
    }

    /// Moves `--server X` / `--server=X` given before the subcommand's name to after it, so that the option is
    /// global: `meridian --server H:P query Point` means `meridian query --server H:P Point`.
    static func hoistingGlobalOptions(_ arguments: [String]) -> [String] {
        var hoisted: [String] = []
        var rest = arguments[...]
        while let first = rest.first {
            if first == "--server", rest.count >= 2 {
                hoisted += rest.prefix(2)
                rest = rest.dropFirst(2)
            } else if first.hasPrefix("--server=") {
                hoisted.append(first)
                rest = rest.dropFirst()
            } else {
                break
            }
        }
        guard !hoisted.isEmpty, let subcommand = rest.first, !subcommand.hasPrefix("-") else { return arguments }
        return [subcommand] + hoisted + rest.dropFirst()
    }
}
