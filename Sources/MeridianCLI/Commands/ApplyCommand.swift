// MARK: - meridian apply

internal import ArgumentParser
internal import MeridianClient
internal import MeridianCore

/// `meridian apply FILE|-`: one transaction from JSON lines; prints the commit seq.
struct ApplyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apply",
        abstract: "Apply JSON lines as one transaction and print the commit seq.",
        discussion: """
            Each line is one operation: {"op":"insert|update|upsert|delete","entity":E,"id":ID,"values":{…}} \
            (id optional for insert; no values for delete; an optional "version" for optimistic locking). \
            All lines commit together or not at all.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: ArgumentHelp("The JSON-lines file, or - for standard input.", valueName: "file"))
    var file: String

    func run() async throws {
        let address = try self.connection.address()
        let text = try InputFile.read(self.file)
        try await ServerConnection.with(address) { connection in
            let (schema, _) = try await connection.schema()
            let operations = try ApplyScript.parse(text, schema: schema)
            guard !operations.isEmpty else { throw CLIError.badInput("no operations in the input") }
            do {
                // Answered with the seq alone: the command prints nothing else, and the answer of one row per
                // operation of a 20,000-line input kept it ~8 ms longer (docs/speed-of-light.md, "bulk").
                let result = try await connection.apply(operations.map(\.operation), seqOnly: true)
                Terminal.printLine(String(result.seq))
            } catch {
                // Name the input line of the operation the server rejected.
                let error = ServerConnection.map(error, address: address.address)
                if let index = error.clientError?.operationIndex, operations.indices.contains(index) {
                    throw error.within("line \(operations[index].line)")
                }
                throw error
            }
        }
    }
}
