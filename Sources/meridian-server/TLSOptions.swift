// The server's TLS options.

import ArgumentParser
import Foundation
import MeridianServer
import NIOSSL

/// `--tls-cert`, `--tls-key`, `--tls-client-ca`, `--tls-client-auth`.
struct TLSOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The certificate chain to serve TLS with (PEM, leaf first); read again every --tls-reload-interval, so a renewed certificate is used by new connections.",
            valueName: "path"))
    var tlsCert: String?

    @Option(help: ArgumentHelp("The certificate's private key (PEM).", valueName: "path"))
    var tlsKey: String?

    @Option(
        help: ArgumentHelp(
            "How often --tls-cert and --tls-key are read again: seconds, or a number with ms, s, m, h or d.",
            valueName: "duration"))
    var tlsReloadInterval = "10s"

    @Option(help: ArgumentHelp("The CA certificates (PEM) that sign client certificates.", valueName: "path"))
    var tlsClientCa: String?

    @Option(
        help: ArgumentHelp(
            "Whether clients must present a certificate signed by --tls-client-ca: none or require (optional is not supported yet).",
            valueName: "none|optional|require"))
    var tlsClientAuth = "none"

    func validate() throws {
        guard MeridianServerCommand.duration(self.tlsReloadInterval) != nil else {
            throw ValidationError(
                "--tls-reload-interval must be a positive number of seconds, or a number with ms, s, m, h or d; not '\(self.tlsReloadInterval)'"
            )
        }
        guard (self.tlsCert == nil) == (self.tlsKey == nil) else {
            throw ValidationError("--tls-cert and --tls-key go together")
        }
        switch self.tlsClientAuth {
        case "none": break
        case "require":
            guard self.tlsCert != nil else {
                throw ValidationError("--tls-client-auth require needs --tls-cert and --tls-key")
            }
            guard self.tlsClientCa != nil else {
                throw ValidationError("--tls-client-auth require needs --tls-client-ca FILE")
            }
        case "optional":
            throw ValidationError(
                "--tls-client-auth optional is not supported yet (the gRPC transport verifies client certificates "
                    + "only when it requires them); use none or require")
        default:
            throw ValidationError("--tls-client-auth must be none, optional or require; not '\(self.tlsClientAuth)'")
        }
        if self.tlsClientCa != nil, self.tlsClientAuth == "none" {
            throw ValidationError("--tls-client-ca is used with --tls-client-auth require")
        }
    }

    /// The configuration, its files read once to fail at start rather than at the first connection.
    func configuration() throws(TLSFileError) -> ServerTLS? {
        guard let cert = self.tlsCert, let key = self.tlsKey else { return nil }
        try Self.checkCertificates(cert, "the certificate")
        do {
            _ = try NIOSSLPrivateKey(file: key, format: .pem)
        } catch {
            throw TLSFileError("cannot read the private key \(key): \(error)")
        }
        if let ca = self.tlsClientCa { try Self.checkCertificates(ca, "the client CA") }
        return ServerTLS(
            certificatePath: cert, keyPath: key, clientCAPath: self.tlsClientCa,
            clientAuthentication: self.tlsClientAuth == "require" ? .require : .none,
            reloadInterval: MeridianServerCommand.duration(self.tlsReloadInterval) ?? .seconds(10))
    }
}

extension TLSOptions {
    /// Reads a PEM file of certificates, refusing one that holds none.
    static func checkCertificates(_ path: String, _ what: String) throws(TLSFileError) {
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            throw TLSFileError("cannot read \(what) \(path): \(error)")
        }
        guard !certificates.isEmpty else { throw TLSFileError("\(path) holds no PEM certificate") }
    }
}

struct TLSFileError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
