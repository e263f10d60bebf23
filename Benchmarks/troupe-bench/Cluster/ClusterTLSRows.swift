// Remote calls over TLS beside a raw NIO TLS round trip (issue 28's rows). Compiled with the
// benchmarks' TLS trait (on by default): without it there is no swift-nio-ssl, and no copy of
// BoringSSL, in the build, and `troupe-bench cluster` says the rows were left out.

#if TLS
    import CBenchSupport
    import Foundation
    import Histogram
    import NIOCore
    import NIOSSL
    import TroupeCluster
    import TroupeClusterTLS

    /// The test certificates (a cluster CA and a node certificate it signed; made for the tests
    /// and benchmarks only), relative to this file.
    private let certificates = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../Tests/TroupeClusterTLSTests/Certificates").standardized.path

    /// The 64 B remote call over mutual TLS, in blocks alternating with a raw NIO round trip over
    /// the same TLS (same certificates, TLS 1.3), both forms' event loops pinned as the plain rows.
    func clusterTLSRows(_ options: ClusterBenchOptions) async throws -> [ClusterRow] {
        clusterProgress("TLS: raw NIO round trips and remote calls, alternating")
        let tls = try ClusterTLS(
            certificateChainFile: "\(certificates)/node.pem", privateKeyFile: "\(certificates)/node-key.pem",
            trustRootsFile: "\(certificates)/ca.pem")
        let raw = try await RawNIOEcho(size: 64, tls: try rawTLSHandlers())
        let nodes = try await TwoNodes(security: tls)
        var placement = "; event loops unpinned"
        if options.pinEventLoops, let sides = ThreadPlacement.sides {
            do {
                try await raw.placeEventLoops(sides)
                try nodes.placeEventLoops(sides)
                placement = "; event loops pinned: caller's CPU \(sides.caller), answerer's CPU \(sides.callee)"
            } catch {
                try? await raw.placeEventLoops(nil)
                try? nodes.placeEventLoops(nil)
                placement = "; event loops unpinned (pinning failed: \(error))"
            }
        }
        let rounds = options.quick ? 2_000 : 20_000
        let block = 200
        let text = String(repeating: "a", count: 64)
        for _ in 0..<200 { try await raw.awaitedRound() }
        for _ in 0..<100 { _ = try await nodes.remote.echo(text) }
        var rawHistogram = makeLatencyHistogram()
        var remoteHistogram = makeLatencyHistogram()
        for _ in 0..<(rounds / block) {
            for _ in 0..<block {
                let start = CBenchSupport_now_ns()
                try await raw.awaitedRound()
                rawHistogram.record(CBenchSupport_now_ns() &- start)
            }
            for _ in 0..<block {
                let start = CBenchSupport_now_ns()
                let answer = try await nodes.remote.echo(text)
                remoteHistogram.record(CBenchSupport_now_ns() &- start)
                guard answer.utf8.count == 64 else { fatalError("remote echo returned \(answer.utf8.count) bytes") }
            }
        }
        await raw.close()
        await nodes.shutdown()
        return [
            ClusterRow(
                section: .latency, name: "Raw NIO TLS round trip, 64 B (awaited from a task)",
                note:
                    "TLS 1.3, mutual authentication (NIOSSL); measured in blocks alternating with the TLS remote call\(placement)",
                histogram: rawHistogram),
            ClusterRow(
                section: .latency, name: "TroupeCluster remote call over TLS, 64 B",
                note: "NIOTransport(security: ClusterTLS(…)), the same certificates\(placement)",
                histogram: remoteHistogram),
        ]
    }

    /// The raw TLS baseline's handlers: the same certificates and TLS version as ``ClusterTLS``.
    private func rawTLSHandlers() throws -> RawEchoSecurity {
        let chain = try NIOSSLCertificate.fromPEMFile("\(certificates)/node.pem").map {
            NIOSSLCertificateSource.certificate($0)
        }
        let key = try NIOSSLPrivateKey(file: "\(certificates)/node-key.pem", format: .pem)
        let roots = try NIOSSLCertificate.fromPEMFile("\(certificates)/ca.pem")
        var server = TLSConfiguration.makeServerConfigurationWithMTLS(
            certificateChain: chain, privateKey: .privateKey(key), trustRoots: .certificates(roots))
        server.minimumTLSVersion = .tlsv13
        var client = TLSConfiguration.makeClientConfiguration()
        client.minimumTLSVersion = .tlsv13
        client.certificateChain = chain
        client.privateKey = .privateKey(key)
        client.trustRoots = .certificates(roots)
        client.certificateVerification = .noHostnameVerification
        let serverContext = try NIOSSLContext(configuration: server)
        let clientContext = try NIOSSLContext(configuration: client)
        return RawEchoSecurity(
            server: { try $0.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: serverContext)) },
            client: {
                try $0.pipeline.syncOperations.addHandler(
                    NIOSSLClientHandler(context: clientContext, serverHostname: nil))
            })
    }
#else
    func clusterTLSRows(_ options: ClusterBenchOptions) async throws -> [ClusterRow] {
        clusterProgress("TLS rows left out: this build has no TLS trait (build without --disable-default-traits)")
        return []
    }
#endif
