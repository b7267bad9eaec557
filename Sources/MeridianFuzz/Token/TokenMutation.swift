// MARK: - Mutations of a valid token

internal import Foundation
internal import MeridianAuth
internal import MeridianCore

/// Makes the token campaign's inputs from a valid token.
enum TokenMutation {
    static let base64URLAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Input `random` picks: a method and an `authorization` value made from `valid`.
    static func input(from valid: String, keys: TokenKeys, random: inout FuzzRandom) async throws -> TokenInput {
        let method = random.pick([WireMethod.getSchema, .query, .apply, .sync])
        let token = try await Self.mutate(valid, keys: keys, random: &random)
        let scheme: String
        switch random.below(10) {
        case 0: scheme = "bearer "
        case 1: scheme = "Bearer  "
        case 2: scheme = ""
        case 3: scheme = "Basic "
        default: scheme = "Bearer "
        }
        return TokenInput(method: method, authorization: scheme + token)
    }

    /// One mutation of `valid` (sometimes two stacked).
    static func mutate(_ valid: String, keys: TokenKeys, random: inout FuzzRandom) async throws -> String {
        var token = try await Self.mutateOnce(valid, keys: keys, random: &random)
        if random.oneIn(4) { token = try await Self.mutateOnce(token, keys: keys, random: &random) }
        return token
    }

    static func mutateOnce(_ token: String, keys: TokenKeys, random: inout FuzzRandom) async throws -> String {
        var bytes = Array(token.utf8)
        var parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let now = Int64(Date().timeIntervalSince1970)
        switch random.below(16) {
        case 0:  // one character replaced by another of the alphabet
            guard !bytes.isEmpty else { return token }
            bytes[random.below(bytes.count)] = random.pick(Self.base64URLAlphabet)
            return String(decoding: bytes, as: UTF8.self)
        case 1:  // one bit flipped (may leave ASCII)
            guard !bytes.isEmpty else { return token }
            let i = random.below(bytes.count)
            bytes[i] ^= UInt8(1 << random.below(8))
            return String(decoding: bytes, as: UTF8.self)
        case 2:  // cut short
            return String(decoding: bytes.prefix(random.below(bytes.count)), as: UTF8.self)
        case 3:  // a segment dropped, repeated, or the parts swapped
            guard parts.count == 3 else { return token + "." }
            switch random.below(4) {
            case 0: parts.remove(at: random.below(3))
            case 1: parts.insert(parts[random.below(3)], at: random.below(4))
            case 2: parts.swapAt(0, 1)
            default: parts[2] = ""
            }
            return parts.joined(separator: ".")
        case 4:  // alg none, with and without a signature
            guard parts.count == 3 else { return token }
            parts[0] = Self.encode(#"{"alg":"none","typ":"JWT"}"#)
            if random.oneIn(2) { parts[2] = "" }
            return parts.joined(separator: ".")
        case 5:  // another algorithm named over the same signature
            guard parts.count == 3 else { return token }
            parts[0] = Self.encode(
                #"{"alg":"\#(random.pick(["HS512", "HS384", "RS256", "ES256", "EdDSA", "hs256", ""]))","typ":"JWT"}"#)
            return parts.joined(separator: ".")
        case 6:  // the payload edited under the old signature
            guard parts.count == 3 else { return token }
            let payload = random.pick([
                #"{"sub":"admin","exp":\#(now + 3600)}"#, #"{"sub":"fuzz","exp":\#(now + 999_999_999)}"#,
                #"{"sub":"fuzz"}"#, "{}", "[]", "null",
            ])
            parts[1] = Self.encode(payload)
            return parts.joined(separator: ".")
        case 7:  // a good signature over failing claims
            switch random.below(5) {
            case 0: return try await keys.signer.sign(claims: ["sub": .string("fuzz"), "exp": .int(now - 120)])
            case 1:
                return try await keys.signer.sign(claims: [
                    "sub": .string("fuzz"), "exp": .int(now + 3600), "nbf": .int(now + 3000),
                ])
            case 2: return try await keys.signer.sign(claims: ["sub": .string("fuzz")])
            case 3: return try await keys.signer.sign(claims: ["exp": .int(now + 3600)])
            default:
                return try await keys.signer.sign(claims: ["sub": .string(""), "exp": .int(now + 3600)])
            }
        case 8:  // signed with another key
            return try await keys.otherSigner.sign(subject: "fuzz", claims: [:], lifetime: .seconds(3600))
        case 9:  // a kid the server does not know (an empty kid is no kid: the server's one key, rightly accepted)
            return try await keys.signer.sign(
                claims: ["sub": .string("fuzz"), "exp": .int(now + 3600)], kid: random.pick(["x", "0", "../../etc"]))
        case 10:  // oversized
            return token + String(repeating: random.pick(["A", "."]), count: random.pick([1_000, 20_000, 100_000]))
        case 11:  // whitespace and control characters
            let insert = random.pick([" ", "\t", "\n", "\r\n", "\u{0}", "é"])
            var characters = Array(token)
            characters.insert(contentsOf: insert, at: random.below(characters.count + 1))
            return String(characters)
        case 12:  // base64 instead of base64url, with padding
            return token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "=="
        case 13:  // a segment of random bytes
            guard parts.count == 3 else { return token }
            let junk = (0..<random.within(0...64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            parts[random.below(3)] = Self.encode(junk)
            return parts.joined(separator: ".")
        case 14:  // the header or payload not JSON, or JSON of a surprising shape
            guard parts.count == 3 else { return token }
            parts[random.below(2)] = Self.encode(
                random.pick([
                    "not json", #"{"alg":"HS256","alg":"none"}"#, #"{"alg":["HS256"]}"#, #"{"alg":null}"#,
                    #"{"exp":"9999999999","sub":"fuzz"}"#, #"{"exp":1e400,"sub":"fuzz"}"#,
                    #"{"sub":"fuzz","exp":\#(now + 3600),"exp":1}"#,
                ]))
            return parts.joined(separator: ".")
        default:  // unchanged: the same token must be accepted (the judge checks both ways)
            return token
        }
    }

    static func encode(_ text: String) -> String { Self.encode(Array(text.utf8)) }

    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// base64url (padding optional), or nil.
    static func decode(_ text: Substring) -> [UInt8]? {
        guard text.utf8.allSatisfy({ Self.base64URLAlphabet.contains($0) }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }

    /// Whether `authorization` carries `valid` itself: a bearer token whose three segments decode to the same bytes.
    static func sameToken(_ authorization: String, as valid: String) -> Bool {
        // The scheme and the token are separated by spaces or tabs (HTTP's optional whitespace).
        let token = authorization.split(whereSeparator: { $0 == " " || $0 == "\t" }).last.map(String.init) ?? ""
        let mutated = token.split(separator: ".", omittingEmptySubsequences: false)
        let original = valid.split(separator: ".", omittingEmptySubsequences: false)
        guard mutated.count == 3, original.count == 3 else { return false }
        for (a, b) in zip(mutated, original) {
            guard let x = Self.decode(a), let y = Self.decode(b), x == y else { return false }
        }
        return true
    }
}
