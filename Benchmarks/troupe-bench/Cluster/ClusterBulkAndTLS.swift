// Bulk arguments between two TroupeCluster nodes, and remote calls over TLS beside a raw NIO
// TLS round trip (issue 28's rows).

import CBenchSupport
import Foundation
import Histogram
import NIOCore
import NIOPosix
import NIOSSL
import TroupeCluster
import TroupeClusterTLS

/// The test certificates (a cluster CA and a node certificate it signed; made for the tests
/// and benchmarks only), relative to this file.
private let certificates = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../../../Tests/TroupeClusterTLSTests/Certificates").standardized.path

/// Calls whose argument is a `[UInt8]` of 1 MiB and 8 MiB (the reply is its count): one way of
/// bulk data plus a small reply.
func clusterBulkRows(_ options: ClusterBenchOptions) async throws -> [ClusterRow] {
    clusterProgress("bulk arguments")
    // 8 MiB of payload needs a little more than the default 8 MiB frame.
    let nodes = try await TwoNodes(maximumFrameSize: 16 << 20)
    var rows: [ClusterRow] = []
    for (size, label, count) in [
        (1 << 20, "1 MiB", options.quick ? 30 : 200), (8 << 20, "8 MiB", options.quick ? 5 : 30),
    ] {
        let bytes = [UInt8]((0..<size).map { UInt8(truncatingIfNeeded: $0) })
        for _ in 0..<3 { _ = try await nodes.remote.count(bytes) }
        var histogram = makeLatencyHistogram()
        for _ in 0..<count {
            let start = CBenchSupport_now_ns()
            let answer = try await nodes.remote.count(bytes)
            histogram.record(CBenchSupport_now_ns() &- start)
            guard answer == size else { fatalError("the remote count was \(answer), not \(size)") }
        }
        var row = ClusterRow(
            section: .latency, name: "TroupeCluster call with a \(label) [UInt8] argument",
            note: "a task awaits count(bytes) on the other node (the bytes one way, an Int back); event loops unpinned",
            histogram: histogram)
        if size == 1 << 20 { row.target = .p50AtMost(.milliseconds(5)) }
        rows.append(row)
    }
    await nodes.shutdown()
    return rows
}

/// The 64 B remote call over mutual TLS, in blocks alternating with a raw NIO round trip over
/// the same TLS (same certificates, TLS 1.3), both forms' event loops pinned as the plain rows.
func clusterTLSRows(_ options: ClusterBenchOptions) async throws -> [ClusterRow] {
    clusterProgress("TLS: raw NIO round trips and remote calls, alternating")
    let tls = try ClusterTLS(
        certificateChainFile: "\(certificates)/node.pem", privateKeyFile: "\(certificates)/node-key.pem",
        trustRootsFile: "\(certificates)/ca.pem")
    let raw = try await RawNIOEcho(size: 64, tls: try rawTLSContexts())
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

/// Server and client contexts for the raw TLS baseline: the same certificates and TLS version
/// as ``ClusterTLS``.
private func rawTLSContexts() throws -> (server: NIOSSLContext, client: NIOSSLContext) {
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
    return (try NIOSSLContext(configuration: server), try NIOSSLContext(configuration: client))
}
