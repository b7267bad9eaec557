// MARK: - The wire campaign

internal import GRPCCore
internal import GRPCNIOTransportHTTP2
internal import MeridianCore
internal import MeridianProto

/// Sends wire inputs to a running server in batches over a fresh HTTP/2 connection per batch; after each batch, a
/// witness client on its own connection (a live `Sync` subscription opened before the first input) must still
/// receive the change of a new write. A witness that stops receiving ends the campaign with a failure.
struct WireCampaign {
    let host: String
    let port: Int
    let seed: UInt64
    /// How long one input may take before it counts as a hang.
    var timeout: Duration = .seconds(10)
    /// Inputs between two witness checks.
    var batchSize = 25

    func run(budget: FuzzBudget) async throws -> CampaignReport {
        var report = CampaignReport(campaign: .wire, seed: self.seed)
        try await withFuzzClient(host: self.host, port: self.port) { witnessClient in
            let meridian = Meridian_V1_Meridian.Client(wrapping: witnessClient)
            let schema = try Schema(try await meridian.getSchema(Meridian_V1_GetSchemaRequest()).schema)
            guard let entity = schema.entities.first else {
                throw FuzzSetupError("the server's schema has no entity to write the witness rows to")
            }
            try await Witness.with(meridian, entity: entity, timeout: self.timeout) { witness in
                let generator = WireGenerator(
                    schema: schema, oversize: witness.maxRequestBytes > 0 ? witness.maxRequestBytes + 1 : 1 << 22)
                var index = 0
                var batch = 0
                while budget.allows(index) {
                    try await withFuzzClient(host: self.host, port: self.port) { client in
                        let executor = WireExecutor(client: client, timeout: self.timeout, probeEntity: entity.name)
                        for _ in 0..<self.batchSize where budget.allows(index) {
                            var random = FuzzRandom(seed: self.seed, campaign: .wire, index: index)
                            let input = generator.input(random: &random)
                            switch await executor.run(input) {
                            case .acceptable(let kind):
                                report.record(kind)
                            case .failure(let message):
                                report.fail(
                                    index: index, message,
                                    input: input.corpusText(comment: "seed \(self.seed) input \(index): \(message)"))
                            }
                            index += 1
                        }
                    }
                    batch += 1
                    if let problem = await witness.check(id: "fuzz-witness-\(self.seed)-\(batch)") {
                        report.fail(
                            index: index - 1,
                            "after input \(index - 1) the server no longer serves another client: \(problem)",
                            input: "")
                        return
                    }
                }
            }
        }
        return report
    }
}

/// How much a campaign may do: a number of inputs, a deadline, or both.
public struct FuzzBudget: Sendable {
    /// At most this many inputs.
    public var inputs: Int?
    /// No new input after this instant.
    public var deadline: ContinuousClock.Instant?

    /// Creates a budget; with neither limit, a campaign runs 1,000 inputs.
    public init(inputs: Int? = nil, deadline: ContinuousClock.Instant? = nil) {
        self.inputs = inputs ?? (deadline == nil ? 1_000 : nil)
        self.deadline = deadline
    }

    /// Whether input `index` may run.
    func allows(_ index: Int) -> Bool {
        if let inputs, index >= inputs { return false }
        if let deadline, ContinuousClock.now >= deadline { return false }
        return true
    }
}

/// The fuzz run could not start: no server, no schema, no `meridian` binary.
public struct FuzzSetupError: Error, Sendable, CustomStringConvertible {
    /// What is missing.
    public var message: String

    init(_ message: String) { self.message = message }

    public var description: String { "fuzz setup: \(self.message)" }
}

/// Runs `body` with a plaintext HTTP/2 client connected to `host:port`.
func withFuzzClient<Result: Sendable>(
    host: String, port: Int, _ body: (GRPCClient<HTTP2ClientTransport.Posix>) async throws -> Result
) async throws -> Result {
    let isIPv4 = host.split(separator: ".").count == 4 && host.allSatisfy { $0.isNumber || $0 == "." }
    let transport = try HTTP2ClientTransport.Posix(
        target: isIPv4 ? .ipv4(address: host, port: port) : .dns(host: host, port: port),
        transportSecurity: .plaintext)
    return try await withGRPCClient(transport: transport) { client in try await body(client) }
}
