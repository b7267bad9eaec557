import GRPCCore
import MeridianCore
import MeridianProto
import SwiftProtobuf
import Testing

/// Fetch requests, operations, conflict policies and error details.
@Suite struct RequestProtoTests {
    @Test("a fetch request keeps sort directions, section key and limit; absent ones stay absent")
    func fetchRequest() throws {
        let fetch = Meridian_V1_FetchRequest(
            entity: "Point",
            predicate: "title BEGINSWITH[cd] $p",
            variables: ["p": .value("caf")],
            sort: [("category", true), ("title", false)],
            sectionKey: "category",
            limit: 50
        )
        let decoded = try Meridian_V1_FetchRequest(serializedBytes: try fetch.serializedBytes() as [UInt8])
        #expect(decoded.sortKeys.map(\.attribute) == ["category", "title"])
        #expect(decoded.sortKeys.map(\.ascending) == [true, false])
        #expect(decoded.sort[0].descending == false)
        #expect(decoded.sectionKeyIfPresent == "category")
        #expect(try decoded.limitIfPresent() == 50)

        let plain = Meridian_V1_FetchRequest(entity: "Point")
        #expect(plain.sectionKeyIfPresent == nil)
        #expect(try plain.limitIfPresent() == nil)
        var zero = plain
        zero.limit = 0
        let error = try #require(throws: ProtoConversionError.self) { try zero.limitIfPresent() }
        #expect(error.code == .invalidRequest)
    }

    @Test("operations round-trip, set-to-null included")
    func operations() throws {
        let request = Meridian_V1_ApplyRequest.with {
            $0.operations = [
                Meridian_V1_Operation(kind: .insert, entity: "Point", values: ["title": "A", "category": 2]),
                Meridian_V1_Operation(
                    kind: .update, entity: "Point", id: "p1", values: ["latitude": .null], expectedVersion: 4
                ),
                Meridian_V1_Operation(kind: .upsert, entity: "Author", id: "a1", values: ["firstName": "Ada"]),
                Meridian_V1_Operation(kind: .delete, entity: "Point", id: "p2"),
            ]
            $0.conflictPolicy = .clientWins
        }
        let decoded = try Meridian_V1_ApplyRequest(serializedBytes: try request.serializedBytes() as [UInt8])
        let operations = try decoded.decodedOperations()
        #expect(operations.map(\.kind) == [.insert, .update, .upsert, .delete])
        #expect(operations[0].id == nil)
        #expect(operations[0].values == ["title": "A", "category": 2])
        #expect(operations[1].id == "p1")
        #expect(operations[1].expectedVersion == 4)
        #expect(operations[1].values["latitude"]?.isNull == true)
        #expect(operations[2].expectedVersion == nil)
        #expect(operations[3].values.isEmpty)
        #expect(try ConflictPolicy(decoded.conflictPolicy) == .clientWins)
        #expect(try ConflictPolicy(Meridian_V1_ConflictPolicy.unspecified) == .storeWins)
        #expect(throws: ProtoConversionError.self) { try ConflictPolicy(Meridian_V1_ConflictPolicy.UNRECOGNIZED(9)) }
        for kind in WriteOperation.Kind.allCases {
            #expect(try WriteOperation.Kind(Meridian_V1_Operation.Kind(kind)) == kind)
            let operation = WriteOperation(kind: kind, entity: "Point", id: "p", expectedVersion: 2)
            #expect(try Meridian_V1_Operation(operation).decoded() == operation)
        }
        for policy in [ConflictPolicy.storeWins, .clientWins] {
            #expect(try ConflictPolicy(Meridian_V1_ConflictPolicy(policy)) == policy)
        }
    }

    @Test(
        "malformed operations are rejected with the operation's index",
        arguments: [
            (Meridian_V1_Operation(kind: .unspecified, entity: "Point", id: "x"), "operation kind is not set"),
            (
                Meridian_V1_Operation(kind: .update, entity: "Point", values: ["title": "A"]),
                "update of Point needs an id"
            ),
            (Meridian_V1_Operation(kind: .delete, entity: "Point"), "delete of Point needs an id"),
            (
                Meridian_V1_Operation(kind: .delete, entity: "Point", id: "x", values: ["title": "A"]),
                "delete of Point must not carry values"
            ),
            (
                Meridian_V1_Operation(kind: .insert, entity: "Point", values: ["latitude": .double(.nan)]),
                #"attribute "latitude": NaN is not a valid double"#
            ),
        ]
    )
    func malformedOperation(operation: Meridian_V1_Operation, message: String) throws {
        let request = Meridian_V1_ApplyRequest.with {
            $0.operations = [Meridian_V1_Operation(kind: .insert, entity: "Point", values: ["title": "ok"]), operation]
        }
        let error = try #require(throws: ProtoConversionError.self) { try request.decodedOperations() }
        #expect(error.operationIndex == 1)
        #expect(error.message == "operation 1: " + message)
        let detail = Meridian_V1_ErrorDetail(error)
        #expect(detail.operationIndex == 1)
        #expect(detail.code == (error.code == .invalidValue ? .validation : .malformedRequest))
    }

