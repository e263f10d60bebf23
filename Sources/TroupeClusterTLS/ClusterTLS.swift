import NIOCore
import NIOSSL
import TroupeCluster

/// TLS for a cluster's connections, with mutual authentication: every node presents a
/// certificate signed by the cluster's own certificate authority and accepts only peers that do
/// the same. The cluster secret stays the membership credential (its handshake runs inside TLS);
/// TLS adds confidentiality and integrity on the wire, so an on-path host can neither read calls
/// nor inject frames.
///
/// ```swift
/// let tls = try ClusterTLS(
///     certificateChainFile: "/etc/troupe/node.pem", privateKeyFile: "/etc/troupe/node-key.pem",
///     trustRootsFile: "/etc/troupe/cluster-ca.pem")
/// let settings = ClusterSettings(
///     host: "10.0.0.5", port: 7337, seeds: seeds, secret: secret,
///     transport: NIOTransport(security: tls))
/// ```
///
/// Peers are verified against the trust roots only (no hostname check by default: nodes are
/// usually addressed by IP, and the cluster CA should sign nothing but cluster nodes); set
/// `verifiesHostnames` to also require the dialled host in the peer's certificate. TLS 1.3 is
/// the minimum (BoringSSL, bundled by swift-nio-ssl: no system package).
public struct ClusterTLS: NIOTransportSecurity {
    private let serverContext: NIOSSLContext
    private let clientContext: NIOSSLContext
    private let verifiesHostnames: Bool

    public var encryptsTraffic: Bool { true }

    /// - Parameters:
    ///   - certificateChain: this node's certificate, then any intermediates.
    ///   - privateKey: the certificate's key.
    ///   - trustRoots: the certificate authorities whose certificates peers must present.
    ///   - verifiesHostnames: also check the dialled host against the peer's certificate.
    public init(
        certificateChain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey, trustRoots: [NIOSSLCertificate],
        verifiesHostnames: Bool = false
    ) throws {
        guard !certificateChain.isEmpty else { throw ClusterTLSError.noCertificate }
        guard !trustRoots.isEmpty else { throw ClusterTLSError.noTrustRoots }
        let chain = certificateChain.map { NIOSSLCertificateSource.certificate($0) }
        var server = TLSConfiguration.makeServerConfigurationWithMTLS(
            certificateChain: chain, privateKey: .privateKey(privateKey), trustRoots: .certificates(trustRoots))
        server.minimumTLSVersion = .tlsv13
        var client = TLSConfiguration.makeClientConfiguration()
        client.minimumTLSVersion = .tlsv13
        client.certificateChain = chain
        client.privateKey = .privateKey(privateKey)
        client.trustRoots = .certificates(trustRoots)
        client.certificateVerification = verifiesHostnames ? .fullVerification : .noHostnameVerification
        serverContext = try NIOSSLContext(configuration: server)
        clientContext = try NIOSSLContext(configuration: client)
        self.verifiesHostnames = verifiesHostnames
    }

    /// Loads the certificate chain, its key and the trust roots from PEM files.
    public init(
        certificateChainFile: String, privateKeyFile: String, trustRootsFile: String, verifiesHostnames: Bool = false
    ) throws {
        func load<T>(_ what: String, _ file: String, _ read: () throws -> T) throws(ClusterTLSError) -> T {
            do { return try read() } catch { throw .cannotLoad(what, file: file, reason: "\(error)") }
        }
        try self.init(
            certificateChain: try load("the certificate chain", certificateChainFile) {
                try NIOSSLCertificate.fromPEMFile(certificateChainFile)
            },
            privateKey: try load("the private key", privateKeyFile) {
                try NIOSSLPrivateKey(file: privateKeyFile, format: .pem)
            },
            trustRoots: try load("the trust roots", trustRootsFile) {
                try NIOSSLCertificate.fromPEMFile(trustRootsFile)
            },
            verifiesHostnames: verifiesHostnames)
    }

    public func secure(_ channel: any Channel, as side: NIOTransportSide, peerHost: String?) throws {
        switch side {
        case .server:
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: serverContext))
        case .client:
            // SNI and hostname checks take names, not addresses.
            let name = verifiesHostnames ? peerHost : nil
            try channel.pipeline.syncOperations.addHandler(
                NIOSSLClientHandler(context: clientContext, serverHostname: name))
        }
    }
}

/// Why a ``ClusterTLS`` could not be made.
public enum ClusterTLSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The certificate chain is empty.
    case noCertificate
    /// No trust roots: no peer could be verified.
    case noTrustRoots
    /// A PEM file could not be read or parsed: what it should hold, its path and why.
    case cannotLoad(String, file: String, reason: String)

    public var description: String {
        switch self {
        case .noCertificate: "ClusterTLS needs this node's certificate (the chain is empty)"
        case .noTrustRoots: "ClusterTLS needs the cluster's certificate authority as trust roots (none given)"
        case .cannotLoad(let what, let file, let reason): "ClusterTLS cannot load \(what) from \(file) (PEM): \(reason)"
        }
    }
}
