// MARK: - meridian import

internal import ArgumentParser
internal import MeridianClient
internal import MeridianCore
internal import Synchronization

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

    @Option(
        help: ArgumentHelp(
            "Transactions sent ahead of their answers, so that the server commits several together (1: wait for each).",
            valueName: "n"))
    var inFlight: Int = 8

    func validate() throws {
        if self.batchSize < 1 { throw ValidationError("--batch-size must be at least 1") }
        if self.inFlight < 1 { throw ValidationError("--in-flight must be at least 1") }
    }

    func run() async throws {
        let address = try self.connection.address()
        let text = try InputFile.read(self.file)
        let format =
            self.format.map { ImportReader.Format(rawValue: $0.rawValue)! }
            ?? ImportReader.Format.detect(path: self.file, text: text)
        let (entityName, batchSize, upsert, window) = (self.entity, self.batchSize, self.upsert, self.inFlight)
        try await ServerConnection.with(address) { connection in
            let (schema, _) = try await connection.schema()
            let entity = try schema.cliEntity(entityName)
            let items = try ImportReader.parse(text, format: format, entity: entity)
            let progress = ProgressBar(label: "importing \(entity.name)", total: items.count)
            progress.update(done: 0)
            // Transactions of `batchSize` rows, pipelined over one ApplyStream: the server commits several in one
            // flush while the next ones travel.
            let chunks = stride(from: 0, to: items.count, by: batchSize).map { $0..<min($0 + batchSize, items.count) }
            let transactions = chunks.map { chunk in
                items[chunk].map { item in
                    var operation = item.insert
                    operation.kind = upsert && item.id != nil ? .upsert : .insert
                    operation.entity = entity.name
                    return operation
                }
            }
            let done = Mutex(0)
            let answers: [Result<CommitResult, ClientError>]
            do {
                // Answered with each commit's seq alone (the command prints counts and seqs, not rows).
                answers = try await connection.applyPipelined(transactions, window: window, seqOnly: true) {
                    index, answer in
                    guard case .success = answer else { return }
                    progress.update(
                        done: done.withLock { done in
                            done += chunks[index].count
                            return done
                        })
                }
            } catch {
                progress.finish()
                let error = ServerConnection.map(error, address: address.address)
                let imported = done.withLock { $0 }
                throw CLIError(
                    error.status,
                    error.message
                        + "; \(Self.rows(imported, were: true)) imported before the connection failed (later ones may "
                        + "have been too: check with meridian query)", cause: error.cause)
            }
            progress.finish()
            if let failed = answers.firstIndex(where: { if case .failure = $0 { true } else { false } }),
                case .failure(let rejection) = answers[failed]
            {
                throw Self.rejection(
                    rejection, at: failed, answers: answers, chunks: chunks, items: items, address: address.address)
            }
            let lastSeq = answers.last.flatMap { try? $0.get().seq } ?? 0
            let transactionCount = answers.count
            let seqText = transactionCount == 0 ? "" : " (last seq \(lastSeq))"
            Terminal.printLine(
                "imported \(Self.rows(items.count)) into \(entity.name) in \(transactionCount) "
                    + "\(transactionCount == 1 ? "transaction" : "transactions")\(seqText)")
        }
    }

    /// "1 row", "2 rows" (with `were`: "1 row was", "2 rows were").
    static func rows(_ count: Int, were: Bool = false) -> String {
        let noun = count == 1 ? "\(count) row" : "\(count) rows"
        return were ? noun + (count == 1 ? " was" : " were") : noun
    }

    /// The error of a rejected transaction: the row's line, and exactly what was imported — the transactions before
    /// it, and any sent after it that committed before the rejection was known.
    static func rejection(
        _ error: ClientError, at failed: Int, answers: [Result<CommitResult, ClientError>], chunks: [Range<Int>],
        items: [ImportReader.Item], address: ServerAddress
    ) -> CLIError {
        let mapped = ServerConnection.map(error, address: address)
        var located = mapped
        if let index = error.operationIndex.map({ chunks[failed].lowerBound + $0 }), chunks[failed].contains(index) {
            located = mapped.within("line \(items[index].line)")
        }
        let before = chunks[..<failed].reduce(0) { $0 + $1.count }
        var parts: [String] = []
        if before > 0 {
            let seq = answers[..<failed].last.flatMap { try? $0.get().seq } ?? 0
            parts.append(
                "the \(Self.rows(before)) before its transaction \(before == 1 ? "was" : "were") imported (seq \(seq))")
        }
        let later = answers.indices.dropFirst(failed + 1).filter { (try? answers[$0].get()) != nil }
        if !later.isEmpty {
            let rows = later.reduce(0) { $0 + chunks[$1].count }
            let lines = later.map { index in
                let (first, last) = (items[chunks[index].lowerBound].line, items[chunks[index].upperBound - 1].line)
                return first == last ? "\(first)" : "\(first)–\(last)"
            }
            parts.append(
                "the \(Self.rows(rows)) of \(lines.count == 1 && later.allSatisfy { chunks[$0].count == 1 } ? "line" : "lines") "
                    + "\(lines.joined(separator: ", ")), sent before the rejection was known, "
                    + "\(rows == 1 ? "was" : "were") imported")
        }
        let message = located.message + "; " + (parts.isEmpty ? "nothing was imported" : parts.joined(separator: "; "))
        return CLIError(located.status, message, cause: located.cause)
    }
}
