// MARK: - Replaying the regression corpus

internal import Foundation
internal import MeridianCore
internal import MeridianProto

/// The regression corpus: inputs that once broke a promise (and a few hand-picked tricky ones), one file each, in a
/// folder per campaign — `wire/*.wire`, `predicate/*.predicate`, `schema/*.yaml`, `apply/*.jsonl`, `token/*.token`
/// (formats in
/// docs/fuzzing.md). Every file is replayed and judged exactly as the campaign judges a fresh input.
public enum FuzzCorpus {
    /// Replays every corpus file under `folder`.
    ///
    /// - Parameters:
    ///   - folder: The corpus root, holding one sub-folder per campaign.
    ///   - server: `HOST:PORT` of a running scratch server for the wire and apply files, or nil for an in-process one.
    ///   - meridianExecutable: The `meridian` binary to also run every apply file through, or nil.
    /// - Returns: One report per campaign with files; a failure's index is the file's position in its folder, and
    ///   its message starts with the file name.
    /// - Throws: ``CorpusError`` for a file that cannot be read, ``FuzzSetupError`` when no server can be reached.
    public static func replay(
        folder: String, server: String? = nil, meridianExecutable: String? = nil
    ) async throws -> FuzzReport {
        let files = try FuzzCampaign.allCases.map { campaign in (campaign, try Self.files(folder, campaign)) }
        let needsServer = files.contains { $0.0 == .wire && !$0.1.isEmpty } || meridianExecutable != nil
        return try await FuzzCampaigns.withServer(server, needed: needsServer) { host, port in
            var reports: [CampaignReport] = []
            for (campaign, paths) in files where !paths.isEmpty {
                var report = CampaignReport(campaign: campaign, seed: 0)
                for (index, path) in paths.enumerated() {
                    let name = URL(fileURLWithPath: path).lastPathComponent
                    guard let data = FileManager.default.contents(atPath: path) else {
                        throw CorpusError("cannot read \(path)")
                    }
                    let text = String(decoding: data, as: UTF8.self)
                    let outcome: Result<String, TextFailure>
                    switch campaign {
                    case .wire:
                        outcome = try await Self.replayWire(text, name: name, host: host, port: port)
                    case .predicate:
                        let (entityName, predicate) = try PredicateCampaign.parseCorpus(text)
                        guard let entity = FuzzSchema.schema.entity(named: entityName) else {
                            throw CorpusError("\(name): the fuzz schema has no entity '\(entityName)'")
                        }
                        outcome = PredicateCampaign.check(predicate, entity: entity)
                    case .schema:
                        outcome = SchemaCampaign.check(text)
                    case .token:
                        outcome = try await Self.replayToken(text, name: name)
                    case .apply:
                        let parsed = ApplyCampaign.parse(text, schema: FuzzSchema.schema)
                        if case .success = parsed, let meridianExecutable {
                            outcome = await ApplyCampaign.runBinary(
                                text, binary: (meridianExecutable, "\(host):\(port)"), parsed: parsed,
                                timeout: .seconds(30))
                        } else {
                            outcome = parsed
                        }
                    }
                    switch outcome {
                    case .success(let kind): report.record(kind)
                    case .failure(let failure): report.fail(index: index, "\(name): \(failure.message)", input: text)
                    }
                }
                reports.append(report)
            }
            if needsServer, files.contains(where: { $0.0 == .wire && !$0.1.isEmpty }) {
                // The server must still serve another client after the whole wire corpus.
                if let problem = try await Self.witnessProblem(host: host, port: port),
                    let index = reports.firstIndex(where: { $0.campaign == .wire })
                {
                    reports[index].fail(
                        index: reports[index].inputs,
                        "after the corpus the server no longer serves another client: \(problem)",
                        input: "")
                }
            }
            return FuzzReport(seed: 0, campaigns: reports)
        }
    }

    /// The corpus files of `campaign` under `folder`, sorted by name.
    static func files(_ folder: String, _ campaign: FuzzCampaign) throws -> [String] {
        let directory = URL(fileURLWithPath: folder).appendingPathComponent(campaign.rawValue).path
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.filter { $0.hasSuffix("." + campaign.corpusExtension) }.sorted().map { directory + "/" + $0 }
    }

    /// A token file: its call must be refused `UNAUTHENTICATED` by a server of the token campaign.
    private static func replayToken(_ text: String, name: String) async throws -> Result<String, TextFailure> {
        let input: TokenInput
        do {
            input = try TokenInput(corpusText: text)
        } catch {
            throw CorpusError("\(name): \(error.message)")
        }
        var outcome: Result<String, TextFailure> = .failure(TextFailure("not run"))
        try await TokenCampaign.withServer { port, keys in
            let valid = try await keys.token(subject: "fuzz", lifetime: .seconds(3600))
            outcome = try await withFuzzClient(host: "127.0.0.1", port: port) { client in
                await TokenCampaign.judge(input, validToken: valid, client: client)
            }
        }
        return outcome
    }

    private static func replayWire(_ text: String, name: String, host: String, port: Int) async throws -> Result<
        String, TextFailure
    > {
        let input: WireInput
        do {
            input = try WireInput(corpusText: text)
        } catch {
            throw CorpusError("\(name): \(error.message)")
        }
        return try await withFuzzClient(host: host, port: port) { client in
            let executor = WireExecutor(
                client: client, timeout: .seconds(30), probeEntity: FuzzSchema.schema.entities[0].name)
            switch await executor.run(input) {
            case .acceptable(let kind): return .success(kind)
            case .failure(let message): return .failure(TextFailure(message))
            }
        }
    }

    private static func witnessProblem(host: String, port: Int) async throws -> String? {
        try await withFuzzClient(host: host, port: port) { client in
            let meridian = Meridian_V1_Meridian.Client(wrapping: client)
            let schema = try Schema(try await meridian.getSchema(Meridian_V1_GetSchemaRequest()).schema)
            guard let entity = schema.entities.first else { return "the served schema has no entity" }
            var problem: String?
            try await Witness.with(meridian, entity: entity, timeout: .seconds(30)) { witness in
                problem = await witness.check(id: "fuzz-witness-corpus-\(UInt32.random(in: 0...UInt32.max))")
            }
            return problem
        }
    }
}
