// MARK: - meridian health

internal import ArgumentParser
internal import MeridianClient

/// `meridian health`: asks the server's standard gRPC health service whether it serves, for container and
/// orchestrator health checks.
struct HealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Ask whether the server serves (grpc.health.v1): exit 0 when it does.",
        discussion: """
            Prints SERVING and exits 0 while the server's store takes writes, its fan-out runs and it is not \
            shutting down; prints NOT_SERVING and exits 1 otherwise (the server's log says why); exits 3 when the \
            server cannot be reached.
            """)

    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        let address = try self.connection.address()
        let serving = try await ServerConnection.with(address) { connection in try await connection.isServing() }
        guard serving else {
            Terminal.printLine("NOT_SERVING")
            throw CLIError(.failure, "the server at \(address) is not serving (its log says why)")
        }
        Terminal.printLine("SERVING")
    }
}
