import Foundation
import GRDB
import MeridianCore
import MeridianStore
import Testing

/// The schema's `auth:` section and rules: loading and its errors, claims in rules and not in queries, rules as
/// filters on the checked tree (against SQLite), and write decisions on before- and after-images.
@Suite struct AccessPolicyTests {
    static let yaml = """
        version: 1
        auth:
          claims: { sub: string, team: int, role: string, projects: "[string]" }
        entities:
          Note:
            attributes:
              title: string
              ownerId: string
              team: int
              projectId: string?
              done: bool
            rules:
              read:   team == @team AND (ownerId == @sub OR projectId IN @projects)
              insert: ownerId == @sub AND team == @team
              update: ownerId == @sub OR @role == "admin"   # checked on the row before and after the write
              delete: ownerId == @sub
              immutable: [team, ownerId]
          Secret:
            attributes:
              body: string
        """

    static func schema() throws -> Schema { try Schema.parse(yaml: Self.yaml, file: "rules.yaml") }

    static func note(_ id: String, owner: String, team: Int64 = 7, project: String? = nil, done: Bool = false)
        -> MeridianCore.Row
    {
        Row(
            id: id,
            values: [
                "title": .string(id), "ownerId": .string(owner), "team": .int(team),
                "projectId": project.map(Value.string) ?? .null, "done": .bool(done),
            ])
    }

    static let alice = Principal(
        subject: "alice", claims: ["team": .int(7), "role": .string("user"), "projects": .list([.string("p1")])])
    static let bob = Principal(
        subject: "bob", claims: ["team": .int(7), "role": .string("user"), "projects": .list([])])

    @Test("the auth section and rules load; rules have their own fingerprint and leave the schema's alone")
    func loads() throws {
        let schema = try Self.schema()
        let policy = try #require(schema.access)
        #expect(policy.claims.map(\.name) == ["sub", "team", "role", "projects"])
        #expect(policy.claimType("projects") == .stringList)
        #expect(policy.rules["Note"]?.immutable == ["team", "ownerId"])
        #expect(policy.rules["Secret"] == nil)

        let withoutRules = try Schema.parse(
            yaml: Self.yaml.replacingOccurrences(of: "delete: ownerId == @sub", with: "delete: FALSEPREDICATE"))
        #expect(withoutRules.fingerprint == schema.fingerprint)
        #expect(withoutRules.access?.fingerprint != policy.fingerprint)
        #expect(try Self.schema().access?.fingerprint == policy.fingerprint)
    }

    @Test(
        "a bad rule fails the load at its file, line and column",
        arguments: [
            (
                "read:   team == @team AND (ownerId == @sub OR projectId IN @projects)",
                "read:   team == @teem",
                "rules.yaml:13:23: typeMismatch: Note: rules.read: unknown claim @teem (declared: @projects, @role, @sub, @team under auth.claims)"
            ),
            (
                "read:   team == @team AND (ownerId == @sub OR projectId IN @projects)",
                "read:   owner == @sub",
                "rules.yaml:13:15: unknownAttribute: Note: rules.read: unknown attribute 'owner' (Note has: id, title, ownerId, team, projectId, done)"
            ),
            (
                "read:   team == @team AND (ownerId == @sub OR projectId IN @projects)",
                "read:   team == @sub",
                "rules.yaml:13:23: typeMismatch: Note: rules.read: 'team' is int but \"\" is string"
            ),
            (
                "read:   team == @team AND (ownerId == @sub OR projectId IN @projects)",
                "read:   team == $team",
                "rules.yaml:13:23: typeMismatch: Note: rules.read: variable $team has no value (no variables were given)"
            ),
            (
                "read:   team == @team AND (ownerId == @sub OR projectId IN @projects)",
                "read:   ownerId == @projects",
                "rules.yaml:13:26: typeMismatch: Note: rules.read: == takes one value, not a list (use IN)"
            ),
            (
                "read:   team == @team AND (ownerId == @sub OR projectId IN @projects)",
                "read:   team ==",
                "rules.yaml:13:22: syntax: Note: rules.read: expected a value after '==', found the end of the text"
            ),
            (
                "immutable: [team, ownerId]", "immutable: [team, owner]",
                "rules.yaml:17:25: unknownAttribute: Note: rules.immutable names 'owner', which Note does not have (did you mean 'ownerId'?)"
            ),
            (
                "claims: { sub: string, team: int, role: string, projects: \"[string]\" }",
                "claims: { sub: string, team: integer }",
                "rules.yaml:3:32: unknownType: auth.claims.team: unknown claim type 'integer'; expected string, int, double, bool, [string], [int] (quote the list types: \"[string]\")"
            ),
        ])
    func badRule(original: String, replacement: String, expected: String) throws {
        let text = Self.yaml.replacingOccurrences(of: original, with: replacement)
        #expect(text != Self.yaml)
        #expect(throws: SchemaError.self) { try Schema.parse(yaml: text, file: "rules.yaml") }
        do {
            _ = try Schema.parse(yaml: text, file: "rules.yaml")
        } catch {
            #expect(error.description == expected)
        }
    }

