// MARK: - Running the campaigns

internal import Foundation
internal import GRPCCore
internal import Logging
internal import MeridianCore
internal import MeridianProto
internal import MeridianServer
internal import MeridianStore
internal import MeridianTestSupport

/// What to fuzz, for how long, and against which server.
public struct FuzzOptions: Sendable {
    /// The seed every input derives from; the same seed and budget give the same inputs.
    public var seed: UInt64
    /// The campaigns to run, in order.
    public var campaigns: [FuzzCampaign] = FuzzCampaign.allCases
    /// How much each campaign may do.
    public var budget: FuzzBudget
    /// `HOST:PORT` of a running server for the wire and apply campaigns; nil starts an in-process server on
    /// `127.0.0.1` with ``FuzzSchema`` and an in-memory store. A given server receives junk writes: use a scratch one.
    public var server: String?
    /// The `meridian` binary the apply campaign runs on a sample of its inputs; nil skips those runs.
    public var meridianExecutable: String?
    /// Every how many apply inputs one also goes through the binary.
    public var binaryEvery = 50

    /// Creates options.
    public init(seed: UInt64, budget: FuzzBudget, server: String? = nil, meridianExecutable: String? = nil) {
        self.seed = seed
        self.budget = budget
        self.server = server
        self.meridianExecutable = meridianExecutable
    }
}

/// Runs fuzz campaigns and reports what they found.
///
/// ```swift
/// let report = try await FuzzCampaigns.run(seed: 42, duration: .seconds(60))
/// print(report)  // one line per campaign, then failures and the seed to replay them
/// ```
public enum FuzzCampaigns {
    /// Runs every campaign for `duration` in all (split evenly between them) against `server`, or against an
    /// in-process server when `server` is nil.
    ///
    /// - Parameters:
    ///   - seed: The seed to derive every input from.
    ///   - duration: The total time to spend.
    ///   - server: `HOST:PORT` of a running scratch server, or nil.
    /// - Returns: The report; `report.failures` is empty when every promise held.
    /// - Throws: ``FuzzSetupError`` when the server cannot be reached or started.
    public static func run(seed: UInt64, duration: Duration, server: String? = nil) async throws -> FuzzReport {
        var options = FuzzOptions(seed: seed, budget: FuzzBudget(), server: server)
        options.budget = FuzzBudget(deadline: ContinuousClock.now + duration)
        return try await Self.run(options, sharingDeadline: true)
    }

    /// Runs the campaigns of `options`.
    ///
    /// - Parameters:
    ///   - options: What to run.
    ///   - sharingDeadline: When true, a budget's deadline is the end of the whole run, split evenly between the
    ///     campaigns; when false, each campaign gets the budget as it is.
    ///   - progress: Called with each campaign's report as it finishes.
    public static func run(
        _ options: FuzzOptions, sharingDeadline: Bool = false,
        progress: @Sendable (CampaignReport) -> Void = { _ in }
    ) async throws -> FuzzReport {
        let needsServer =
            options.campaigns.contains(.wire)
            || (options.campaigns.contains(.apply) && options.meridianExecutable != nil)
        return try await Self.withServer(options.server, needed: needsServer) { host, port in
            try await Self.run(options, host: host, port: port, sharingDeadline: sharingDeadline, progress)
        }
    }

    /// Runs `body` with the address of `server`, or of an in-process server started for it when `server` is nil and
    /// one is `needed` (otherwise with an empty host and port 0).
    static func withServer<Result: Sendable>(
        _ server: String?, needed: Bool, _ body: (String, Int) async throws -> Result
    ) async throws -> Result {
        if let server {
            let (host, port) = try Self.address(server)
            return try await body(host, port)
        }
        guard needed else { return try await body("", 0) }
        let store: Store
        do {
            // Small bounds, so that the inputs reach them (LIMIT_EXCEEDED is one of the answers judged).
            var storeConfiguration = Store.Configuration()
            storeConfiguration.maxRowBytes = 8 << 10
            storeConfiguration.readTimeout = .seconds(5)
            store = try Store.inMemory(schema: FuzzSchema.schema, configuration: storeConfiguration)
        } catch {
            throw FuzzSetupError("cannot create the in-process server's store: \(error)")
        }
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.maxRequestBytes = Self.inProcessRequestLimit
        configuration.heartbeatInterval = .seconds(1)
        configuration.maxInValues = 64
        configuration.maxIDBytes = 256
        configuration.maxOperationsPerTransaction = 200
        configuration.clientQueueBytes = 4 << 20
        return try await withTestServer(store: store, configuration: configuration) { _, port in
            try await body("127.0.0.1", port)
        }
    }

    /// The in-process server's request size limit: small, so that oversized inputs stay cheap, yet large enough for
    /// requests that stress the store (a 1,000-comparison predicate is 15 KB).
    static let inProcessRequestLimit = 256 << 10

    private static func run(
        _ options: FuzzOptions, host: String, port: Int, sharingDeadline: Bool,
        _ progress: @Sendable (CampaignReport) -> Void
    ) async throws -> FuzzReport {
        var reports: [CampaignReport] = []
        let start = ContinuousClock.now
        let campaigns = options.campaigns
        var schema = FuzzSchema.schema
        if options.server != nil, campaigns.contains(.apply) {
            schema = try await Self.servedSchema(host: host, port: port)
        }
        for (position, campaign) in campaigns.enumerated() {
            var budget = options.budget
            if sharingDeadline, let deadline = options.budget.deadline {
                let share = (deadline - start) / campaigns.count
                budget.deadline = start + share * (position + 1)
            }
            let report: CampaignReport
            switch campaign {
            case .wire:
                report = try await WireCampaign(host: host, port: port, seed: options.seed).run(budget: budget)
            case .predicate:
                report = await PredicateCampaign(seed: options.seed, schema: FuzzSchema.schema).run(budget: budget)
            case .schema:
                report = await SchemaCampaign(seed: options.seed).run(budget: budget)
            case .apply:
                var apply = ApplyCampaign(seed: options.seed, schema: schema)
                if let executable = options.meridianExecutable {
                    apply.binary = (executable, "\(host):\(port)")
                }
                apply.binaryEvery = max(1, options.binaryEvery)
                report = await apply.run(budget: budget)
            case .token:
                report = try await TokenCampaign(seed: options.seed).run(budget: budget)
            }
            progress(report)
            reports.append(report)
        }
        return FuzzReport(seed: options.seed, campaigns: reports)
    }

    /// The schema a running server serves.
    private static func servedSchema(host: String, port: Int) async throws -> Schema {
        do {
            return try await withFuzzClient(host: host, port: port) { client in
                try Schema(
                    try await Meridian_V1_Meridian.Client(wrapping: client).getSchema(Meridian_V1_GetSchemaRequest())
                        .schema)
            }
        } catch {
            throw FuzzSetupError("cannot read the schema of \(host):\(port): \(error)")
        }
    }

    /// Splits `HOST:PORT` (`[::1]:PORT` for IPv6).
    static func address(_ text: String) throws -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (1...65_535).contains(port)
        else {
            throw FuzzSetupError("'\(text)' is not HOST:PORT")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw FuzzSetupError("'\(text)' has no host") }
        return (host, port)
    }
}
