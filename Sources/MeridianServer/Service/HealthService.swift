// MARK: - Health: gRPC's standard health service on the main port

internal import GRPCCore
internal import Logging
internal import MeridianProto
internal import MeridianStore
internal import Synchronization

/// Whether the server can do its job: the store takes writes (a probe commit now and then), the fan-out runs, and
/// the server is not shutting down.
final class ServerHealth: Sendable {
    private let hub: Hub
    private let logger: Logger
    /// Why the last write probe failed, or `nil` when it took.
    private let unwritable = Mutex<String?>(nil)

    init(hub: Hub, logger: Logger) {
        self.hub = hub
        self.logger = logger
    }

    /// Whether the server is shutting down.
    var isShuttingDown: Bool { self.hub.state.withLock { $0.shuttingDown } }

    /// Why the server is not serving, or `nil` when it is.
    var problem: String? {
        let hubProblem = self.hub.state.withLock { state -> String? in
            if state.shuttingDown { return "the server is shutting down" }
            if state.failure != nil { return "the fan-out stopped (Sync is unavailable until the server restarts)" }
            return nil
        }
        return hubProblem ?? self.unwritable.withLock { $0 }
    }

    /// Commits a write probe and records whether the store took it; a change either way is logged.
    func probe(_ store: Store) async {
        let reason: String?
        do {
            try await store.probeWrite()
            reason = nil
        } catch {
            reason = (error as? StoreError)?.message ?? "\(error)"
        }
        let previous = self.unwritable.withLock { unwritable in
            defer { unwritable = reason }
            return unwritable
        }
        if let reason, previous == nil {
            self.logger.warning("the store does not take writes; health checks say NOT_SERVING: \(reason)")
        } else if reason == nil, previous != nil {
            self.logger.info("the store takes writes again; health checks say SERVING")
        }
    }
}

/// `grpc.health.v1.Health`: the overall status (service `""`) and `meridian.v1.Meridian`'s, which are the same.
/// `grpc_health_probe`, Kubernetes gRPC probes and grpcio-health-checking use it as they are.
struct HealthService: Grpc_Health_V1_Health.SimpleServiceProtocol {
    /// The services a check may name.
    static let services: Set<String> = ["", "meridian.v1.Meridian"]

    let health: ServerHealth
    /// How often `Watch` looks at the status.
    let watchInterval: Duration

    func status(of service: String) -> Grpc_Health_V1_HealthCheckResponse.ServingStatus {
        guard Self.services.contains(service) else { return .serviceUnknown }
        return self.health.problem == nil ? .serving : .notServing
    }

    func check(
        request: Grpc_Health_V1_HealthCheckRequest, context: ServerContext
    ) async throws -> Grpc_Health_V1_HealthCheckResponse {
        guard Self.services.contains(request.service) else {
            throw RPCError(code: .notFound, message: "no service '\(request.service)' on this server")
        }
        var response = Grpc_Health_V1_HealthCheckResponse()
        response.status = self.status(of: request.service)
        return response
    }

    func watch(
        request: Grpc_Health_V1_HealthCheckRequest, response: RPCWriter<Grpc_Health_V1_HealthCheckResponse>,
        context: ServerContext
    ) async throws {
        var sent: Grpc_Health_V1_HealthCheckResponse.ServingStatus?
        while !Task.isCancelled {
            let status = self.status(of: request.service)
            if status != sent {
                var message = Grpc_Health_V1_HealthCheckResponse()
                message.status = status
                try await response.write(message)
                sent = status
            }
            // A graceful shutdown waits for open calls: the watch ends once it said NOT_SERVING.
            if self.health.isShuttingDown { return }
            try await Task.sleep(for: self.watchInterval)
        }
    }
}
