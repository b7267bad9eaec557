// MARK: - What a fuzz run found

/// A fuzz campaign: what it feeds and to what.
public enum FuzzCampaign: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Random and mutated bytes as gRPC messages to a running server, over HTTP/2.
    case wire
    /// Random and mutated predicate text to the parser and binder.
    case predicate
    /// Random and mutated schema YAML and JSON to the schema loader.
    case schema
    /// Random and mutated JSON lines to `meridian apply`'s parser and, for a sample, to the real binary.
    case apply
    /// Mutated tokens in every RPC's `authorization` metadata, to an in-process server that requires them.
    case token

    public var description: String { self.rawValue }
}

/// One input that broke a promise: a crash exit, a hang, an unclear or internal error, an error without a valid
/// location, or a server that stopped serving its other clients.
public struct FuzzFailure: Sendable, CustomStringConvertible {
    /// The campaign that produced the input.
    public var campaign: FuzzCampaign
    /// The campaign's seed; running the campaign again with it produces the same inputs in the same order.
    public var seed: UInt64
    /// The input's index in the campaign (0-based).
    public var index: Int
    /// What went wrong, complete on its own.
    public var message: String
    /// The input in the corpus file format of its campaign (docs/fuzzing.md), ready to be saved as a regression
    /// test.
    public var corpusText: String

    /// Creates a failure.
    public init(campaign: FuzzCampaign, seed: UInt64, index: Int, message: String, corpusText: String) {
        self.campaign = campaign
        self.seed = seed
        self.index = index
        self.message = message
        self.corpusText = corpusText
    }

    /// One line naming the input and what went wrong (a message over 1,000 characters is cut; ``message`` has it
    /// all).
    public var description: String {
        let message = self.message.count > 1_000 ? String(self.message.prefix(1_000)) + "… (cut)" : self.message
        return "\(self.campaign) input \(self.index) (seed \(self.seed)): \(message)"
    }
}

/// What one campaign tried and what came of it.
public struct CampaignReport: Sendable, CustomStringConvertible {
    /// The campaign.
    public var campaign: FuzzCampaign
    /// Its seed.
    public var seed: UInt64
    /// How many inputs it tried.
    public var inputs: Int = 0
    /// How many inputs ended in each kind of outcome (`answered`, `rejected INVALID_ARGUMENT`, `syntax`, …).
    public var outcomes: [String: Int] = [:]
    /// The inputs that broke a promise.
    public var failures: [FuzzFailure] = []

    /// Creates an empty report.
    public init(campaign: FuzzCampaign, seed: UInt64) {
        self.campaign = campaign
        self.seed = seed
    }

    /// Counts one input and its outcome.
    mutating func record(_ outcome: String) {
        self.inputs += 1
        self.outcomes[outcome, default: 0] += 1
    }

    /// Counts one input that failed.
    mutating func fail(index: Int, _ message: String, input corpusText: String) {
        self.record("FAILURE")
        self.failures.append(
            FuzzFailure(
                campaign: self.campaign, seed: self.seed, index: index, message: message, corpusText: corpusText))
    }

    public var description: String {
        let kinds = self.outcomes.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }
            .map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return "\(self.campaign): \(self.inputs) inputs, \(self.failures.count) failures (\(kinds))"
    }
}

/// What a fuzz run found, campaign by campaign.
public struct FuzzReport: Sendable, CustomStringConvertible {
    /// The run's seed.
    public var seed: UInt64
    /// One report per campaign run, in the order they ran.
    public var campaigns: [CampaignReport]

    /// Creates a report.
    public init(seed: UInt64, campaigns: [CampaignReport]) {
        self.seed = seed
        self.campaigns = campaigns
    }

    /// Inputs tried in all campaigns (the `fuzz inputs` figure of a soak summary).
    public var inputs: Int { self.campaigns.reduce(0) { $0 + $1.inputs } }

    /// Every failure of every campaign.
    public var failures: [FuzzFailure] { self.campaigns.flatMap(\.failures) }

    /// A multi-line summary: one line per campaign, then ``totals``.
    public var description: String {
        (self.campaigns.map(\.description) + [self.totals]).joined(separator: "\n")
    }

    /// The inputs and failures in all, one line per failure, and the seed to replay them.
    public var totals: String {
        var lines = ["fuzz inputs: \(self.inputs), failures: \(self.failures.count)"]
        for failure in self.failures { lines.append("FAILURE " + failure.description) }
        if !self.failures.isEmpty { lines.append("replay with --seed \(self.seed) (or MERIDIAN_SEED=\(self.seed))") }
        return lines.joined(separator: "\n")
    }
}

extension FuzzCampaign {
    /// The file extension of the campaign's corpus files: `wire`, `predicate`, `yaml`, `jsonl`.
    public var corpusExtension: String {
        switch self {
        case .wire: "wire"
        case .predicate: "predicate"
        case .schema: "yaml"
        case .apply: "jsonl"
        case .token: "token"
        }
    }
}
