// meridian-fuzz: parse arguments, run the fuzz campaigns for a duration, print the summary, exit non-zero on a failure.

import ArgumentParser
import Foundation
import Logging
import MeridianCommandLine
import MeridianFuzz

@main
struct MeridianFuzzCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "meridian-fuzz",
        abstract:
            "Fuzz the server's wire protocol, the predicate, schema and apply-script parsers, and meridian apply.",
        discussion: """
            Without --server, starts an in-process server (in-memory store, the fuzz schema) on 127.0.0.1. \
            Prints one line per campaign as it ends, then the summary. Exit status: 0 when every promise held, \
            1 when an input broke one (each failure is printed with the seed that replays it), 2 for bad arguments \
            or a server that cannot be reached.
            """)

    @Option(help: "The seed every input derives from (default: random, printed).")
    var seed: UInt64?

    @Option(
        help: ArgumentHelp("How long to run, in seconds, split evenly between the campaigns.", valueName: "seconds"))
    var duration: Double = 60

    @Option(help: "wire, predicate, schema, apply, token or all.")
    var campaign = "all"

    @Option(
        help: ArgumentHelp(
            "A running scratch server for the wire and apply campaigns (it receives junk writes).",
            valueName: "host:port"))
    var server: String?

    @Option(help: ArgumentHelp("Write each failing input as a corpus file into this folder.", valueName: "path"))
    var saveFailures: String?

    @Option(
        help: ArgumentHelp(
            "Replay a corpus folder (one sub-folder per campaign) instead of generating inputs.", valueName: "path"))
    var replay: String?

    func validate() throws {
        guard self.duration > 0, self.duration.isFinite else { throw ValidationError("--duration must be positive") }
        guard self.campaign == "all" || FuzzCampaign(rawValue: self.campaign) != nil else {
            throw ValidationError("--campaign must be one of wire, predicate, schema, apply, token, all")
        }
    }

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        if let folder = self.replay {
            let report: FuzzReport
            do {
                report = try await FuzzCorpus.replay(
                    folder: folder, server: self.server, meridianExecutable: Self.sibling("meridian"))
            } catch {
                FileHandle.standardError.write(Data("meridian-fuzz: \(error)\n".utf8))
                throw ExitCode(2)
            }
            print(report)
            if !report.failures.isEmpty { throw ExitCode(1) }
            return
        }
        let seed = self.seed ?? UInt64.random(in: 0...UInt64.max)
        print("meridian-fuzz: seed \(seed), \(self.duration) s, campaign \(self.campaign)")
        var options = FuzzOptions(
            seed: seed, budget: FuzzBudget(deadline: ContinuousClock.now + .milliseconds(Int(self.duration * 1_000))),
            server: self.server, meridianExecutable: Self.sibling("meridian"))
        if let campaign = FuzzCampaign(rawValue: self.campaign) { options.campaigns = [campaign] }
        let report: FuzzReport
        do {
            report = try await FuzzCampaigns.run(options, sharingDeadline: true) { campaign in
                print(campaign)
            }
        } catch {
            FileHandle.standardError.write(Data("meridian-fuzz: \(error)\n".utf8))
            throw ExitCode(2)
        }
        print(report.totals)
        if let folder = self.saveFailures { try Self.save(report.failures, in: folder) }
        if !report.failures.isEmpty { throw ExitCode(1) }
    }

    /// Runs the command; usage errors exit with status 2 (not ArgumentParser's 64), like meridian-server and meridian.
    static func main() async {
        await self.runExitingTwoOnUsageErrors()
    }

    /// The built product `name` next to this executable, when there is one.
    static func sibling(_ name: String) -> String? {
        let path = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent(name).path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    /// Writes each failure's input as `<campaign>/seed-<seed>-<index>.<ext>` under `folder`.
    static func save(_ failures: [FuzzFailure], in folder: String) throws {
        for failure in failures where !failure.corpusText.isEmpty {
            let directory = URL(fileURLWithPath: folder).appendingPathComponent(failure.campaign.rawValue)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let file = directory.appendingPathComponent(
                "seed-\(failure.seed)-\(failure.index).\(failure.campaign.corpusExtension)")
            try Data(failure.corpusText.utf8).write(to: file)
            print("saved \(file.path)")
        }
    }
}
