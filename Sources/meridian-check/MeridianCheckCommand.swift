// MARK: - meridian-check: the multi-process consistency checker

import ArgumentParser
import Dispatch
import Foundation
import Logging
import MeridianCheck
import MeridianCommandLine
import MeridianCore

#if canImport(Glibc)
    import Glibc
#endif

@main
struct MeridianCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "meridian-check",
        abstract: "Run Meridian under faults and check that every client shows states the store really had.",
        discussion: """
            Starts meridian-server on a temporary store, clients and writers (this binary's `client` and `writer` \
            subcommands) through a TCP proxy, and a sqlite3 shell writing the same file; injects faults on a seeded \
            schedule; checks every state every client reaches against the store's change log. Ends with a summary; \
            exit status 1 on any violation (replay with the printed --seed), 2 when the run cannot be set up. \
            See docs/checker.md.
            """,
        subcommands: [Soak.self, Client.self, Writer.self],
        defaultSubcommand: Soak.self
    )

    /// Runs the command; usage errors exit with status 2 ("the run cannot be set up"), not ArgumentParser's 64.
    static func main() async {
        await self.runExitingTwoOnUsageErrors()
    }
}

// MARK: - Soak

struct Soak: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak", abstract: "Run a seeded soak with faults and print the summary (the default).")

    @Option(help: "The seed: the workload and the fault schedule follow from it.")
    var seed: UInt64 = 1

    @Option(help: "How long to run the workload, in seconds (the end adds a few seconds).")
    var duration: Int = 60

    @Option(help: "Client processes.")
    var clients: Int = 4

    @Option(help: "Writer processes.")
    var writers: Int = 3

    @Flag(help: "Inject no faults at all.")
    var noFaults = false

    @Flag(help: "Do not kill -9 and restart clients.")
    var noClientKills = false

    @Flag(help: "Do not kill -9 and restart the server.")
    var noServerKills = false

    @Flag(help: "Do not SIGSTOP clients past the queue bound.")
    var noClientStops = false

    @Flag(help: "Do not cut connections at the proxy.")
    var noConnectionCuts = false

    @Flag(help: "Do not put a file size limit on the server (a full disk).")
    var noDiskFull = false

    @Option(help: "The folder holding meridian-server (default: this executable's folder).")
    var bin: String?

    @Option(help: "The server's --client-queue-limit (small, so a stopped client overflows it).")
    var queueLimit: Int = 64

    @Option(help: "Writers pause a random 0 to 2x this many milliseconds between transactions.")
    var writerPauseMs: Int = 10

    @Option(
        help:
            "Inject faults at this mean rate, one at a time, weighted as a fleet sees them in a year (client kill 50, server kill 5, connection cut 5, client stop 2, full disk 1); default: each kind once, then at random, a few seconds apart."
    )
    var faultsPerMinute: Double?

    @Flag(help: "Do not run the fuzz campaigns beside the soak.")
    var noFuzz = false

    @Flag(help: "Keep the run directory (store, cache files, logs) even when the run passes.")
    var keep = false

    @Flag(help: "Print every check that passes.")
    var verbose = false

    @Flag(
        help: """
            Identities and rules: the server verifies short-lived tokens and serves the schema with read and write \
            rules; each client reads as one of three principals with overlapping views (owned rows and shared \
            categories) and is checked against exactly what its principal may see, while writers change owners.
            """)
    var auth = false

    @Option(help: "With --auth: the tokens' lifetime in seconds (clients refresh their streams before it ends).")
    var tokenTtl = 8

    @Flag(help: .hidden)
    var selfTestCorrupt = false

    func validate() throws {
        guard (2...3600).contains(self.tokenTtl) else { throw ValidationError("--token-ttl must be 2 to 3600 seconds") }
        guard self.duration > 0 else { throw ValidationError("--duration must be at least 1 second") }
        guard (1...32).contains(self.clients) else { throw ValidationError("--clients must be 1 to 32") }
        guard (1...32).contains(self.writers) else { throw ValidationError("--writers must be 1 to 32") }
        guard self.queueLimit > 0 else { throw ValidationError("--queue-limit must be positive") }
        guard self.writerPauseMs >= 0 else { throw ValidationError("--writer-pause-ms must be 0 or more") }
        if let rate = self.faultsPerMinute, !(rate > 0 && rate <= 600) {
            throw ValidationError("--faults-per-minute must be more than 0 and at most 600, not \(rate)")
        }
    }

    func run() async throws {
        var options = SoakOptions(seed: self.seed, duration: self.duration)
        options.clients = self.clients
        options.writers = self.writers
        options.faultsPerMinute = self.faultsPerMinute
        var faults = Set(Fault.allCases)
        if self.noFaults { faults = [] }
        if self.noClientKills { faults.remove(.clientKill) }
        if self.noServerKills { faults.remove(.serverKill) }
        if self.noClientStops { faults.remove(.clientStop) }
        if self.noConnectionCuts { faults.remove(.connectionCut) }
        if self.noDiskFull { faults.remove(.diskFull) }
        options.faults = faults
        options.binDirectory = self.bin
        options.queueLimit = self.queueLimit
        options.writerPauseMs = self.writerPauseMs
        options.keep = self.keep
        options.fuzz = !self.noFuzz
        options.verbose = self.verbose
        options.selfTestCorrupt = self.selfTestCorrupt
        options.auth = self.auth
        options.tokenLifetimeSeconds = self.tokenTtl

        let signals = stopChildrenOnSignals()
        defer { for source in signals { source.cancel() } }
        let summary: SoakSummary
        do {
            summary = try await runSoak(options)
        } catch let error as CheckError {
            FileHandle.standardError.write(Data("meridian-check: error: \(error)\n".utf8))
            throw ExitCode(2)
        }
        print(summary)
        if !summary.violations.isEmpty {
            print("FAILED: \(summary.violations.count) violations; first: \(summary.violations[0])")
            print("replay: meridian-check \(replayArguments(options)); logs and store kept in \(summary.directory)")
            throw ExitCode(1)
        }
    }
}

