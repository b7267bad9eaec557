// MARK: - Credentials

internal import Foundation
internal import GRPCCore
internal import Synchronization

/// What the client proves its identity with: a token (a JWT or an API key) sent as `authorization: Bearer …` metadata
/// on every call.
///
/// A provider is asked again before the token it gave expires (it reads the JWT's `exp`): new calls carry the new
/// token, and an open `Sync` stream is refreshed in place (`RefreshToken`), keeping its subscriptions.
///
/// ```swift
/// var configuration = try MeridianContainer.Configuration(server: "db.example.com:7400")
/// configuration.credentials = .provider { try await myAuthService.freshToken() }
/// ```
public struct Credentials: Sendable {
    let source: TokenSource

    /// A fixed token (an API key, or a JWT that outlives the program).
    public static func token(_ token: String) -> Credentials {
        Credentials(source: TokenSource(provider: { token }))
    }

    /// A provider of tokens, asked for the first call and again before each token's `exp`.
    public static func provider(_ provider: @escaping @Sendable () async throws -> String) -> Credentials {
        Credentials(source: TokenSource(provider: provider))
    }
}

/// The current token and when to ask for the next: a fifth of its lifetime (at most a minute) before its `exp`.
final class TokenSource: Sendable {
    private struct State {
        var token: String?
        var refreshAt: Date?
    }

    private let provider: @Sendable () async throws -> String
    private let state = Mutex(State())

    init(provider: @escaping @Sendable () async throws -> String) {
        self.provider = provider
    }

    /// The token to send now: the cached one, or a new one once it is due for refresh.
    func current() async throws -> String {
        let cached = self.state.withLock { state -> String? in
            guard let token = state.token else { return nil }
            if let refreshAt = state.refreshAt, refreshAt <= Date() { return nil }
            return token
        }
        if let cached { return cached }
        return try await self.fresh()
    }

    /// A new token from the provider, cached.
    func fresh() async throws -> String {
        let token = try await self.provider()
        let refreshAt = Self.expiry(of: token).map { expiry -> Date in
            let lifetime = max(0, expiry.timeIntervalSinceNow)
            return expiry.addingTimeInterval(-min(60, lifetime / 5))
        }
        self.state.withLock { $0 = State(token: token, refreshAt: refreshAt) }
        return token
    }

    /// The cached token.
    var token: String? { self.state.withLock { $0.token } }

    /// When the cached token is due for refresh (`nil`: never, or no token yet).
    var refreshAt: Date? { self.state.withLock { $0.refreshAt } }

    /// A JWT's `exp`, read without verifying it (the server verifies); `nil` for an API key.
    static func expiry(of token: String) -> Date? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
            let payload = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let exp = (payload["exp"] as? NSNumber)?.doubleValue
        else { return nil }
        return Date(timeIntervalSince1970: exp)
    }
}

/// Adds `authorization: Bearer <token>` to every call.
struct CredentialsInterceptor: ClientInterceptor {
    let source: TokenSource

    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingClientRequest<Input>,
        context: ClientContext,
        next: (StreamingClientRequest<Input>, ClientContext) async throws -> StreamingClientResponse<Output>
    ) async throws -> StreamingClientResponse<Output> {
        var request = request
        request.metadata.replaceOrAddString("Bearer " + (try await self.source.current()), forKey: "authorization")
        return try await next(request, context)
    }
}

extension Credentials? {
    /// The interceptors that send these credentials (none for `nil`).
    var interceptors: [any ClientInterceptor] {
        self.map { [CredentialsInterceptor(source: $0.source)] } ?? []
    }
}
