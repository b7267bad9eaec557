// MARK: - Wire inputs: valid requests, then broken

internal import MeridianCore
internal import MeridianProto
internal import SwiftProtobuf

/// Makes wire inputs from the served schema: a valid request for a random method, then (mostly) broken by random
/// bytes, a byte-level or a structure-aware mutation, or a typed mutation (unknown enum values, deep predicates, huge
/// strings, many operations).
struct WireGenerator {
    let schema: Schema
    /// A size over the server's request limit.
    let oversize: Int

    /// The input for one random stream.
    func input(random: inout FuzzRandom) -> WireInput {
        let method = random.pick(WireMethod.allCases)
        var messages = self.validMessages(method, random: &random)
        switch random.below(20) {
        case 0, 1:  // random bytes in place of one message
            let i = random.below(messages.count)
            messages[i] = random.bytes(random.length(upTo: 512))
        case 2...9:  // structure-aware mutation of one message
            let i = random.below(messages.count)
            for _ in 0..<random.within(1...2) {
                messages[i] = ProtoWire.mutate(messages[i], random: &random, oversize: self.oversize)
            }
        case 10...13:  // byte-level mutation of one message
            let i = random.below(messages.count)
            messages[i] = ByteMutator.mutate(messages[i], random: &random)
        case 14...17:  // typed mutation: valid protobuf, hostile content
            messages = self.hostileMessages(method, random: &random)
        case 18:  // a Sync stream without its Hello, or with two
            if method == .sync, messages.count > 1 {
                if random.oneIn(2) { messages.removeFirst() } else { messages.insert(messages[0], at: 1) }
            }
        default:  // unmodified: the valid path must answer too
            break
        }
        return WireInput(method: method, messages: messages)
    }

    // MARK: - Valid requests

    func validMessages(_ method: WireMethod, random: inout FuzzRandom) -> [[UInt8]] {
        switch method {
        case .sync:
            var requests = [Self.hello(random: &random)]
            for _ in 0..<random.within(1...3) { requests.append(self.syncRequest(random: &random)) }
            return requests.map(Self.encode)
        case .apply:
            return [Self.encode(self.applyRequest(random: &random))]
        case .applyStream:
            return (0..<random.within(1...3)).map { _ in Self.encode(self.applyRequest(random: &random)) }
        case .query:
            var request = Meridian_V1_QueryRequest()
            request.fetch = self.fetch(random: &random)
            if random.oneIn(2) { request.maxChunkBytes = UInt32(random.pick([1, 100, 4_096, Int(UInt32.max)])) }
            return [Self.encode(request)]
        case .getSchema:
            return [Self.encode(Meridian_V1_GetSchemaRequest())]
        }
    }

    /// The message's bytes, with map entries in a deterministic order (Swift's dictionaries are not), so that a seed
    /// replays the same bytes in every process.
    static func encode(_ message: some SwiftProtobuf.Message) -> [UInt8] {
        var options = BinaryEncodingOptions()
        options.useDeterministicOrdering = true
        return (try? message.serializedBytes(options: options)) ?? []
    }

    static func hello(random: inout FuzzRandom) -> Meridian_V1_SyncRequest {
        var hello = Meridian_V1_Hello()
        hello.clientName = "fuzz"
        // Mostly the version this code speaks; sometimes one before it (refused) or after it (served at ours).
        hello.protocolVersion =
            random.oneIn(12) ? UInt32(random.pick([0, 2, Int(UInt32.max)])) : ProtocolVersion.current
        if random.oneIn(4) { hello.resumeFromSeq = random.interestingInteger() }
        if random.oneIn(4) { hello.maxBatchBytes = UInt32(random.pick([0, 1, 64, 1 << 20, Int(UInt32.max)])) }
        if random.oneIn(6) { hello.schemaFingerprint = random.pick(["", "0000000000000000", "zz"]) }
        var request = Meridian_V1_SyncRequest()
        request.hello = hello
        return request
    }

    func syncRequest(random: inout FuzzRandom) -> Meridian_V1_SyncRequest {
        var request = Meridian_V1_SyncRequest()
        let id = random.pick(["a", "b", "", "fuzz-probe"])
        switch random.below(6) {
        case 0:
            var replace = Meridian_V1_Replace()
            replace.subscriptionID = id
            replace.fetch = self.fetch(random: &random)
            request.replace = replace
        case 1:
            var unsubscribe = Meridian_V1_Unsubscribe()
            unsubscribe.subscriptionID = id
            request.unsubscribe = unsubscribe
        case 2:
            var ack = Meridian_V1_Ack()
            ack.seq = random.interestingInteger()
            request.ack = ack
        default:
            var subscribe = Meridian_V1_Subscribe()
            subscribe.subscriptionID = id
            subscribe.fetch = self.fetch(random: &random)
            subscribe.resume = random.oneIn(4)
            request.subscribe = subscribe
        }
        return request
    }