/// The arguments that replay a run's workload and fault schedule.
func replayArguments(_ options: SoakOptions) -> String {
    var arguments = ["--seed \(options.seed)", "--duration \(options.duration)"]
    arguments += ["--writer-pause-ms \(options.writerPauseMs)", "--queue-limit \(options.queueLimit)"]
    arguments += ["--clients \(options.clients)", "--writers \(options.writers)"]
    if options.faults.isEmpty {
        arguments.append("--no-faults")
    } else {
        for fault in Fault.allCases where !options.faults.contains(fault) {
            arguments.append(fault == .diskFull ? "--no-disk-full" : "--no-\(fault.rawValue)s")
        }
    }
    if let rate = options.faultsPerMinute { arguments.append("--faults-per-minute \(rate)") }
    if options.auth { arguments += ["--auth", "--token-ttl \(options.tokenLifetimeSeconds)"] }
    if options.selfTestCorrupt { arguments.append("--self-test-corrupt") }
    return arguments.joined(separator: " ")
}

/// SIGINT and SIGTERM kill every child, then end the checker (status 130 or 143).
func stopChildrenOnSignals() -> [any DispatchSourceSignal] {
    [SIGINT, SIGTERM].map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler {
            ChildRegistry.killAll()
            exit(128 + number)
        }
        source.resume()
        return source
    }
}

// MARK: - Roles

/// Logging for a child role: warnings and errors to stderr, client validation failures as violation reports.
func bootstrapChildLogging() {
    LoggingSystem.bootstrap { label in ViolationLogHandler(label: label) }
}

struct Client: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client", abstract: "(run by the soak) A client that reports every state it reaches.")

    @Option(help: "The server (or proxy) address, HOST:PORT.")
    var server: String

    @Option(help: "The cache file (kept across restarts).")
    var cache: String

    @Option(help: "The seed for the map's region moves.")
    var seed: UInt64 = 1

    @Flag(help: .hidden)
    var selfTestCorrupt = false

    @OptionGroup var identity: IdentityOptions

    @Option(help: "With --auth-key: connect as the principal of this client index.")
    var principalOfClient: Int = 0

    func run() async throws {
        bootstrapChildLogging()
        let role = ClientRole(
            server: self.server, cachePath: self.cache, seed: self.seed, corrupt: self.selfTestCorrupt,
            identity: self.identity.identity(Workload.readerPrincipal(client: self.principalOfClient)))
        try await role.run(logger: Logger(label: "meridian.client"))
    }
}

struct Writer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "writer", abstract: "(run by the soak) A writer of random seeded transactions.")

    @Option(help: "The server (or proxy) address, HOST:PORT.")
    var server: String

    @Option(help: "This writer's index (its id space for bulk rows and its random stream).")
    var index: Int = 0

    @Option(help: "The seed.")
    var seed: UInt64 = 1

    @Option(help: "Pause a random 0 to 2x this many milliseconds between transactions.")
    var pauseMs: Int = 10

    @OptionGroup var identity: IdentityOptions

    func run() async throws {
        bootstrapChildLogging()
        let stop = StopFlag()
        signal(SIGTERM, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
        source.setEventHandler { stop.set() }
        source.resume()
        defer { source.cancel() }
        let role = WriterRole(
            server: self.server, index: self.index, seed: self.seed, pauseMs: self.pauseMs,
            identity: self.identity.identity(Workload.writerPrincipal))
        try await role.run(logger: Logger(label: "meridian.client"), stop: stop)
    }
}

/// How a role started by an `--auth` soak signs its tokens.
struct IdentityOptions: ParsableArguments {
    @Option(help: "Sign tokens with this HS256 secret (the soak's, under --auth).")
    var authKey: String?

    @Option(help: "With --auth-key: the tokens' lifetime in seconds.")
    var tokenTtl: Int = 8

    func identity(_ principal: Principal) -> Identity? {
        self.authKey.map { Identity(keyPath: $0, principal: principal, tokenLifetime: .seconds(self.tokenTtl)) }
    }
}
