import Foundation
import GRPCCore
import GRPCInProcessTransport
import MeridianAuth
import MeridianCore
import MeridianProto
import MeridianServer
import MeridianStore
import MeridianTestSupport
import Testing

/// The schema's rules through the server: rules are filters on every read path, visibility changes arrive as exact
/// `left`/`entered` at the commit's seq, a refresh re-diffs only what its new claims change, expiry ends the stream.
@Suite struct RulesServerTests {
    static let schema = try! Schema.parse(
        yaml: """
            version: 1
            auth:
              claims: { sub: string, team: int, role: string, projects: "[string]" }
            entities:
              Note:
                id: client
                attributes:
                  title: string
                  ownerId: string
                  team: int
                  projectId: string?
                  rank: int
                rules:
                  read:   team == @team AND (ownerId == @sub OR projectId IN @projects OR @role == "admin")
                  insert: team == @team
                  update: ownerId == @sub OR @role == "admin"
                  delete: ownerId == @sub
                  immutable: [team]
              Board:
                id: client
                attributes:
                  name: string
                  team: int
                rules:
                  read: team == @team
            """)

    /// A store seeded with alice's a1…a5, bob's b1…b5, bob's b6 in project p1, and a board of team 7.
    static func store() async throws -> Store {
        let store = try Store.temporary(schema: Self.schema)
        var operations: [WriteOperation] = []
        for i in 1...5 {
            for owner in ["a", "b"] {
                operations.append(
                    .insert(
                        "Note", id: "\(owner)\(i)",
                        [
                            "title": .string("\(owner)\(i)"), "ownerId": .string(owner == "a" ? "alice" : "bob"),
                            "team": 7, "rank": .int(Int64(i)),
                        ]))
            }
        }
        operations.append(
            .insert("Note", id: "b6", ["title": "b6", "ownerId": "bob", "team": 7, "projectId": "p1", "rank": 6]))
        operations.append(.insert("Board", id: "t7", ["name": "seven", "team": 7]))
        try await store.apply(operations)
        return store
    }

    /// An HS256 secret, the server's authenticator for it (no leeway) and a signer.
    struct Tokens {
        let keys: TestKeys
        let signer: SigningKey
        let authenticator: Authenticator

        init() async throws {
            self.keys = try TestKeys()
            let path = try self.keys.write(String(repeating: "s", count: 48), to: "hs256.secret")
            self.signer = try await SigningKey.load(contentsOf: path)
            self.authenticator = Authenticator(
                tokens: TokenVerifier(keys: try await VerificationKeys.load(contentsOf: path), leeway: .zero),
                apiKeys: nil)
        }

        func token(
            _ subject: String, projects: [String] = [], role: String = "user", expiresIn: Int64 = 3_600
        ) async throws -> String {
            try await self.signer.sign(
                claims: claims(
                    subject,
                    [
                        "team": .int(7), "role": .string(role), "projects": .list(projects.map(ClaimValue.string)),
                        "exp": .int(Int64(Date().timeIntervalSince1970) + expiresIn),
                    ]))
        }
    }

    /// A Hello timeout that a test opening two streams on a busy machine never reaches.
    static let configuration = Fixtures.configuration { $0.helloTimeout = .seconds(120) }

    static func metadata(_ token: String) -> Metadata { ["authorization": "Bearer \(token)"] }

    /// A seeded store (``store()``), fresh tokens, and a client of an in-process server that verifies them.
    static func withRulesServer(
        _ body: (Store, Tokens, Meridian_V1_Meridian.Client<InProcessTransport.Client>) async throws -> Void
    ) async throws {
        let store = try await Self.store()
        let tokens = try await Tokens()
        try await withInProcessServer(
            store: store, configuration: Self.configuration, authenticator: tokens.authenticator
        ) { _, client in
            try await body(store, tokens, Meridian_V1_Meridian.Client(wrapping: client))
        }
    }

