// MARK: - meridian schema

internal import ArgumentParser
internal import MeridianClient
internal import MeridianCore

/// `meridian schema`: prints the served schema as a schema file.
struct SchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the served schema (as a schema file the server can load).")

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case yaml, json
    }

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "Output format.")
    var format: Format = .yaml

    func run() async throws {
        let address = try self.connection.address()
        let format = self.format
        try await ServerConnection.with(address) { connection in
            let (schema, fingerprint) = try await connection.schema()
            switch format {
            case .yaml: Terminal.printLine(SchemaRendering.yaml(schema, fingerprint: fingerprint))
            case .json: Terminal.printLine(SchemaRendering.json(schema))
            }
        }
    }
}