    func fetch(random: inout FuzzRandom) -> Meridian_V1_FetchRequest {
        guard !self.schema.entities.isEmpty, !random.oneIn(20) else {
            return Meridian_V1_FetchRequest(entity: random.pick(["", "Planet", "point"]))
        }
        let entity = random.pick(self.schema.entities)
        let names = [EntitySchema.idAttribute] + entity.attributes.map(\.name)
        var sort: [WireSortKey] = []
        for _ in 0..<random.below(3) { sort.append((random.pick(names), random.oneIn(2))) }
        let predicate = random.oneIn(4) ? "" : ValueGenerator.predicate(entity, random: &random)
        var variables: [String: WireVariable] = [:]
        if random.oneIn(2) {
            variables["v"] =
                random.oneIn(3)
                ? .list([ValueGenerator.value(.int, random: &random)])
                : .value(ValueGenerator.value(random.pick(AttributeType.allCases), random: &random))
        }
        return Meridian_V1_FetchRequest(
            entity: entity.name, predicate: predicate, variables: variables, sort: sort,
            sectionKey: random.oneIn(4) ? sort.first?.attribute ?? random.pick(names) : nil,
            limit: random.oneIn(4) ? UInt32(random.pick([0, 1, 5, Int(UInt32.max)])) : nil)
    }

    func applyRequest(random: inout FuzzRandom) -> Meridian_V1_ApplyRequest {
        var request = Meridian_V1_ApplyRequest()
        request.clientTag = "fuzz"
        request.conflictPolicy = random.oneIn(2) ? .storeWins : .clientWins
        for _ in 0..<random.within(1...3) { request.operations.append(self.operation(random: &random)) }
        return request
    }

    func operation(random: inout FuzzRandom) -> Meridian_V1_Operation {
        guard let entity = self.schema.entities.isEmpty ? nil : random.pick(self.schema.entities) else {
            return Meridian_V1_Operation(kind: .insert, entity: "Planet")
        }
        let kind = random.pick([Meridian_V1_Operation.Kind.insert, .update, .upsert, .delete])
        var values: [String: Value] = [:]
        if kind != .delete {
            for attribute in entity.attributes where attribute.isRequiredOnInsert || random.oneIn(2) {
                values[attribute.name] = ValueGenerator.value(attribute.type, random: &random)
            }
        }
        let id = kind == .insert && random.oneIn(2) ? nil : "fuzz-\(random.below(8))"
        return Meridian_V1_Operation(
            kind: kind, entity: entity.name, id: id, values: values,
            expectedVersion: random.oneIn(4) ? random.interestingInteger() : nil)
    }

    // MARK: - Hostile but well-formed requests

    func hostileMessages(_ method: WireMethod, random: inout FuzzRandom) -> [[UInt8]] {
        switch method {
        case .sync:
            var request = self.syncRequest(random: &random)
            if case .subscribe(var subscribe) = request.kind {
                subscribe.fetch = self.hostileFetch(subscribe.fetch, random: &random)
                request.subscribe = subscribe
            } else if case .replace(var replace) = request.kind {
                replace.fetch = self.hostileFetch(replace.fetch, random: &random)
                request.replace = replace
            }
            return [Self.encode(Self.hello(random: &random)), Self.encode(request)]
        case .apply, .applyStream:
            var request = self.applyRequest(random: &random)
            switch random.below(5) {
            case 0:
                request.operations[0].kind = .UNRECOGNIZED(random.pick([5, 99, -1, Int(Int32.max)]))
            case 1:
                request.conflictPolicy = .UNRECOGNIZED(random.pick([3, 77, -5]))
            case 2:
                let count = random.pick([0, 1_000, 5_000])
                request.operations = (0..<count).map { _ in self.operation(random: &random) }
            case 3:
                var value = Meridian_V1_Value()
                value.doubleValue = .nan
                request.operations[0].values[random.pick(["title", "latitude", "nope", ""])] = value
            default:
                request.operations[0].values["title"] = Meridian_V1_Value(
                    .string(String(repeating: "x", count: random.pick([10_000, self.oversize / 2]))))
            }
            return [Self.encode(request)]
        case .query:
            var request = Meridian_V1_QueryRequest()
            request.fetch = self.hostileFetch(self.fetch(random: &random), random: &random)
            return [Self.encode(request)]
        case .getSchema:
            var fields = ProtoWire.fields(Self.encode(Meridian_V1_GetSchemaRequest())) ?? []
            fields.append(ProtoWire.Field(number: 1, wireType: ProtoWire.lengthType, payload: random.bytes(16)))
            return [ProtoWire.encode(fields)]
        }
    }

    func hostileFetch(_ fetch: Meridian_V1_FetchRequest, random: inout FuzzRandom) -> Meridian_V1_FetchRequest {
        var fetch = fetch
        switch random.below(6) {
        case 0:
            let depth = random.pick([50, 65, 1_000, 20_000])
            fetch.predicate =
                String(repeating: "(", count: depth) + "id == \"a\"" + String(repeating: ")", count: depth)
        case 1:
            fetch.predicate = String(repeating: "NOT ", count: random.pick([65, 5_000])) + "id == \"a\""
        case 2:
            fetch.predicate = (0..<random.pick([100, 2_000])).map { "id == \"\($0)\"" }.joined(separator: " OR ")
        case 3:
            fetch.sort = (0..<random.pick([100, 3_000])).map { _ in
                var key = Meridian_V1_SortKey()
                key.attribute = "id"
                return key
            }
        case 4:
            var list = Meridian_V1_ValueList()
            list.values = (0..<random.pick([1_000, 10_000, 40_000])).map { Meridian_V1_Value(.int(Int64($0))) }
            var variable = Meridian_V1_Variable()
            variable.list = list
            fetch.variables["v"] = variable
            fetch.predicate = "id IN $v"
        default:
            fetch.predicate = String(decoding: random.bytes(random.length(upTo: 200)), as: UTF8.self)
        }
        return fetch
    }
}
