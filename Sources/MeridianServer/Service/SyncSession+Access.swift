// MARK: - SyncSession: the stream's identity, its expiry and refresh

internal import Foundation
internal import GRPCCore
internal import Logging
internal import MeridianAuth
internal import MeridianCore
internal import MeridianProto
internal import NIOCore
internal import NIOPosix
internal import Synchronization

/// A `Sync` stream's caller, replaced by each refresh, and the subscriptions' requests as the client sent them, so
/// that a refresh can bind them again under the new rules.
final class StreamAccess: Sendable {
    private struct State {
        var caller: Caller?
        var requests: [String: BoundFetchRequest] = [:]
        /// The subscriptions counted against the principal's quota for this stream.
        var counted = 0
    }

    private let state: Mutex<State>

    init(_ caller: Caller?) {
        self.state = Mutex(State(caller: caller))
    }

    /// The caller now.
    var caller: Caller? { self.state.withLock { $0.caller } }

    /// The request restricted by the caller's read rule; the unrestricted one is kept for refreshes.
    func restrict(_ request: BoundFetchRequest, id: String) -> BoundFetchRequest {
        self.state.withLock { state in
            state.requests[id] = request
            guard let access = state.caller?.access else { return request }
            return request.restricted(by: access)
        }
    }

    /// Forgets an unsubscribed subscription's request, and gives its place in the principal's quota back.
    func forget(_ id: String, quotas: PrincipalQuotas) {
        let subject = self.state.withLock { state -> String? in
            state.requests.removeValue(forKey: id)
            guard state.counted > 0 else { return nil }
            state.counted -= 1
            return state.caller?.identity.principal.subject
        }
        if let subject { quotas.removeSubscriptions(subject, count: 1) }
    }

    /// Counts one more subscription of the stream's principal, or refuses it past the principal's quota.
    func countSubscription(quotas: PrincipalQuotas) throws(DetailError) {
        guard let subject = self.caller?.identity.principal.subject else { return }
        try quotas.addSubscription(subject)
        self.state.withLock { $0.counted += 1 }
    }

    /// Gives back every subscription the stream counted (it ended).
    func releaseSubscriptions(quotas: PrincipalQuotas) {
        let (subject, count) = self.state.withLock { state -> (String?, Int) in
            defer { state.counted = 0 }
            return (state.caller?.identity.principal.subject, state.counted)
        }
        if let subject { quotas.removeSubscriptions(subject, count: count) }
    }

    /// Replaces the caller; returns the subscriptions whose restricted request changed, with the new one.
    func replace(with caller: Caller) -> [(id: String, request: BoundFetchRequest)] {
        self.state.withLock { state in
            let old = state.caller?.access
            state.caller = caller
            guard let new = caller.access, old?.readRules != new.readRules else { return [] }
            return state.requests.compactMap { id, request in
                let before = old.map { request.restricted(by: $0) } ?? request
                let after = request.restricted(by: new)
                return before == after ? nil : (id, after)
            }.sorted { $0.id < $1.id }
        }
    }
}

/// Ends a `Sync` stream when its caller's credential expires without a refresh, or is revoked: a `Goodbye`, then
/// `UNAUTHENTICATED`; nothing queued before is sent after it.
///
/// It looks when the credential expires (a timer on an event loop, set again for a refreshed token's expiry when it
/// fires) and when the revocations read from the store bring a new one (``Revocations/watch(_:)``). Each stream used to
/// look from a task of its own, waking twice a second: a task per authenticated idle stream, and 2,000 wake-ups a
/// second for 1,000 of them.
final class CredentialWatch: Sendable {
    private let session: SyncSession
    private let outbox: ClientOutbox
    private let state = Mutex<(timer: Scheduled<Void>?, registration: Int?, stopped: Bool)>((nil, nil, false))

    init(_ session: SyncSession, outbox: ClientOutbox) {
        self.session = session
        self.outbox = outbox
    }

