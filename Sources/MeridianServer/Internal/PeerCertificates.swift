// MARK: - PeerCertificates: the subject of each mutual-TLS connection's client certificate

internal import NIOCore
internal import NIOSSL
internal import SwiftASN1
internal import Synchronization
internal import X509

/// The subject each open mutual-TLS connection proved with its client certificate, by the address gRPC names the
/// peer with (`ipv4:127.0.0.1:54321`, a call's `ServerContext.remotePeer`), so that a call on the connection can be
/// authenticated by its certificate (`--auth mtls`).
///
/// Filled when a connection's first call opens (its TLS handshake is done by then, the certificate verified against
/// `--tls-client-ca`), emptied when the connection closes.
final class PeerCertificates: Sendable {
    private let subjects = Mutex<[String: String]>([:])

    /// The subject of the connection a call came on, if it presented a certificate with one.
    func subject(ofPeer peer: String) -> String? {
        self.subjects.withLock { $0[peer] }
    }

    /// Records the subject of `connection`'s client certificate, once, until the connection closes.
    func register(_ connection: any Channel) {
        guard let address = connection.remoteAddress, let key = Self.peerName(address),
            self.subjects.withLock({ $0[key] == nil }),
            let tls = try? connection.pipeline.syncOperations.handler(type: NIOSSLHandler.self),
            let certificate = tls.peerCertificate,
            let subject = Self.subject(of: certificate)
        else { return }
        self.subjects.withLock { $0[key] = subject }
        connection.closeFuture.whenComplete { _ in _ = self.subjects.withLock { $0.removeValue(forKey: key) } }
    }

    /// The peer's name as grpc-swift-nio-transport writes it in `ServerContext.remotePeer`.
    static func peerName(_ address: SocketAddress) -> String? {
        switch address {
        case .v4(let v4): "ipv4:\(v4.host):\(address.port ?? 0)"
        case .v6(let v6): "ipv6:[\(v6.host)]:\(address.port ?? 0)"
        case .unixDomainSocket: nil
        }
    }

    /// The certificate's subject for the rules: its first subject alternative name — a URI (such as a SPIFFE id),
    /// then an email address, then a DNS name — else its common name.
    static func subject(of certificate: NIOSSLCertificate) -> String? {
        guard let der = try? certificate.toDERBytes(), let parsed = try? Certificate(derEncoded: der) else {
            return nil
        }
        if let names = try? parsed.extensions.subjectAlternativeNames {
            var uri: String?
            var email: String?
            var dns: String?
            for name in names {
                switch name {
                case .uniformResourceIdentifier(let value): uri = uri ?? value
                case .rfc822Name(let value): email = email ?? value
                case .dnsName(let value): dns = dns ?? value
                default: break
                }
            }
            if let subject = uri ?? email ?? dns { return subject }
        }
        for attribute in parsed.subject.flatMap({ $0 }) where attribute.type == .RDNAttributeType.commonName {
            return attribute.value.description
        }
        return nil
    }
}
