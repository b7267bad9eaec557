// MARK: - Verifier: every report from every child, checked as it arrives

internal import Foundation
internal import MeridianCore
internal import MeridianStore

/// Where a line came from: a process role and its index, plus the incarnation (restarts count up).
public struct Origin: Hashable, Sendable, CustomStringConvertible {
    public enum Role: String, Sendable { case server, client, writer, sqlite }
    public var role: Role
    public var index: Int
    public var incarnation: Int

    public var description: String { "\(self.role) \(self.index) (incarnation \(self.incarnation))" }
}

/// Checks each report against the oracle and keeps the run's counts:
///
/// - a controller's state at `seq` equals its request evaluated on the store at `seq` (count and digest);
/// - a map's annotations equal the rows inside its region (the one in force or the one it is moving to) with a
///   valid coordinate;
/// - per client incarnation and controller, `seq` never decreases, and no reported seq lies beyond the store's log;
/// - no state is reported at a seq inside a commit (checked against the bulk transactions writers confirm: a bulk
///   of n rows confirmed at seq C covers seqs C-n+1 … C-1, which are never commit boundaries);
/// - every writer transaction ends confirmed or reverted;
/// - children report their own violations (invalid change sets, validation failures they logged), and none exits
///   unless the checker killed it.
actor Verifier {
    private var oracle: Oracle
    private var lastSeq: [String: Int64] = [:]
    private var firstSnapshotSeen: Set<String> = []
    private var reportedSeqs: [Int64: String] = [:]
    private var bulkRanges: [(low: Int64, high: Int64, what: String)] = []
    private(set) var violations: [String] = []
    /// When each client incarnation (re)connected or reported a snapshot change, as the checker read it.
    private var resyncMarks: [Origin: [ContinuousClock.Instant]] = [:]
    /// When each wrong state was read, by client incarnation.
    private var stateViolations: [(origin: Origin, at: ContinuousClock.Instant, index: Int)] = []
    /// How close (either way, in the checker's reading order) to a reconnection or snapshot of the same client a
    /// wrong state counts as inside the resynchronisation window.
    static let resyncWindowMs = 10_000

    /// The wrong states read within ``resyncWindowMs`` of a reconnection or snapshot of the same client incarnation.
    var resyncViolations: Int { self.resyncViolationIndices.count }

    private var resyncViolationIndices: Set<Int> {
        let window = Duration.milliseconds(Self.resyncWindowMs)
        return Set(
            self.stateViolations.filter { violation in
                (self.resyncMarks[violation.origin] ?? []).contains { mark in
                    mark <= violation.at ? violation.at - mark <= window : mark - violation.at <= window
                }
            }.map(\.index))
    }

    /// Every violation, those inside a resynchronisation window marked `(resync)`.
    var annotatedViolations: [String] {
        let inWindow = self.resyncViolationIndices
        return self.violations.indices.map {
            inWindow.contains($0) ? "(resync) " + self.violations[$0] : self.violations[$0]
        }
    }
    private(set) var statesChecked = 0
    private(set) var mapStatesChecked = 0
    private(set) var resnapshots = 0
    private(set) var linesHandled = 0
    private(set) var connects = 0
    private(set) var transactions: [String: Int] = [:]
    /// The first message seen for each revert code.
    private(set) var revertReasons: [String: String] = [:]
    private(set) var writersReady: Set<Int> = []
    private(set) var clientsReady: Set<Int> = []
    /// Per client, the highest seq reported by its latest incarnation's `all-by-id` controller.
    private(set) var clientSeq: [Int: (incarnation: Int, seq: Int64)] = [:]
    private let verbose: Bool
    /// Under `--auth`: each client sees what its principal's read rule lets it (``Workload/readerPrincipal(client:)``).
    private let auth: Bool
    private let started = ContinuousClock.now

    init(oracle: Oracle, verbose: Bool, auth: Bool = false) {
        self.oracle = oracle
        self.verbose = verbose
        self.auth = auth
    }

    /// Whose view a report of `origin` shows: its principal's under `--auth`, else the whole store.
    private func reader(_ origin: Origin) -> Principal? {
        self.auth && origin.role == .client ? Workload.readerPrincipal(client: origin.index) : nil
    }

    var storeSeq: Int64 { self.oracle.seq }
    var changesReplayed: Int { self.oracle.changeCount }

    func violation(_ message: String) {
        self.violations.append(
            "[\(String(format: "%.1f", Double((ContinuousClock.now - self.started).components.seconds)))s] \(message)")
        if self.violations.count <= 20 {
            FileHandle.standardError.write(Data("meridian-check: VIOLATION: \(message)\n".utf8))
        } else if self.violations.count == 21 {
            FileHandle.standardError.write(Data("meridian-check: (further violations are counted, not printed)\n".utf8))
        }
    }

    /// Brings the oracle up to the store's latest commit.
    func catchUp() async {
        do {
            while true {
                let batch = try await self.oracle.fetchNext()
                self.oracle.apply(batch)
                if !batch.hasMore { return }
            }
        } catch {
            if Task.isCancelled { return }  // the run is ending
            self.violation("the oracle cannot read the store's change log: \(error)")
        }
    }

    /// Handles one stdout line of a child.
    func handle(line: String, from origin: Origin) async {
        self.linesHandled += 1
        guard let report = Report.parse(line[...]) else {
            self.violation("\(origin) printed a line that is not a report: \(line.prefix(200))")
            return
        }
        switch report.kind {
        case "ready":
            if origin.role == .writer { self.writersReady.insert(origin.index) }
            if origin.role == .client { self.clientsReady.insert(origin.index) }
        case "connected":
            self.connects += 1
            self.resyncMarks[origin, default: []].append(.now)
        case "violation":
            // A controller's own report (a change set that does not apply, a list that differs from the controller)
            // is a wrong state too, classified like the others.
            if report.controller != nil { self.countResync(report, from: origin) }
            self.violation("\(origin): \(report.message ?? "(no message)")")
        case "state":
            await self.checkState(report, from: origin)
        case "map":
            await self.checkMap(report, from: origin)
        case "txn":
            self.recordTransaction(report, from: origin)
        case "done":
            break  // seen as it arrives (`FinishedWriters`)
        default:
            self.violation("\(origin) printed an unknown report kind '\(report.kind)'")
        }
    }

    // MARK: - States

    private func checkSeq(_ seq: Int64, key: String, from origin: Origin, what: String) async -> Bool {
        if let last = self.lastSeq[key], seq < last {
            self.violation("\(origin): \(what) went back from seq \(last) to seq \(seq)")
        }
        self.lastSeq[key] = seq
        if seq > self.oracle.seq { await self.catchUp() }
        guard seq <= self.oracle.seq else {
            self.violation("\(origin): \(what) reports seq \(seq), beyond the store's latest seq \(self.oracle.seq)")
            return false
        }
        if let range = self.bulkRanges.first(where: { $0.low <= seq && seq <= $0.high }) {
            self.violation("\(origin): \(what) shows seq \(seq), inside the commit of \(range.what)")
        }
        self.reportedSeqs[seq] = "\(origin): \(what)"
        return true
    }

    private func checkState(_ report: Report, from origin: Origin) async {
        guard let name = report.controller, let seq = report.seq, let count = report.count, let digest = report.digest
        else {
            self.violation("\(origin) sent an incomplete state report: \(report.line)")
            return
        }
        let key = "\(origin)/\(name)"
        guard await self.checkSeq(seq, key: key, from: origin, what: "controller '\(name)'") else { return }
        if report.cause == "snapshot" {
            self.resyncMarks[origin, default: []].append(.now)
            if self.firstSnapshotSeen.contains(key) {
                self.resnapshots += 1
            } else {
                self.firstSnapshotSeen.insert(key)
            }
        }
        if origin.role == .client, name == Workload.controllers[0].name {
            self.clientSeq[origin.index] = (origin.incarnation, seq)
        }
        do {
            let expected = try self.oracle.expected(controller: name, at: seq, reader: self.reader(origin))
            self.statesChecked += 1
            if expected.count != count || expected.digest != digest {
                self.countResync(report, from: origin)
                self.violation(
                    "\(origin): controller '\(name)' after a \(report.cause ?? "?") change\(Self.resyncNote(report)) shows \(count) rows "
                        + "(digest \(digest)) at seq \(seq); the store at seq \(seq) gives \(expected.count) rows "
                        + "(digest \(expected.digest))")
            } else if self.verbose {
                FileHandle.standardError.write(Data("ok \(origin) \(name) seq \(seq) rows \(count)\n".utf8))
            }
        } catch {
            self.violation("\(origin): cannot evaluate controller '\(name)': \(error)")
        }
    }

    private func checkMap(_ report: Report, from origin: Origin) async {
        guard let seq = report.seq, let count = report.count, let digest = report.digest,
            let reported = report.regions, !reported.isEmpty, reported.allSatisfy({ $0.count == 4 })
        else {
            self.violation("\(origin) sent an incomplete map report: \(report.line)")
            return
        }
        guard await self.checkSeq(seq, key: "\(origin)/map", from: origin, what: "the map") else { return }
        if report.cause == "snapshot" { self.resyncMarks[origin, default: []].append(.now) }
        var regions: [[Double]] = reported
        if report.cause == "replaced", regions.count > 1 {
            // A region moved while offline shows at once the cached rows inside the new region, the rest arriving on
            // reconnection: the rows inside both the old region and the new one.
            for i in 1..<regions.count {
                let (old, new) = (regions[i - 1], regions[i])
                let overlap: [Double] = [
                    Swift.max(old[0], new[0]), Swift.max(old[1], new[1]), Swift.min(old[2], new[2]),
                    Swift.min(old[3], new[3]),
                ]
                regions.append(overlap)
            }
        }
        do {
            var expectations: [(count: Int, digest: String)] = []
            for region in regions {
                let expected = try self.oracle.expectedMap(region: region, at: seq, reader: self.reader(origin))
                expectations.append(expected)
            }
            self.mapStatesChecked += 1
            if !expectations.contains(where: { $0.count == count && $0.digest == digest }) {
                self.countResync(report, from: origin)
                let described = zip(regions, expectations).map { "\($0.0) → \($0.1.count) annotations" }
                self.violation(
                    "\(origin): the map after a \(report.cause ?? "?") update\(Self.resyncNote(report)) shows \(count) annotations "
                        + "(digest \(digest)) at seq \(seq); the store at seq \(seq) gives "
                        + described.joined(separator: " or "))
            }
        } catch {
            self.violation("\(origin): cannot evaluate the map: \(error)")
        }
    }

    private static func resyncNote(_ report: Report) -> String {
        report.sinceResync.map { " (\($0) ms after a reconnection or snapshot)" } ?? ""
    }

    private func countResync(_ report: Report, from origin: Origin) {
        self.stateViolations.append((origin, .now, self.violations.count))
    }

    // MARK: - Transactions

    private func recordTransaction(_ report: Report, from origin: Origin) {
        let outcome = report.outcome ?? "?"
        self.transactions[outcome == "reverted" ? "reverted \(report.code ?? "?")" : outcome, default: 0] += 1
        if outcome == "reverted", let code = report.code, self.revertReasons[code] == nil {
            self.revertReasons[code] = report.message ?? ""
        }
        guard outcome == "confirmed" || outcome == "reverted" else {
            self.violation("\(origin): a \(report.operation ?? "?") transaction ended \(outcome)")
            return
        }
        // A confirmed bulk of n single-change operations committed at C spans at least C-n+1 … C: the seqs before C
        // in that span are inside the commit.
        if outcome == "confirmed", let seq = report.seq, let ops = report.ops, ops > 1,
            report.operation?.hasPrefix("bulk-") == true
        {
            let range = (
                low: seq - Int64(ops) + 1, high: seq - 1, what: "\(origin)'s \(report.operation!) at seq \(seq)"
            )
            self.bulkRanges.append(range)
            for s in range.low...range.high {
                if let who = self.reportedSeqs[s] {
                    self.violation("\(who) showed seq \(s), inside the commit of \(range.what)")
                }
            }
        }
    }

    /// The number of writer transactions that ended, whatever their outcome.
    var transactionCount: Int { self.transactions.values.reduce(0, +) }
}