    /// Looks now, then at the credential's expiry and at each new revocation, until ``stop()``.
    func start() {
        let registration = self.session.service.accessControl.revocations.watch { [self] in self.check() }
        let stopped = self.state.withLock { state in
            state.registration = registration
            return state.stopped
        }
        if stopped { self.session.service.accessControl.revocations.unwatch(registration) }
        self.check()
    }

    /// Stops looking (the stream ended, or was ended here); returns whether this call stopped it (false: already
    /// stopped).
    @discardableResult
    func stop() -> Bool {
        let (first, timer, registration) = self.state.withLock { state in
            defer { (state.stopped, state.timer, state.registration) = (true, nil, nil) }
            return (!state.stopped, state.timer, state.registration)
        }
        timer?.cancel()
        if let registration { self.session.service.accessControl.revocations.unwatch(registration) }
        return first
    }

    /// Ends the stream if the caller may no longer act; otherwise sets the timer for its credential's expiry.
    private func check() {
        guard let caller = self.session.access.caller else { return }
        if let end = self.session.service.accessControl.end(ofOpen: caller.identity) {
            // Ended once, by whichever look (the timer's or a revocation's) stops the watch first.
            if self.stop() { self.end(caller, end) }
            return
        }
        guard let expiresAt = caller.identity.expiresAt else { return }
        // A millisecond past the expiry, so that the look then finds it expired (the clocks differ a little).
        let delay = TimeAmount.milliseconds(Int64(max(0, expiresAt.timeIntervalSinceNow) * 1000) + 1)
        let replaced = self.state.withLock { state -> Scheduled<Void>? in
            guard !state.stopped else { return nil }
            defer {
                state.timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: delay) { [self] in
                    self.check()
                }
            }
            return state.timer
        }
        replaced?.cancel()
    }

    private func end(_ caller: Caller, _ end: AccessControl.CredentialEnd) {
        let expired = end == .expired
        let why = expired ? "expired" : "was revoked"
        let response = Meridian_V1_SyncResponse.goodbye(
            expired
                ? "the stream's token expired; refresh it before it does, or open a new stream"
                : "the stream's credential was revoked")
        self.outbox.fail(
            with: RPCError(
                Meridian_V1_ErrorDetail(
                    .unauthenticated,
                    expired ? "the stream's token expired (send RefreshToken)" : "the credential was revoked")),
            last: response)
        self.session.service.accessControl.audit?.record(
            expired ? "stream_expired" : "stream_revoked",
            ["sub": caller.identity.principal.subject, "peer": self.session.peer])
        self.session.service.logger.info(
            "sync stream ended: its credential \(why)",
            metadata: ["meridian.sub": "\(caller.identity.principal.subject)"])
    }
}

extension SyncSession {
    /// A new token on the open stream: same subject, else `PERMISSION_DENIED`; the subscriptions whose bound read rule
    /// changed are re-diffed together, in one Batch.
    func refresh(_ token: String, client: Int) async throws {
        // A server that checks no identity has none to refresh: the message changes nothing.
        guard self.service.accessControl.isEnabled else { return }
        let caller = try await self.service.accessControl.caller(
            authorization: "Bearer " + token, method: "Refresh", peer: self.peer)
        let subject = self.access.caller?.identity.principal.subject
        guard subject == nil || subject == caller.identity.principal.subject else {
            self.service.accessControl.audit?.record(
                "refresh_refused",
                ["sub": subject ?? "", "new_sub": caller.identity.principal.subject, "peer": self.peer])
            throw RPCError(
                Meridian_V1_ErrorDetail(
                    .permissionDenied, "a refreshed token must name the stream's subject; open a new stream for another"
                ))
        }
        let changed = self.access.replace(with: caller)
        self.service.accessControl.audit?.record(
            "refreshed",
            ["sub": caller.identity.principal.subject, "rediffed": changed.count, "peer": self.peer])
        self.service.logger.debug(
            "sync stream refreshed",
            metadata: [
                "meridian.sub": "\(caller.identity.principal.subject)",
                "meridian.rediffed": "\(changed.count)",
            ])
        if !changed.isEmpty { self.service.hub.replace(client, changed) }
    }
}
