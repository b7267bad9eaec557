// MARK: - meridian insert / update / upsert / delete

internal import ArgumentParser
internal import MeridianClient
internal import MeridianCore

/// `meridian insert ENTITY key=value…`: inserts a row and prints its id.
struct InsertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "insert",
        abstract: "Insert a row and print its id.",
        discussion: """
            Values are parsed by the attribute's type: meridian insert Point title='Café Aurora' category=2 \
            latitude=38.711. key= sets null; key:=JSON takes a JSON literal (title:='""' is the empty string); \
            id=ID gives the id (required for entities whose ids are client-chosen).
            """)

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The entity.")
    var entity: String

    @Argument(help: ArgumentHelp("Attribute values.", valueName: "key=value"))
    var values: [String] = []

    func run() async throws {
        let address = try self.connection.address()
        let (entityName, arguments) = (self.entity, self.values)
        try await ServerConnection.with(address) { connection in
            let (schema, _) = try await connection.schema()
            let entity = try schema.cliEntity(entityName)
            let assignments = try Assignments(parsing: arguments, for: entity, allowID: true)
            let result = try await connection.apply([
                WriteOperation(kind: .insert, entity: entity.name, id: assignments.id, values: assignments.values)
            ])
            Terminal.printLine(result.rows.first?.id ?? assignments.id ?? "")
        }
    }
}

/// `meridian update ENTITY ID key=value…`: changes the given attributes of a row and prints the commit seq.
struct UpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Change attributes of a row and print the commit seq.",
        discussion: "Attributes not named keep their values. key= sets null.")

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var version: ExpectedVersionOption

    @Argument(help: "The entity.")
    var entity: String

    @Argument(help: "The row's id.")
    var id: String

    @Argument(help: ArgumentHelp("Attribute values.", valueName: "key=value"))
    var values: [String] = []

    func run() async throws {
        try await writeOne(
            .update, entity: self.entity, id: self.id, arguments: self.values,
            expectedVersion: self.version.expectVersion, connection: self.connection)
    }
}

/// `meridian upsert ENTITY ID key=value…`: inserts the row, or updates it if the id exists; prints the commit seq.
struct UpsertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upsert",
        abstract: "Insert a row with this id, or update it if it exists; print the commit seq.")

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var version: ExpectedVersionOption

    @Argument(help: "The entity.")
    var entity: String

    @Argument(help: "The row's id.")
    var id: String

    @Argument(help: ArgumentHelp("Attribute values.", valueName: "key=value"))
    var values: [String] = []

    func run() async throws {
        try await writeOne(
            .upsert, entity: self.entity, id: self.id, arguments: self.values,
            expectedVersion: self.version.expectVersion, connection: self.connection)
    }
}

/// `meridian delete ENTITY ID`: deletes a row and prints the commit seq.
struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a row and print the commit seq.")

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var version: ExpectedVersionOption

    @Argument(help: "The entity.")
    var entity: String

    @Argument(help: "The row's id.")
    var id: String

    func run() async throws {
        try await writeOne(
            .delete, entity: self.entity, id: self.id, arguments: [],
            expectedVersion: self.version.expectVersion, connection: self.connection)
    }
}

/// `--expect-version N`: optimistic locking for update, upsert and delete.
struct ExpectedVersionOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Reject the write (exit 4) unless the row is at this version.", valueName: "version"))
    var expectVersion: Int64?
}

/// Sends one update, upsert or delete and prints the commit seq.
private func writeOne(
    _ kind: WriteOperation.Kind,
    entity entityName: String,
    id: String,
    arguments: [String],
    expectedVersion: Int64?,
    connection options: ConnectionOptions
) async throws {
    let address = try options.address()
    try await ServerConnection.with(address) { connection in
        let (schema, _) = try await connection.schema()
        let entity = try schema.cliEntity(entityName)
        let assignments = try Assignments(parsing: arguments, for: entity, allowID: false)
        let result = try await connection.apply([
            WriteOperation(
                kind: kind, entity: entity.name, id: id, values: assignments.values, expectedVersion: expectedVersion)
        ])
        Terminal.printLine(String(result.seq))
    }
}