    @Test("an error detail travels in an RPCError's trailing metadata and maps to its status code")
    func errorDetailInStatus() throws {
        let detail = Meridian_V1_ErrorDetail(
            .conflict, "Point p1: title changed since version 3", operationIndex: 0, attributes: ["title"],
            entity: "Point", id: "p1", currentVersion: 5
        )
        let error = RPCError(detail)
        #expect(error.code == .aborted)
        #expect(error.message == detail.message)
        #expect(error.errorDetail == detail)
        #expect(RPCError(code: .unavailable, message: "no detail").errorDetail == nil)

        let predicate = Meridian_V1_ErrorDetail(.badPredicate, "unknown attribute 'titel'", position: 0, length: 5)
        #expect(RPCError(predicate).code == .invalidArgument)
        #expect(RPCError(predicate).errorDetail?.position == 0)
        #expect(Meridian_V1_ErrorDetail(.tooManySubscriptions, "").rpcCode == .resourceExhausted)
        #expect(Meridian_V1_ErrorDetail(.shuttingDown, "").rpcCode == .unavailable)
        #expect(Meridian_V1_ErrorDetail(.notFound, "").rpcCode == .notFound)
    }

    @Test("an ApplyRequest serialized by a Python client (grpcio-tools, from Protos/) decodes to the same operations")
    func pythonBytesDecode() throws {
        // m.ApplyRequest(operations=[
        //     m.Operation(kind=KIND_INSERT, entity="Point", values={"title": "Café", "latitude": 48.85}),
        //     m.Operation(kind=KIND_UPDATE, entity="Point", id="p1", values={"latitude": null}, expected_version=3),
        // ]).SerializeToString()
        let hex =
            "0a3208011205506f696e7422150a086c61746974756465120919cdcccccccc6c484022100a057469746c6512072205436166c3a9"
            + "0a1f08021205506f696e741a027031220e0a086c61746974756465120208002803"
        var bytes: [UInt8] = []
        var digits = hex.utf8.makeIterator()
        while let high = digits.next(), let low = digits.next() {
            bytes.append(UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)!)
        }
        let operations = try Meridian_V1_ApplyRequest(serializedBytes: bytes).decodedOperations()
        #expect(operations.count == 2)
        #expect(operations[0].kind == .insert)
        #expect(operations[0].id == nil)
        #expect(Identical.values(try #require(operations[0].values["title"]), "Café"))
        #expect(Identical.values(try #require(operations[0].values["latitude"]), .double(48.85)))
        #expect(operations[1].kind == .update)
        #expect(operations[1].id == "p1")
        #expect(operations[1].expectedVersion == 3)
        #expect(Identical.values(try #require(operations[1].values["latitude"]), .null))
    }

    @Test("a sync conversation's messages survive their bytes")
    func syncMessages() throws {
        let subscribe = Meridian_V1_SyncRequest.with {
            $0.subscribe = .with {
                $0.subscriptionID = "map"
                $0.fetch = Meridian_V1_FetchRequest(entity: "Point", predicate: "latitude BETWEEN $lat")
                $0.resume = true
            }
        }
        let request = try Meridian_V1_SyncRequest(serializedBytes: try subscribe.serializedBytes() as [UInt8])
        #expect(request == subscribe)

        let batch = Meridian_V1_SyncResponse.with {
            $0.batch = .with {
                $0.seq = 12
                $0.deltas = [
                    .with {
                        $0.subscriptionID = "map"
                        $0.entered = [Meridian_V1_Row(Row(id: "a", values: ["title": "A"]), version: 1)]
                        $0.left = ["b"]
                        $0.updated = [
                            Meridian_V1_RowUpdate(Row(id: "c", values: ["title": "C"]), version: 2, changed: ["title"])
                        ]
                    }
                ]
            }
        }
        let response = try Meridian_V1_SyncResponse(serializedBytes: try batch.serializedBytes() as [UInt8])
        #expect(response == batch)
        guard case .batch(let decoded) = response.kind else {
            Issue.record("expected a batch")
            return
        }
        #expect(try Row(decoded.deltas[0].entered[0]).values == ["title": "A"])
    }
}
