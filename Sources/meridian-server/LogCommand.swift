// meridian-server log: the change log with the subject that wrote each change.

import ArgumentParser
import Foundation
import MeridianCore
import MeridianStore

struct LogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "meridian-server log",
        abstract: "Print the change log of a store file with who wrote each change.",
        discussion: """
            Reads the store file (read-only; it may be served meanwhile). One line per logged change, oldest first: \
            `SEQ TIME AUTHOR KIND ENTITY ID vVERSION`, where AUTHOR is the authenticated subject whose transaction \
            wrote it, or `-` for a write without one (a server without identities, another process's write). \
            With --format jsonl, one JSON object per change: {"seq", "committedAt", "author" (null when none), \
            "kind", "entity", "id", "version"}. Only what the log still holds is shown (see --log-retention). Exit 0, \
            or 2 for bad arguments or a missing or unreadable store file.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, jsonl
    }

    @Option(help: ArgumentHelp("The store file.", valueName: "path"))
    var db: String

    @Option(help: ArgumentHelp("Only changes after this seq.", valueName: "seq"))
    var after: Int64 = 0

    @Option(help: ArgumentHelp("Only the changes this subject wrote.", valueName: "id"))
    var sub: String?

    @Option(help: ArgumentHelp("At most this many changes.", valueName: "n"))
    var limit: Int?

    @Option(help: "Output format: text or jsonl.")
    var format: Format = .text

    func validate() throws {
        if self.after < 0 { throw ValidationError("--after must be 0 or more (got \(self.after))") }
        if let limit = self.limit, limit < 1 { throw ValidationError("--limit must be at least 1 (got \(limit))") }
    }

    func run() throws {
        let changes: [AuthoredChange]
        do {
            changes = try Store.authoredChanges(path: self.db, after: self.after, author: self.sub, limit: self.limit)
        } catch let error as StoreError {
            FileHandle.standardError.write(Data("meridian-server log: \(error.message)\n".utf8))
            throw ExitCode(2)
        }
        var output = ""
        for change in changes {
            switch self.format {
            case .text:
                output +=
                    "\(change.seq) \(change.committedAt.iso8601) \(change.author ?? "-") \(change.kind.name) "
                    + "\(change.entity) \(change.id) v\(change.version)\n"
            case .jsonl:
                let author = change.author.map(JSONText.quoted) ?? "null"
                output +=
                    "{\"seq\":\(change.seq),\"committedAt\":\"\(change.committedAt.iso8601)\",\"author\":\(author),"
                    + "\"kind\":\"\(change.kind.name)\",\"entity\":\(JSONText.quoted(change.entity)),"
                    + "\"id\":\(JSONText.quoted(change.id)),\"version\":\(change.version)}\n"
            }
            if output.utf8.count > 1 << 16 {
                FileHandle.standardOutput.write(Data(output.utf8))
                output = ""
            }
        }
        FileHandle.standardOutput.write(Data(output.utf8))
    }
}

extension Change.Kind {
    var name: String {
        switch self {
        case .insert: "insert"
        case .update: "update"
        case .delete: "delete"
        }
    }
}
