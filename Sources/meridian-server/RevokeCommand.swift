// meridian-server revoke: refuse a subject's credentials, or one token's, on the server serving a store file.

import ArgumentParser
import Foundation
import MeridianStore

struct RevokeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "meridian-server revoke",
        abstract: "Revoke every credential of a subject, or one token (or API key) by its id.",
        discussion: """
            Records the revocation in the store file. The server serving it reads revocations about twice a second: \
            within a second, the identity's calls are refused (UNAUTHENTICATED) and its open Sync streams end with \
            a Goodbye. A revocation stays in force (tokens of the subject issued later are refused too). Prints \
            `revoked SUBJECT` or `revoked token ID`; exit 0, or 2 for bad arguments or a missing store file.
            """)

    @Option(help: ArgumentHelp("The store file the server serves.", valueName: "path"))
    var db: String

    @Option(help: ArgumentHelp("The subject (sub) whose every credential is refused.", valueName: "id"))
    var sub: String?

    @Option(help: ArgumentHelp("One token's id (jti), or an API key's id.", valueName: "id"))
    var tokenId: String?

    func validate() throws {
        guard (self.sub ?? "").isEmpty == false || (self.tokenId ?? "").isEmpty == false else {
            throw ValidationError("give --sub ID or --token-id ID")
        }
    }

    func run() throws {
        do {
            try Store.revoke(path: self.db, subject: self.sub, tokenID: self.tokenId)
        } catch let error as StoreError {
            FileHandle.standardError.write(Data("meridian-server revoke: \(error.message)\n".utf8))
            throw ExitCode(2)
        }
        if let sub = self.sub { print("revoked \(sub)") }
        if let tokenId = self.tokenId { print("revoked token \(tokenId)") }
    }
}