    static func notes(_ predicate: String = "", sort: [(String, Bool)] = [], limit: UInt32? = nil)
        -> Meridian_V1_FetchRequest
    {
        Fixtures.fetch("Note", predicate, sort: sort, limit: limit)
    }

    /// Reads responses until a Batch at `seq` or later; returns the Batches read.
    static func batches(_ stream: SyncStream, _ mirror: inout Mirror, through seq: Int64) async throws
        -> [Meridian_V1_Batch]
    {
        var batches: [Meridian_V1_Batch] = []
        while mirror.seq < seq {
            let response = mirror.apply(try await stream.nextMessage())
            if case .batch(let batch) = response.kind { batches.append(batch) }
        }
        return batches
    }

    /// Every row id the batches' deltas name.
    static func mentioned(_ batches: [Meridian_V1_Batch]) -> Set<String> {
        var ids: Set<String> = []
        for delta in batches.flatMap(\.deltas) {
            ids.formUnion(delta.entered.map(\.id))
            ids.formUnion(delta.left)
            ids.formUnion(delta.updated.map(\.row.id))
        }
        return ids
    }

    static func apply(_ operations: [WriteOperation]) -> Meridian_V1_ApplyRequest {
        Meridian_V1_ApplyRequest(operations, policy: .storeWins, idempotencyKey: "")
    }

