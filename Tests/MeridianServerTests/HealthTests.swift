// gRPC's standard health service on the main port: Watch (Check is also exercised by DiskFaultTests, on a full
// disk).

import GRPCCore
import MeridianProto
import MeridianServer
import MeridianTestSupport
import Testing

@Suite("Health service", .timeLimit(.minutes(2)))
struct HealthTests {
    @Test("Watch says SERVING, then NOT_SERVING when the server shuts down, and ends; an unknown service is named so")
    func watch() async throws {
        let store = try Fixtures.store()
        let configuration = Fixtures.configuration { $0.healthProbeInterval = .milliseconds(100) }
        try await withTestServer(store: store, configuration: configuration) { server, port in
            try await withHTTP2Client(port: port) { grpc in
                let health = Grpc_Health_V1_Health.Client(wrapping: grpc)
                var unknown = Grpc_Health_V1_HealthCheckRequest()
                unknown.service = "no.such.Service"
                let first = try await health.watch(unknown) { response in
                    var messages = response.messages.makeAsyncIterator()
                    return try await messages.next()?.status
                }
                #expect(first == .serviceUnknown)

                var request = Grpc_Health_V1_HealthCheckRequest()
                request.service = "meridian.v1.Meridian"
                let statuses = try await health.watch(request) { response in
                    var statuses: [Grpc_Health_V1_HealthCheckResponse.ServingStatus] = []
                    for try await message in response.messages {
                        statuses.append(message.status)
                        // Once it said SERVING, the server shuts down: the watch must say so, then end (a graceful
                        // shutdown waits for open calls, so a watch that never ended would hold it).
                        if message.status == .serving { server.beginGracefulShutdown() }
                    }
                    return statuses
                }
                #expect(statuses == [.serving, .notServing])
            }
        }
    }
}
