// A deliberately broken Meridian server, for proving that the harness flags what it must.

import GRPCCore
import GRPCNIOTransportHTTP2
import MeridianProto
import SwiftProtobuf
import Testing

@testable import MeridianFuzz

/// Speaks `meridian.v1.Meridian` badly: Apply throws a plain error (an UNKNOWN status), Query never answers,
/// ApplyStream ends OK without answering, and Sync says Welcome, answers only the witness's subscription with an
/// empty snapshot and then delivers nothing. GetSchema answers the fuzz schema, so a campaign can start.
struct BrokenServer: RegistrableRPCService {
    private struct Boom: Error {}

    /// Runs the server on 127.0.0.1 with a port the OS picks, for the duration of `body`, then cancels it (its
    /// handlers that never answer are cancelled with it).
    static func run<Result: Sendable>(_ body: (Int) async throws -> Result) async throws -> Result {
        let transport = HTTP2ServerTransport.Posix(
            address: .ipv4(host: "127.0.0.1", port: 0), transportSecurity: .plaintext)
        let server = GRPCServer(transport: transport, services: [BrokenServer()])
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { group.cancelAll() }
            let port = try #require(try await transport.listeningAddress.ipv4?.port)
            return try await body(port)
        }
    }

    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        router.registerHandler(
            forMethod: WireMethod.getSchema.descriptor, deserializer: RawSerializer(), serializer: RawSerializer(),
            handler: { request, _ in
                for try await _ in request.messages {}
                return StreamingServerResponse(
                    single: ServerResponse(
                        message: WireGenerator.encode(Meridian_V1_GetSchemaResponse(FuzzSchema.schema))))
            })
        router.registerHandler(
            forMethod: WireMethod.apply.descriptor, deserializer: RawSerializer(), serializer: RawSerializer(),
            handler: { _, _ in throw Boom() })
        router.registerHandler(
            forMethod: WireMethod.query.descriptor, deserializer: RawSerializer(), serializer: RawSerializer(),
            handler: { _, _ in
                try await Task.sleep(for: .seconds(60))
                return StreamingServerResponse(error: RPCError(code: .internalError, message: "unreachable"))
            })
        router.registerHandler(
            forMethod: WireMethod.applyStream.descriptor, deserializer: RawSerializer(), serializer: RawSerializer(),
            handler: { request, _ in
                StreamingServerResponse { _ in
                    for try await _ in request.messages {}
                    return [:]
                }
            })
        router.registerHandler(
            forMethod: WireMethod.sync.descriptor, deserializer: RawSerializer(), serializer: RawSerializer(),
            handler: { request, _ in
                StreamingServerResponse { writer in
                    for try await bytes in request.messages {
                        guard let message = try? Meridian_V1_SyncRequest(serializedBytes: bytes) else { continue }
                        var response = Meridian_V1_SyncResponse()
                        switch message.kind {
                        case .hello:
                            response.welcome = Meridian_V1_Welcome()
                        case .subscribe(let subscribe) where subscribe.subscriptionID == "witness":
                            response.snapshotChunk.subscriptionID = "witness"
                            response.snapshotChunk.epoch = 1
                            response.snapshotChunk.last = true
                            try await writer.write(WireGenerator.encode(response))
                            var ready = Meridian_V1_SubscriptionDelta()
                            ready.subscriptionID = "witness"
                            ready.epoch = 1
                            ready.snapshot = true
                            response = Meridian_V1_SyncResponse()
                            response.batch.deltas = [ready]
                        default:
                            continue
                        }
                        try await writer.write(WireGenerator.encode(response))
                    }
                    return [:]
                }
            })
    }
}
