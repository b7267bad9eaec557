// MARK: - meridian import

internal import ArgumentParser
internal import MeridianClient
internal import MeridianCore

/// `meridian import ENTITY FILE`: writes the rows of a CSV or JSON-lines file in chunked transactions.
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Insert rows from a CSV or JSON-lines file, in chunked transactions.",
        discussion: """
            CSV needs a header row naming id (optional) and attributes; an empty cell is null (or the default, \
            for a required attribute) and "" is the empty string. JSON lines are {"id":ID,"values":{…}} (what \
            export writes) or flat {"id":ID,"title":…}. The whole file is checked before anything is written; a \
            progress bar is drawn when standard error is a terminal.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case csv, jsonl
    }

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The entity.")
    var entity: String

    @Argument(help: ArgumentHelp("A .csv or .jsonl file, or - for standard input.", valueName: "file"))
    var file: String

    @Option(help: "The input format (default: from the file's extension, else its first character).")
    var format: Format?

    @Option(help: ArgumentHelp("Rows per transaction.", valueName: "n"))
    var batchSize: Int = 500

    @Flag(help: "Upsert rows that have an id (insert or update) instead of inserting them.")
    var upsert = false

    func validate() throws {
        if self.batchSize < 1 { throw ValidationError("--batch-size must be at least 1") }
    }

    func run() async throws {
        let address = try self.connection.address()
        let text = try InputFile.read(self.file)
        let format =
            self.format.map { ImportReader.Format(rawValue: $0.rawValue)! }
            ?? ImportReader.Format.detect(path: self.file, text: text)
        let (entityName, batchSize, upsert) = (self.entity, self.batchSize, self.upsert)
        try await ServerConnection.with(address) { connection in
            let (schema, _) = try await connection.schema()
            let entity = try schema.cliEntity(entityName)
            let items = try ImportReader.parse(text, format: format, entity: entity)
            let progress = ProgressBar(label: "importing \(entity.name)", total: items.count)
            var done = 0
            var transactions = 0
            var lastSeq: Int64 = 0
            progress.update(done: 0)
            while done < items.count {
                let chunk = items[done..<min(done + batchSize, items.count)]
                let operations = chunk.map { item in
                    WriteOperation(
                        kind: upsert && item.id != nil ? .upsert : .insert, entity: entity.name, id: item.id,
                        values: item.values)
                }
                do {
                    lastSeq = try await connection.apply(operations).seq
                } catch {
                    progress.finish()
                    let error = ServerConnection.map(error, address: address.address)
                    var located = error
                    if let index = error.clientError?.operationIndex.map({ chunk.startIndex + $0 }),
                        chunk.indices.contains(index)
                    {
                        located = error.within("line \(items[index].line)")
                    }
                    let committed =
                        done == 0
                        ? "nothing was imported"
                        : "the \(done) rows before its transaction were imported (seq \(lastSeq))"
                    throw CLIError(located.status, located.message + "; " + committed, cause: located.cause)
                }
                done += chunk.count
                transactions += 1
                progress.update(done: done)
            }
            progress.finish()
            let rows = items.count == 1 ? "row" : "rows"
            let seqText = transactions == 0 ? "" : " (last seq \(lastSeq))"
            Terminal.printLine(
                "imported \(items.count) \(rows) into \(entity.name) in \(transactions) "
                    + "\(transactions == 1 ? "transaction" : "transactions")\(seqText)")
        }
    }
}