    @Test("rules without an auth section are refused")
    func rulesNeedAuth() {
        let text = Self.yaml.replacingOccurrences(
            of: "auth:\n  claims: { sub: string, team: int, role: string, projects: \"[string]\" }\n", with: "")
        #expect(throws: SchemaError.self) { try Schema.parse(yaml: text, file: "rules.yaml") }
    }

    @Test("a query cannot use a claim: @name is refused where $name would be bound")
    func queriesCannotUseClaims() throws {
        let note = try Self.schema().requireEntity("Note")
        for text in ["ownerId == @sub", "@role == \"admin\"", "projectId IN {@sub, \"x\"}"] {
            #expect(throws: QueryError.self) { try PredicateExpression.parse(text).bind(to: note) }
            do {
                _ = try PredicateExpression.parse(text).bind(to: note)
            } catch {
                #expect(error.code == .unboundVariable)
                #expect(error.message.contains("only the schema's rules can use claims"), "\(error)")
            }
        }
    }

    @Test("the read rule filters: each principal sees exactly the rows the rule gives them")
    func readRule() throws {
        let schema = try Self.schema()
        let policy = try #require(schema.access)
        let rows = [
            Self.note("a1", owner: "alice"), Self.note("b1", owner: "bob"),
            Self.note("b2", owner: "bob", project: "p1"), Self.note("a9", owner: "alice", team: 9),
        ]
        let note = try schema.requireEntity("Note")
        let all = try PredicateExpression.parse("TRUEPREDICATE").bind(to: note)
        let alice = policy.bind(Self.alice, schema: schema)
        let bob = policy.bind(Self.bob, schema: schema)
        #expect(rows.filter(alice.read(all, in: "Note").evaluate).map { $0.id } == ["a1", "b2"])
        #expect(rows.filter(bob.read(all, in: "Note").evaluate).map { $0.id } == ["b1", "b2"])
        // A query naming another user's rows gets nothing of theirs.
        let foreign = try PredicateExpression.parse(#"ownerId == "alice" OR id IN {"a1", "a9"}"#).bind(to: note)
        #expect(rows.filter(bob.read(foreign, in: "Note").evaluate).isEmpty)
        // An entity without rules shows nothing.
        #expect(!bob.canRead(MeridianCore.Row(id: "s", values: ["body": .string("x")]), in: "Secret"))
        // Equal claims bind equal predicates (the server shares their evaluation).
        let alice2 = policy.bind(Principal(subject: "alice", claims: Self.alice.claims), schema: schema)
        #expect(alice2.read(all, in: "Note") == alice.read(all, in: "Note"))
    }

    @Test("a rule using a claim the identity lacks, or has with another type, is false as a whole, NOT included")
    func missingClaim() throws {
        let text = Self.yaml.replacingOccurrences(
            of: "read:   team == @team AND (ownerId == @sub OR projectId IN @projects)",
            with: "read:   NOT (ownerId == @role)")
        let schema = try Schema.parse(yaml: text)
        let policy = try #require(schema.access)
        let row = Self.note("x", owner: "carol")
        let noRole = policy.bind(Principal(subject: "dave", claims: ["team": .int(7)]), schema: schema)
        #expect(!noRole.canRead(row, in: "Note"))
        let wrongType = policy.bind(Principal(subject: "dave", claims: ["role": .int(3)]), schema: schema)
        #expect(!wrongType.canRead(row, in: "Note"))
        let withRole = policy.bind(Principal(subject: "dave", claims: ["role": .string("user")]), schema: schema)
        #expect(withRole.canRead(row, in: "Note"))
        // A team given as a string is not the int the schema declares.
        let stringTeam = policy.bind(
            Principal(subject: "alice", claims: ["team": .string("7")]), schema: try Self.schema())
        #expect(!stringTeam.canRead(Self.note("a1", owner: "alice"), in: "Note"))
    }

    @Test("writes: foreign owner, team move, immutable attribute, invisible rows, admin by claim test")
    func writes() throws {
        let schema = try Self.schema()
        let policy = try #require(schema.access)
        let alice = policy.bind(Self.alice, schema: schema)
        let mine = Self.note("a1", owner: "alice")
        #expect(alice.authorize(.insert, entity: "Note", before: nil, after: mine) == .allowed)
        #expect(
            alice.authorize(.insert, entity: "Note", before: nil, after: Self.note("x", owner: "bob")) != .allowed)
        #expect(
            alice.authorize(.insert, entity: "Note", before: nil, after: Self.note("x", owner: "alice", team: 8))
                != .allowed)
        var done = mine
        done.values["done"] = Value.bool(true)
        #expect(alice.authorize(.update, entity: "Note", before: mine, after: done) == .allowed)
        var moved = mine
        moved.values["team"] = Value.int(8)
        guard case .denied(let reason) = alice.authorize(.update, entity: "Note", before: mine, after: moved) else {
            Issue.record("a team move was not denied")
            return
        }
        #expect(reason.contains("Note.team is immutable"))
        // Bob's row, invisible to alice (no project): not found, whatever the write.
        let bobs = Self.note("b1", owner: "bob")
        #expect(alice.authorize(.update, entity: "Note", before: bobs, after: bobs) == .notFound)
        #expect(alice.authorize(.delete, entity: "Note", before: bobs, after: nil) == .notFound)
        // Bob's row in alice's project: visible, but not hers to change, unless she is an admin.
        let shared = Self.note("b2", owner: "bob", project: "p1")
        var sharedDone = shared
        sharedDone.values["done"] = Value.bool(true)
        #expect(alice.authorize(.update, entity: "Note", before: shared, after: sharedDone) != .allowed)
        #expect(alice.authorize(.delete, entity: "Note", before: shared, after: nil) != .allowed)
        var adminClaims = Self.alice.claims
        adminClaims["role"] = .string("admin")
        let admin = policy.bind(Principal(subject: "alice", claims: adminClaims), schema: schema)
        #expect(admin.authorize(.update, entity: "Note", before: shared, after: sharedDone) == .allowed)
        // An entity without rules allows nothing.
        #expect(
            alice.authorize(
                .insert, entity: "Secret", before: nil, after: MeridianCore.Row(id: "s", values: ["body": "x"]))
                != .allowed)
    }

    /// Rules are filters, on the checked tree: for random predicates, the rows SQLite returns for the bound predicate
    /// equal those it returns for the query alone that the rule (evaluated in memory) allows.
    @Test("random predicates AND-ed with the read rule: SQLite equals the query's rows filtered by the rule")
    func rulesAreFilters() throws {
        let seed = SplitMix64.seedFromEnvironment()
        var generator = CaseGenerator(rng: SplitMix64(seed: seed))
        let entity = PredicateDifferentialTests.entity
        let schema = try Schema(version: 1, entities: [entity])
        let policy = AccessPolicy(
            claims: [
                ClaimDeclaration(name: "sub", type: .string), ClaimDeclaration(name: "n", type: .int),
                ClaimDeclaration(name: "notes", type: .stringList),
            ],
            rules: [
                "Item": EntityRules(
                    read: try PredicateExpression.parse("n >= @n AND (title == @sub OR note IN @notes)"))
            ])
        try policy.check(against: schema)
        let queue = try DatabaseQueue()
        try queue.inDatabase { db in
            db.registerMeridianFunctions()
            try db.execute(sql: PredicateDifferentialTests.createTable)
        }
        var compared = 0
        var visibleSomewhere = 0
        for _ in 0..<20 {
            let rows = (0..<40).map { generator.row(index: $0) }
            try queue.inDatabase { db in
                try db.execute(sql: #"DELETE FROM "Item""#)
                for row in rows {
                    let names = ["id"] + entity.attributes.map(\.name)
                    try db.execute(
                        sql: #"INSERT INTO "Item" (\#(names.map { "\"\($0)\"" }.joined(separator: ", "))) "#
                            + "VALUES (\(Array(repeating: "?", count: names.count).joined(separator: ", ")))",
                        arguments: statementArguments(names.map { row[$0] }))
                }
            }
            let titles = rows.compactMap { $0["title"].stringValue }
            let notes = rows.compactMap { $0["note"].stringValue }
            for _ in 0..<50 {
                let (text, variables) = generator.predicateText()
                guard let query = try? PredicateExpression.parse(text).bind(to: entity, variables: variables) else {
                    continue
                }
                let principal = Principal(
                    subject: titles.isEmpty ? "x" : generator.pick(titles),
                    claims: [
                        "n": .int(Int64(generator.int(20)) - 10),
                        "notes": .list(notes.isEmpty ? [] : [.string(generator.pick(notes))]),
                    ])
                let access = policy.bind(principal, schema: schema)
                let bound = access.read(query, in: "Item")
                func ids(_ predicate: MeridianCore.RowPredicate) throws -> Set<String> {
                    let fragment = predicate.sql()
                    return try queue.inDatabase { db in
                        Set(
                            try String.fetchAll(
                                db, sql: #"SELECT "id" FROM "Item" WHERE \#(fragment.sql)"#,
                                arguments: statementArguments(fragment.arguments)))
                    }
                }
                let byRow = Dictionary(uniqueKeysWithValues: rows.map { ($0.id, $0) })
                let expected = try ids(query).filter { access.canRead(byRow[$0]!, in: "Item") }
                let actual = try ids(bound)
                #expect(actual == expected, "seed \(seed): \(text) for \(principal)")
                #expect(Set(rows.filter(bound.evaluate).map(\.id)) == actual, "seed \(seed): \(text)")
                compared += 1
                if !actual.isEmpty { visibleSomewhere += 1 }
            }
        }
        #expect(compared > 500)
        #expect(visibleSomewhere > 50, "too few cases where the rule lets rows through (\(visibleSomewhere))")
    }
}
