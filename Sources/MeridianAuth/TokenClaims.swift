// MARK: - TokenClaims

internal import JWTKit
internal import MeridianCore

/// A JWT's payload with every claim kept (`sub`, `exp` and the application's `team`, `role`, …): the rules may use any
/// of them, so none is dropped by a fixed payload type. The registered claims are checked by ``TokenVerifier``, not
/// here, so that each check has its configured value (issuer, audience, leeway, lifetime).
struct TokenClaims: JWTPayload {
    var extra: [String: ClaimValue] = [:]

    init() {}

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        for key in container.allKeys {
            self.extra[key.stringValue] = try container.decode(ClaimValue.self, forKey: key)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyKey.self)
        for (name, value) in self.extra.sorted(by: { $0.key < $1.key }) {
            try container.encode(value, forKey: AnyKey(stringValue: name))
        }
    }

    /// Nothing here: ``TokenVerifier`` checks `exp`, `nbf`, `iss`, `aud` and the lifetime itself, always.
    func verify(using algorithm: some JWTAlgorithm) async throws {}

    /// A numeric date claim (`exp`, `nbf`, `iat`) in seconds since 1970; `nil` when absent or not a number.
    func seconds(_ name: String) -> Double? {
        switch self.extra[name] {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    /// `aud` as a list (a single string or an array of strings).
    var audiences: [String] {
        switch self.extra["aud"] {
        case .string(let s): [s]
        case .list(let items): items.compactMap(\.stringValue)
        default: []
        }
    }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
