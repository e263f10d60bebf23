import NIOCore
import NIOSSL
import TroupeObserver

/// TLS for TroupeObserver's page (HTTPS and secure WebSockets): what lets an observer serve an
/// address other than loopback without sending its token in the clear.
///
/// ```swift
/// let tls = try ObserverTLS(certificateChainFile: "/etc/troupe/observer.pem",
///                           privateKeyFile: "/etc/troupe/observer-key.pem")
/// let observer = try await system.serveObserver(
///     ObserverSettings(host: "0.0.0.0", port: 8443, security: tls))
/// print(observer.url)  // https://0.0.0.0:8443/?token=…
/// ```
///
/// The server presents the certificate; browsers check it as for any site (use one their
/// machines trust). Clients present none: the observer's token is the credential. TLS 1.2 is the
/// minimum (BoringSSL, bundled by swift-nio-ssl: no system package).
public struct ObserverTLS: ObserverSecurity {
    private let context: NIOSSLContext

    /// - Parameters:
    ///   - certificateChain: the observer's certificate, then any intermediates.
    ///   - privateKey: the certificate's key.
    public init(certificateChain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey) throws(ObserverTLSError) {
        guard !certificateChain.isEmpty else { throw .noCertificate }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificateChain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
        configuration.minimumTLSVersion = .tlsv12
        do {
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            throw .unusable(reason: "\(error)")
        }
    }

    /// Loads the certificate chain and its key from PEM files.
    public init(certificateChainFile: String, privateKeyFile: String) throws(ObserverTLSError) {
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificateChainFile)
        } catch {
            throw .cannotLoad("the certificate chain", file: certificateChainFile, reason: "\(error)")
        }
        do {
            key = try NIOSSLPrivateKey(file: privateKeyFile, format: .pem)
        } catch {
            throw .cannotLoad("the private key", file: privateKeyFile, reason: "\(error)")
        }
        try self.init(certificateChain: chain, privateKey: key)
    }

    public func secure(_ channel: any Channel) throws {
        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
    }
}

/// Why an ``ObserverTLS`` could not be made.
public enum ObserverTLSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The certificate chain is empty.
    case noCertificate
    /// A PEM file could not be read or parsed: what it should hold, its path and why.
    case cannotLoad(String, file: String, reason: String)
    /// The certificate and key do not make a TLS server (for example, the key is not the
    /// certificate's): BoringSSL's reason.
    case unusable(reason: String)

    public var description: String {
        switch self {
        case .noCertificate: "ObserverTLS needs the observer's certificate (the chain is empty)"
        case .cannotLoad(let what, let file, let reason):
            "ObserverTLS cannot load \(what) from \(file) (PEM): \(reason)"
        case .unusable(let reason): "ObserverTLS cannot serve with this certificate and key: \(reason)"
        }
    }
}