    @Test("bob never receives a row of alice's: any predicate, variables, ids, limits, Replace, Query, resume, deltas")
    func rulesAreFilters() async throws {
        let store = try await Self.store()
        let tokens = try await Tokens()
        let bob = try await tokens.token("bob")
        let alice = try await tokens.token("alice", projects: ["p1"])
        let alices = Set((1...6).map { "a\($0)" })
        try await withInProcessServer(
            store: store, configuration: Self.configuration, authenticator: tokens.authenticator
        ) { _, client in
            let meridian = Meridian_V1_Meridian.Client(wrapping: client)
            try await withSyncStream(meridian, metadata: Self.metadata(bob)) { stream in
                var mirror = try await Mirror.subscribed(stream, "all", Self.notes())
                let probes: [(String, Meridian_V1_FetchRequest)] = [
                    ("named", Self.notes(#"ownerId == "alice""#)),
                    ("variable", Fixtures.fetch("Note", "ownerId == $o", variables: ["o": .value("alice")])),
                    ("ids", Self.notes(#"id IN {"a1", "a2", "a3"}"#)),
                    ("negated", Self.notes(#"NOT (ownerId == "bob")"#)),
                    ("limited", Self.notes(sort: [("rank", false)], limit: 3)),
                ]
                for (id, fetch) in probes {
                    stream.subscribe(id, fetch)
                    try await mirror.awaitSnapshot(stream, id)
                }
                #expect(mirror.ids("all") == ["b1", "b2", "b3", "b4", "b5", "b6"])
                #expect(mirror.ids("named").isEmpty && mirror.ids("variable").isEmpty && mirror.ids("ids").isEmpty)
                #expect(mirror.ids("negated").isEmpty)
                #expect(mirror.ids("limited") == ["b4", "b5", "b6"])
                // A claim in a query is refused, never bound.
                stream.subscribe("claim", Self.notes("ownerId == @sub"))
                let refused = try await stream.nextMessage()
                guard case .subscriptionError(let error) = refused.kind else {
                    Issue.record("a predicate with a claim was answered with \(refused)")
                    return
                }
                #expect(error.error.code == .badPredicate)
                // Alice's writes after the snapshot: nothing of them reaches bob.
                let seq = try await store.apply(
                    [
                        .insert("Note", id: "a6", ["title": "a6", "ownerId": "alice", "team": 7, "rank": 99]),
                        .update("Note", id: "a1", ["rank": 100]),
                        .update("Note", id: "b1", ["title": "b1 renamed"]),
                    ]
                ).seq
                let batches = try await Self.batches(stream, &mirror, through: seq)
                let mentioned = Self.mentioned(batches)
                #expect(mentioned.isDisjoint(with: alices), "\(mentioned)")
                #expect(mentioned.contains("b1"))
                // Replace to alice's rows: empty.
                stream.replace("all", Self.notes(#"ownerId == "alice" OR rank > 50"#))
                while !mirror.replaced.contains("all") { mirror.apply(try await stream.nextMessage()) }
                #expect(mirror.ids("all").isEmpty)
                #expect(Set(mirror.results.values.flatMap(\.keys)).isDisjoint(with: alices))
            }
            // Query.
            var request = Meridian_V1_QueryRequest()
            request.fetch = Self.notes()
            let rows = try await meridian.query(request, metadata: Self.metadata(bob)) { response in
                var ids: [String] = []
                for try await message in response.messages { ids += message.rows.map(\.id) }
                return ids
            }
            #expect(Set(rows) == ["b1", "b2", "b3", "b4", "b5", "b6"])
            // Resume from seq 1: the missed changes include alice's, and none reach bob.
            try await withSyncStream(meridian, metadata: Self.metadata(bob)) { stream in
                var subscribe = Meridian_V1_Subscribe()
                subscribe.subscriptionID = "all"
                subscribe.fetch = Self.notes()
                subscribe.resume = true
                stream.hello(resumeFrom: 1, subscriptions: [subscribe])
                var mirror = Mirror()
                let latest = try await store.latestSeq()
                let batches = try await Self.batches(stream, &mirror, through: latest)
                let mentioned = Self.mentioned(batches)
                #expect(mentioned.isDisjoint(with: alices), "\(mentioned)")
            }
            // And alice, whose project holds b6, sees it beside her own.
            try await withSyncStream(meridian, metadata: Self.metadata(alice)) { stream in
                let mirror = try await Mirror.subscribed(stream, "all", Self.notes())
                #expect(mirror.ids("all") == ["a1", "a2", "a3", "a4", "a5", "a6", "b6"])
            }
        }
    }

    @Test("an owner change is left for the old owner and entered for the new one, at the commit's seq")
    func visibilityMoves() async throws {
        let store = try await Self.store()
        let tokens = try await Tokens()
        let (alice, bob, admin) = (
            try await tokens.token("alice"), try await tokens.token("bob"),
            try await tokens.token("carol", role: "admin")
        )
        try await withInProcessServer(
            store: store, configuration: Self.configuration, authenticator: tokens.authenticator
        ) { _, client in
            let meridian = Meridian_V1_Meridian.Client(wrapping: client)
            try await withSyncStream(meridian, metadata: Self.metadata(alice)) { aliceStream in
                try await withSyncStream(meridian, metadata: Self.metadata(bob)) { bobStream in
                    var bobMirror = try await Mirror.subscribed(bobStream, "all", Self.notes())
                    var aliceMirror = try await Mirror.subscribed(aliceStream, "all", Self.notes())
                    aliceStream.subscribe("top", Self.notes(sort: [("rank", false)], limit: 2))
                    try await aliceMirror.awaitSnapshot(aliceStream, "top")
                    #expect(aliceMirror.ids("top") == ["a4", "a5"])
                    // The admin hands a5 to bob (allowed: the update rule's claim test).
                    let request = Self.apply([.update("Note", id: "a5", ["ownerId": "bob"])])
                    let response = try await meridian.apply(request, metadata: Self.metadata(admin))
                    guard case .result(let result) = response.outcome else {
                        Issue.record("the admin's update failed: \(response)")
                        return
                    }
                    let seq = result.seq
                    let aliceBatches = try await Self.batches(aliceStream, &aliceMirror, through: seq)
                    let bobBatches = try await Self.batches(bobStream, &bobMirror, through: seq)
                    let aliceAt = aliceBatches.filter { $0.seq == seq }.flatMap(\.deltas)
                    let bobAt = bobBatches.filter { $0.seq == seq }.flatMap(\.deltas)
                    #expect(aliceAt.first { $0.subscriptionID == "all" }?.left == ["a5"])
                    #expect(aliceAt.first { $0.subscriptionID == "top" }?.left == ["a5"])
                    #expect(bobAt.first { $0.subscriptionID == "all" }?.entered.map(\.id) == ["a5"])
                    #expect(aliceMirror.ids("top") == ["a3", "a4"])
                    #expect(!aliceMirror.ids("all").contains("a5"))
                    #expect(bobMirror.ids("all").contains("a5"))
                }
            }
            // Alice herself cannot hand a row over: the update rule is checked on the row after the write too.
            let handover = Self.apply([.update("Note", id: "a4", ["ownerId": "bob"])])
            let response = try await meridian.apply(handover, metadata: Self.metadata(alice))
            #expect(response.error.code == .permissionDenied, "\(response)")
            // And cannot probe bob's rows: not found.
            let probe = Self.apply([.delete("Note", id: "b1")])
            #expect(try await meridian.apply(probe, metadata: Self.metadata(alice)).error.code == .notFound)
        }
    }

    @Test("a refresh that shrinks projects re-diffs only the subscriptions whose rule changed, in one Batch")
    func refreshRediffs() async throws {
        try await Self.withRulesServer { store, tokens, meridian in
            let first = try await tokens.token("alice", projects: ["p1"])
            try await withSyncStream(meridian, metadata: Self.metadata(first)) { stream in
                var mirror = try await Mirror.subscribed(stream, "notes", Self.notes())
                stream.subscribe("boards", Fixtures.fetch("Board"))
                try await mirror.awaitSnapshot(stream, "boards")
                #expect(mirror.ids("notes").contains("b6"))
                #expect(mirror.ids("boards") == ["t7"])
                stream.refresh(try await tokens.token("alice", projects: []))
                var batch: Meridian_V1_Batch?
                while batch == nil {
                    let response = mirror.apply(try await stream.nextMessage())
                    if case .batch(let b) = response.kind, !b.deltas.isEmpty { batch = b }
                }
                let deltas = batch?.deltas ?? []
                #expect(deltas.map(\.subscriptionID) == ["notes"], "\(deltas)")
                #expect(deltas.first?.left == ["b6"])
                #expect(deltas.first?.replaced == true)
                #expect(!mirror.ids("notes").contains("b6"))
                #expect(mirror.ids("boards") == ["t7"])
                // Another subject on this stream: the stream ends PERMISSION_DENIED.
                stream.refresh(try await tokens.token("bob"))
                do {
                    while true { _ = try await stream.nextMessage() }
                } catch let error as RPCError {
                    #expect(error.code == .permissionDenied, "\(error)")
                }
            }
        }
    }

    @Test("a resume is answered from the log only under the same read rules; other claims get snapshots")
    func resumeUnderOtherClaims() async throws {
        try await Self.withRulesServer { store, tokens, meridian in
            let withProject = try await tokens.token("alice", projects: ["p1"])
            var fingerprint = ""
            var seq: Int64 = 0
            try await withSyncStream(meridian, metadata: Self.metadata(withProject)) { stream in
                stream.hello()
                guard case .welcome(let welcome) = try await stream.nextMessage().kind else {
                    Issue.record("no Welcome")
                    return
                }
                fingerprint = welcome.accessFingerprint
                seq = welcome.seq
            }
            #expect(!fingerprint.isEmpty)
            func resume(_ token: String, fingerprint: String?) async throws -> Bool {
                try await withSyncStream(meridian, metadata: Self.metadata(token)) { stream in
                    var hello = Meridian_V1_Hello()
                    hello.resumeFromSeq = seq
                    if let fingerprint { hello.accessFingerprint = fingerprint }
                    hello.protocolVersion = ProtocolVersion.current
                    var request = Meridian_V1_SyncRequest()
                    request.hello = hello
                    stream.send(request)
                    guard case .welcome(let welcome) = try await stream.nextMessage().kind else { return false }
                    return welcome.resumed
                }
            }
            // A new token with the same claims: the same rules, resumed.
            #expect(try await resume(try await tokens.token("alice", projects: ["p1"]), fingerprint: fingerprint))
            // Fewer projects: b6 may have left while away, and the log cannot say; snapshots.
            #expect(!(try await resume(try await tokens.token("alice"), fingerprint: fingerprint)))
            // No fingerprint under rules: snapshots.
            #expect(!(try await resume(withProject, fingerprint: nil)))
        }
    }

    @Test(
        "a revoked subject's open stream ends within a second, and its new calls are refused", .timeLimit(.minutes(1)))
    func revocation() async throws {
        try await Self.withRulesServer { store, tokens, meridian in
            let alice = try await tokens.token("alice")
            let bob = try await tokens.token("bob")
            try await withSyncStream(meridian, metadata: Self.metadata(alice)) { stream in
                _ = try await Mirror.subscribed(stream, "notes", Self.notes())
                try await store.revoke(subject: "alice", tokenID: nil)
                let revoked = ContinuousClock.now
                var goodbye = false
                do {
                    while true {
                        if case .goodbye = try await stream.nextMessage().kind { goodbye = true }
                    }
                } catch let error as RPCError {
                    #expect(error.code == .unauthenticated, "\(error)")
                }
                #expect(goodbye)
                // Within a second on an idle machine (a poll and a look, each every 500 ms); a loaded one may lag.
                #expect(ContinuousClock.now - revoked < .seconds(10))
            }
            do {
                _ = try await meridian.getSchema(Meridian_V1_GetSchemaRequest(), metadata: Self.metadata(alice))
                Issue.record("a revoked subject was served")
            } catch let error as RPCError {
                #expect(error.code == .unauthenticated)
            }
            _ = try await meridian.getSchema(Meridian_V1_GetSchemaRequest(), metadata: Self.metadata(bob))
        }
    }

    /// Broken on purpose once — the per-request check removed — the write after the expiry committed.
    @Test(
        "an open ApplyStream commits nothing after its token expires or its subject is revoked: UNAUTHENTICATED",
        .timeLimit(.minutes(1)))
    func applyStreamStopsAtExpiryAndRevocation() async throws {
        try await Self.withRulesServer { store, tokens, meridian in
            @Sendable func insert(_ id: String) -> Meridian_V1_ApplyRequest {
                Self.apply([
                    .insert("Note", id: id, ["title": .string(id), "ownerId": "alice", "team": 7, "rank": 1])
                ])
            }
            /// Writes `first`, waits for its answer, runs `between`, writes `second`; the answers and how it ended.
            func stream(
                _ token: String, _ first: String, _ second: String, between: @escaping @Sendable () async throws -> Void
            ) async throws -> (answers: Int, error: RPCError?) {
                let (answered, signal) = AsyncStream<Void>.makeStream()
                return try await meridian.applyStream(
                    metadata: Self.metadata(token),
                    requestProducer: { writer in
                        try await writer.write(insert(first))
                        for await _ in answered { break }
                        try await between()
                        try await writer.write(insert(second))
                    },
                    onResponse: { response in
                        var answers = 0
                        do {
                            for try await answer in response.messages {
                                if case .result = answer.outcome {} else { Issue.record("not committed: \(answer)") }
                                answers += 1
                                signal.yield()
                            }
                            return (answers, nil)
                        } catch let error as RPCError {
                            return (answers, error)
                        }
                    })
            }
            // Expiry: a 3 s token (no leeway), the second write after it. On a machine so busy that the first write
            // was not answered before the token expired, again with a new token (and new ids).
            var expired: (answers: Int, error: RPCError?) = (0, nil)
            var (first, second) = ("x1", "x2")
            for attempt in 1...3 {
                (first, second) = ("x1-\(attempt)", "x2-\(attempt)")
                let expiring = try await tokens.token("alice", expiresIn: 3)
                let expiry = Date().addingTimeInterval(3)
                expired = try await stream(expiring, first, second) {
                    try await Task.sleep(for: .seconds(max(0, expiry.timeIntervalSinceNow) + 0.5))
                }
                if expired.answers == 1 || Date() < expiry { break }
            }
            #expect(expired.answers == 1 && expired.error?.code == .unauthenticated, "\(expired)")
            #expect(expired.error?.message.contains("expired") == true, "\(expired)")
            // Revocation: the second write after alice is revoked and the server has read it (within a second).
            let alice = try await tokens.token("alice")
            let revoked = try await stream(alice, "y1", "y2") {
                try await store.revoke(subject: "alice", tokenID: nil)
                try await Task.sleep(for: .seconds(2))
            }
            #expect(revoked.answers == 1 && revoked.error?.code == .unauthenticated, "\(revoked)")
            let ids = try await store.snapshot(entity: "Note").rows.map(\.id)
            #expect(ids.contains(first) && ids.contains("y1"))
            #expect(!ids.contains(second) && !ids.contains("y2"), "a write committed after its credential ended")
        }
    }

    @Test("per-principal quotas: streams past the bound and transactions past the rate are refused, others served")
    func quotas() async throws {
        let store = try await Self.store()
        let tokens = try await Tokens()
        var configuration = Self.configuration
        configuration.maxStreamsPerPrincipal = 2
        configuration.applyRatePerPrincipal = 1
        configuration.maxSubscriptionsPerPrincipal = 3
        // Over HTTP/2: a client that goes away resets its stream, which ends the server's side of it.
        try await withTestServer(store: store, configuration: configuration, authenticator: tokens.authenticator) {
            _, port in
            try await withHTTP2Client(port: port) { client in
                let meridian = Meridian_V1_Meridian.Client(wrapping: client)
                let alice = try await tokens.token("alice")
                let bob = try await tokens.token("bob")
                func welcomed(_ stream: SyncStream) async throws -> Bool {
                    stream.hello()
                    do {
                        if case .welcome = try await stream.nextMessage().kind { return true }
                    } catch let error as RPCError {
                        #expect(error.code == .resourceExhausted, "\(error)")
                        #expect(error.message.contains("--max-streams-per-principal"), "\(error)")
                    }
                    return false
                }
                try await withSyncStream(meridian, metadata: Self.metadata(alice)) { first in
                    let served = try await welcomed(first)
                    #expect(served)
                    try await withSyncStream(meridian, metadata: Self.metadata(alice)) { second in
                        let served = try await welcomed(second)
                        #expect(served)
                        try await withSyncStream(meridian, metadata: Self.metadata(alice)) { third in
                            let served = try await welcomed(third)
                            #expect(!served, "a third stream of alice's was served")
                        }
                        try await withSyncStream(meridian, metadata: Self.metadata(bob)) { other in
                            let served = try await welcomed(other)
                            #expect(served, "bob has streams of his own")
                        }
                    }
                }
                // The streams are given back as they end (the server notices a closed stream a moment later).
                var servedAgain = false
                for _ in 0..<50 where !servedAgain {
                    servedAgain = try await withSyncStream(meridian, metadata: Self.metadata(alice)) { again in
                        again.hello()
                        guard case .welcome = try? await again.nextMessage().kind else { return false }
                        return true
                    }
                    if !servedAgain { try await Task.sleep(for: .milliseconds(100)) }
                }
                #expect(servedAgain)
                let carol = try await tokens.token("carol")
                // Three subscriptions over two streams of carol's (a subject of its own: alice's streams are given back a moment after they end); the fourth is refused, and given back by an unsubscribe.
                try await withSyncStream(meridian, metadata: Self.metadata(carol)) { one in
                    var first = try await Mirror.subscribed(one, "a", Self.notes())
                    one.subscribe("b", Self.notes("rank > 2"))
                    try await first.awaitSnapshot(one, "b")
                    try await withSyncStream(meridian, metadata: Self.metadata(carol)) { two in
                        var second = try await Mirror.subscribed(two, "c", Self.notes())
                        two.subscribe("d", Self.notes("rank > 3"))
                        guard case .subscriptionError(let refused) = try await two.nextMessage().kind else {
                            Issue.record("a fourth subscription of carol's was served")
                            return
                        }
                        #expect(refused.error.code == .limitExceeded)
                        #expect(refused.error.message.contains("--max-subscriptions-per-principal"))
                        one.unsubscribe("b")
                        var served = false
                        for attempt in 0..<50 where !served {
                            two.subscribe("d\(attempt)", Self.notes("rank > 3"))
                            while true {
                                let response = second.apply(try await two.nextMessage())
                                if case .subscriptionError = response.kind { break }
                                if second.snapshotsReceived["d\(attempt)", default: 0] > 0 {
                                    served = true
                                    break
                                }
                            }
                            if !served { try await Task.sleep(for: .milliseconds(50)) }
                        }
                        #expect(served, "the place given back by the unsubscribe was not reused")
                    }
                }
                // One transaction a second: of twenty at once, the first is committed and most are refused.
                let codes = try await withThrowingTaskGroup(of: Meridian_V1_ErrorDetail.self) { group in
                    for i in 0..<20 {
                        group.addTask {
                            let request = Self.apply([
                                .insert("Note", id: "q\(i)", ["title": "q", "ownerId": "alice", "team": 7, "rank": 1])
                            ])
                            return try await meridian.apply(request, metadata: Self.metadata(alice)).error
                        }
                    }
                    return try await group.reduce(into: [Meridian_V1_ErrorDetail]()) { $0.append($1) }
                }
                #expect(codes.contains { $0.code == .unspecified }, "\(codes)")
                let refused = codes.filter { $0.code == .limitExceeded }
                #expect(refused.count >= 10, "\(codes.map(\.code))")
                #expect(
                    refused.allSatisfy { $0.message.contains("retry after") && $0.message.contains("--apply-rate") })
                let bobs = Self.apply([
                    .insert("Note", id: "bq", ["title": "q", "ownerId": "bob", "team": 7, "rank": 1])
                ])
                #expect(try await meridian.apply(bobs, metadata: Self.metadata(bob)).error.code == .unspecified)
                try await Task.sleep(for: .milliseconds(1_200))
                let later = Self.apply([
                    .insert("Note", id: "ql", ["title": "q", "ownerId": "alice", "team": 7, "rank": 1])
                ])
                #expect(try await meridian.apply(later, metadata: Self.metadata(alice)).error.code == .unspecified)
            }
        }
    }

    @Test(
        "without a refresh, the stream ends at the token's expiry: Goodbye, then UNAUTHENTICATED, nothing after",
        .timeLimit(.minutes(1)))
    func expiryEndsTheStream() async throws {
        try await Self.withRulesServer { store, tokens, meridian in
            // A token that expires in 5 s; on a machine so busy that the stream opens after that, a new one.
            for attempt in 1...5 {
                let token = try await tokens.token("alice", expiresIn: 5)
                let expiry = Date().addingTimeInterval(5)
                let opened = try await withSyncStream(meridian, metadata: Self.metadata(token)) { stream in
                    do {
                        _ = try await Mirror.subscribed(stream, "notes", Self.notes())
                    } catch let error as RPCError where error.code == .unauthenticated && Date() >= expiry {
                        return false
                    }
                    var goodbye: Meridian_V1_Goodbye?
                    do {
                        while true {
                            let response = try await stream.nextMessage()
                            if case .goodbye(let g) = response.kind {
                                goodbye = g
                                #expect(Date() >= expiry.addingTimeInterval(-1))
                            } else if goodbye != nil {
                                Issue.record("sent after the Goodbye: \(response)")
                            }
                            if case .batch = response.kind, Date() > expiry.addingTimeInterval(0.5) {
                                Issue.record("a batch after the expiry")
                            }
                        }
                    } catch let error as RPCError {
                        #expect(error.code == .unauthenticated, "\(error)")
                    }
                    #expect(goodbye?.reason.contains("expired") == true)
                    return true
                }
                if opened { break }
                #expect(attempt < 5, "the machine never opened a stream within a token's 5 s")
            }
        }
    }
}
