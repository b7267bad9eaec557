// meridian-server backup: a consistent copy of a store file, while a server keeps serving it.

import ArgumentParser
import Foundation
import MeridianStore

struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "meridian-server backup",
        abstract: "Copy a store file, consistent at one commit, while a server keeps serving and writing it.",
        discussion: """
            SQLite's online backup, from a read-only connection in one read transaction: writers are not held up. \
            The copy is checked (quick_check) and the command prints `backup of PATH at seq N: FILE` on stdout. \
            Exit 0 when the copy is written; 2 for bad arguments, a missing store file, an existing FILE (a backup \
            never overwrites), or a copy that cannot be written or does not check out.

            To restore: stop the server, check the copy (meridian-server --db FILE --schema S --check-integrity), \
            move it over the store file and remove the store's -wal and -shm files, then start the server. Clients \
            that had applied commits after the copy's seq are re-snapshotted when they reconnect.
            """)

    @Option(help: ArgumentHelp("The store file to copy.", valueName: "path"))
    var db: String

    @Option(help: ArgumentHelp("Where the copy goes (must not exist).", valueName: "file"))
    var to: String

    func run() throws {
        do {
            let seq = try Store.backup(path: self.db, to: self.to)
            print("backup of \(self.db) at seq \(seq): \(self.to)")
        } catch let error as StoreError {
            FileHandle.standardError.write(Data("meridian-server backup: \(error.message)\n".utf8))
            throw ExitCode(2)
        }
    }
}
