// MARK: - SyncOutbound
//
// The Sync stream's encoder: the context says what to send in Core terms (subscribe this request at this epoch,
// acknowledge this seq) and this builds the `SyncRequest` and hands it to the open stream.

internal import MeridianCore
internal import MeridianProto

/// The outgoing side of an open Sync stream.
struct SyncOutbound {
    /// Where the stream's outgoing messages go.
    let continuation: AsyncStream<Meridian_V1_SyncRequest>.Continuation

    /// One subscription as `Hello` or `Subscribe` carries it.
    struct Subscription {
        var id: String
        var request: FetchRequest
        var resume: Bool
    }

    /// Sends `Hello`.
    ///
    /// - Parameters:
    ///   - resumeFrom: The seq to resume from, or `nil` for a fresh start.
    ///   - schemaFingerprint: The fingerprint of the schema the client binds to, if known.
    ///   - accessFingerprint: The Welcome's fingerprint of the read rules the resumed seq was reached under.
    func hello(
        clientName: String,
        resumeFrom: Int64?,
        schemaFingerprint: String?,
        accessFingerprint: String? = nil,
        maxMessageBytes: Int = 0,
        subscriptions: [Subscription]
    ) {
        var hello = Meridian_V1_Hello()
        hello.protocolVersion = ProtocolVersion.current
        hello.clientName = clientName
        hello.maxBatchBytes = UInt32(clamping: maxMessageBytes)
        if let resumeFrom { hello.resumeFromSeq = resumeFrom }
        if let schemaFingerprint { hello.schemaFingerprint = schemaFingerprint }
        if let accessFingerprint { hello.accessFingerprint = accessFingerprint }
        hello.subscriptions = subscriptions.map(Self.subscribeMessage)
        self.send(.hello(hello))
    }

    /// Sends `Subscribe`.
    func subscribe(_ subscription: Subscription) {
        self.send(.subscribe(Self.subscribeMessage(subscription)))
    }

    /// Sends `Replace`.
    func replace(_ id: String, with request: FetchRequest) {
        var replace = Meridian_V1_Replace()
        replace.subscriptionID = id
        replace.fetch = Meridian_V1_FetchRequest(request)
        self.send(.replace(replace))
    }

    /// Sends `Unsubscribe`.
    func unsubscribe(_ id: String) {
        var unsubscribe = Meridian_V1_Unsubscribe()
        unsubscribe.subscriptionID = id
        self.send(.unsubscribe(unsubscribe))
    }

    /// Sends `Ack`.
    func acknowledge(_ seq: Int64) {
        var ack = Meridian_V1_Ack()
        ack.seq = seq
        self.send(.ack(ack))
    }

    /// Ends the stream's outgoing side.
    func finish() {
        self.continuation.finish()
    }

    private func send(_ kind: Meridian_V1_SyncRequest.OneOf_Kind) {
        var request = Meridian_V1_SyncRequest()
        request.kind = kind
        self.continuation.yield(request)
    }

    private static func subscribeMessage(_ subscription: Subscription) -> Meridian_V1_Subscribe {
        var subscribe = Meridian_V1_Subscribe()
        subscribe.subscriptionID = subscription.id
        subscribe.fetch = Meridian_V1_FetchRequest(subscription.request)
        subscribe.resume = subscription.resume
        return subscribe
    }
}
