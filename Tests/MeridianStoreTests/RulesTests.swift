import Foundation
import MeridianCore
import MeridianStore
import Testing

/// Writes decided by the caller's rules inside the store transaction: denials fail their own transaction only, a row
/// the caller cannot see answers exactly as a missing one, and idempotency keys are the caller's own.
@Suite struct RulesTests {
    static let schema = try! Schema.parse(
        yaml: """
            version: 1
            auth:
              claims: { sub: string, team: int }
            entities:
              Note:
                id: client
                attributes:
                  title: string
                  ownerId: string
                  team: int
                rules:
                  read:   team == @team
                  insert: ownerId == @sub AND team == @team
                  update: ownerId == @sub
                  delete: ownerId == @sub
                  immutable: [ownerId]
            """)

    static func access(_ subject: String, team: Int64 = 7) -> BoundAccess {
        Self.schema.access!.bind(Principal(subject: subject, claims: ["team": .int(team)]), schema: Self.schema)
    }

    static func insert(_ id: String, owner: String, team: Int64 = 7) -> WriteOperation {
        .insert("Note", id: id, ["title": .string(id), "ownerId": .string(owner), "team": .int(team)])
    }

    static func code(_ body: () async throws -> Void) async -> StoreError? {
        do {
            try await body()
            return nil
        } catch let error as StoreError {
            return error
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test("denied writes fail alone in a group commit; allowed ones commit", arguments: StoreVariant.allCases)
    func deniedFailsAlone(variant: StoreVariant) async throws {
        try await withStore(variant, schema: Self.schema) { store in
            let alice = Self.access("alice")
            let results = await withTaskGroup(of: (Int, StoreError?).self) { group in
                for i in 0..<24 {
                    group.addTask {
                        // Every third transaction writes a row owned by someone else after one of alice's own.
                        var operations = [Self.insert("a\(i)", owner: "alice")]
                        if i % 3 == 0 { operations.append(Self.insert("x\(i)", owner: "bob")) }
                        return (i, await Self.code { try await store.apply(operations, authorizer: alice) })
                    }
                }
                return await group.reduce(into: [Int: StoreError?]()) { $0[$1.0] = $1.1 }
            }
            for (i, error) in results {
                if i % 3 == 0 {
                    #expect(error?.code == .permissionDenied, "\(i)")
                    #expect(error?.operationIndex == 1)
                    #expect(error?.message.contains("rule: insert") == true, "\(String(describing: error))")
                } else {
                    #expect(error == nil, "\(i): \(String(describing: error))")
                }
            }
            let rows = try await tableState(store, "Note")
            #expect(Set(rows.keys) == Set((0..<24).filter { $0 % 3 != 0 }.map { "a\($0)" }))
        }
    }

    @Test("updates: before and after checked, immutable attributes kept, invisible rows missing")
    func updates() async throws {
        try await withStore(.inMemory, schema: Self.schema) { store in
            try await store.apply([Self.insert("b1", owner: "bob"), Self.insert("b9", owner: "bob", team: 9)])
            let alice = Self.access("alice")
            let bob = Self.access("bob")
            // Visible but not hers.
            let foreign = await Self.code {
                try await store.apply([.update("Note", id: "b1", ["title": "mine now"])], authorizer: alice)
            }
            #expect(foreign?.code == .permissionDenied)
            // An immutable attribute.
            let handover = await Self.code {
                try await store.apply([.update("Note", id: "b1", ["ownerId": "alice"])], authorizer: bob)
            }
            #expect(handover?.code == .permissionDenied)
            #expect(handover?.message.contains("Note.ownerId is immutable") == true)
            // The owner's own update, checked before and after: allowed.
            try await store.apply([.update("Note", id: "b1", ["title": "renamed"])], authorizer: bob)
            // A row in another team is invisible to alice: the same answer as a row that does not exist, for every
            // kind of write, with the same message.
            let invisible = await Self.code {
                try await store.apply([.delete("Note", id: "b9")], authorizer: alice)
            }
            let missing = await Self.code {
                try await store.apply([.delete("Note", id: "nope")], authorizer: alice)
            }
            #expect(invisible?.code == .notFound)
            #expect(
                invisible?.message.replacingOccurrences(of: "b9", with: "?")
                    == missing?.message.replacingOccurrences(of: "nope", with: "?"))
            let invisibleUpdate = await Self.code {
                try await store.apply(
                    [.update("Note", id: "b9", ["title": "x"], expectedVersion: 5)], authorizer: alice)
            }
            #expect(invisibleUpdate?.code == .notFound, "a version check must not answer first")
            let rows = try await tableState(store, "Note")
            #expect(rows["b1"]?.0["title"] == "renamed")
            #expect(rows["b9"] != nil)
        }
    }

    @Test("an insert is checked on the row as stored: a default it leaves out cannot slip past the insert rule")
    func defaultsAreChecked() async throws {
        let schema = try Schema.parse(
            yaml: """
                version: 1
                auth:
                  claims: { sub: string }
                entities:
                  Member:
                    id: client
                    attributes:
                      name: string
                      role: { type: string, default: admin }
                    rules:
                      read: TRUEPREDICATE
                      insert: NOT (role == "admin")
                """)
        try await withStore(.inMemory, schema: schema) { store in
            let access = schema.access!.bind(Principal(subject: "mallory"), schema: schema)
            let omitted = await Self.code {
                try await store.apply([.insert("Member", id: "m1", ["name": "mallory"])], authorizer: access)
            }
            #expect(omitted?.code == .permissionDenied, "\(String(describing: omitted))")
            try await store.apply([.insert("Member", id: "m2", ["name": "ok", "role": "user"])], authorizer: access)
            #expect(try await tableState(store, "Member").keys.sorted() == ["m2"])
        }
    }

    @Test("idempotency keys are scoped to the caller")
    func scopedKeys() async throws {
        try await withStore(.inMemory, schema: Self.schema) { store in
            let first = try await store.apply(
                [Self.insert("a1", owner: "alice")], idempotencyKey: "k", authorizer: Self.access("alice"))
            // Bob's key "k" is another transaction: it is applied, not answered with alice's commit.
            let second = try await store.apply(
                [Self.insert("b1", owner: "bob")], idempotencyKey: "k", authorizer: Self.access("bob"))
            #expect(second.seq > first.seq)
            // Alice's retry is answered with her first commit.
            let retry = try await store.apply(
                [Self.insert("a1", owner: "alice")], idempotencyKey: "k", authorizer: Self.access("alice"))
            #expect(retry.seq == first.seq)
            #expect(try await tableState(store, "Note").count == 2)
        }
    }
}
