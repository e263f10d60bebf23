import Distributed
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Testing
import Troupe
import TroupeCluster
import TroupeClusterTLS
import TroupeTestSupport

// The certificates under Certificates/ were made for these tests only (openssl, P-256, valid
// for 100 years): a cluster CA and a node certificate it signed (127.0.0.1, localhost), and an
// unrelated CA with a node certificate of its own. Their keys are not secrets.
private let certificates = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Certificates").path

private func tls(
    _ node: String = "node", trusting ca: String = "ca", verifiesHostnames: Bool = false
) throws -> ClusterTLS {
    try ClusterTLS(
        certificateChainFile: "\(certificates)/\(node).pem", privateKeyFile: "\(certificates)/\(node)-key.pem",
        trustRootsFile: "\(certificates)/\(ca).pem", verifiesHostnames: verifiesHostnames)
}

private let secret = "tls test secret, 32 bytes long.."

private struct Node {
    let cluster: ClusterSystem
    let actors: ActorSystem
    func shutdown() async {
        await cluster.shutdown()
        await actors.shutdown()
    }
}

private func startNode(seeds: [ClusterNode] = [], security: (any NIOTransportSecurity)?) async throws -> Node {
    let actors = makeTestSystem(name: "tls", workers: 1)
    var membership = ClusterMembershipSettings()
    membership.suspicionTimeout = .seconds(20)
    membership.downAfter = .seconds(30)
    let settings = ClusterSettings(
        seeds: seeds.map { ($0.host, $0.port) }, secret: secret, callTimeout: .seconds(10),
        membership: membership, transport: NIOTransport(security: security), logger: quietLogger)
    return Node(cluster: try await ClusterSystem(settings: settings, actorSystem: actors), actors: actors)
}

private distributed actor Echo {
    typealias ActorSystem = ClusterSystem
    distributed func echo(_ bytes: [UInt8]) -> [UInt8] { bytes }
}

@Suite("ClusterTLS: mutual TLS for the cluster's connections", .serialized)
struct ClusterTLSTests {
    @Test func nodesWithCertificatesOfTheClusterCACallEachOther() async throws {
        let first = try await startNode(security: try tls())
        let second = try await startNode(seeds: [first.cluster.node], security: try tls())
        #expect(first.cluster.settings.transport?.encryptsTraffic == true)
        await waitUntil(timeout: .seconds(30), "both see each other") {
            first.cluster.aliveMembers.count == 2 && second.cluster.aliveMembers.count == 2
        }
        let echo = Echo(actorSystem: second.cluster)
        let remote = try Echo.resolve(id: echo.id, using: first.cluster)
        let payload = [UInt8]((0..<100_000).map { UInt8(truncatingIfNeeded: $0) })
        #expect(try await remote.echo(payload) == payload)
        await first.shutdown()
        await second.shutdown()
    }

    @Test func aNodeOfAnotherCAOrWithoutTLSIsRefused() async throws {
        let node = try await startNode(security: try tls())
        // A certificate signed by another CA (trusting the right CA itself).
        let stranger = try await startNode(seeds: [node.cluster.node], security: try tls("other-node", trusting: "ca"))
        // No TLS at all: its hello reaches a TLS server as garbage.
        let plain = try await startNode(seeds: [node.cluster.node], security: nil)
        try await Task.sleep(for: .seconds(2))
        #expect(node.cluster.aliveMembers == [node.cluster.node])
        #expect(stranger.cluster.aliveMembers == [stranger.cluster.node])
        #expect(plain.cluster.aliveMembers == [plain.cluster.node])
        await plain.shutdown()
        await stranger.shutdown()
        await node.shutdown()
    }

    @Test func hostnameVerificationChecksTheDialledHost() async throws {
        // The node certificate names 127.0.0.1 and localhost: verified by name, dialled by name.
        let actors = makeTestSystem(name: "tls-host", workers: 1)
        let first = try await startNode(security: try tls(verifiesHostnames: true))
        let settings = ClusterSettings(
            seeds: [("localhost", first.cluster.node.port)], secret: secret,
            transport: NIOTransport(security: try tls(verifiesHostnames: true)), logger: quietLogger)
        let second = try await ClusterSystem(settings: settings, actorSystem: actors)
        await waitUntil(timeout: .seconds(30), "joined through a verified name") { second.aliveMembers.count == 2 }
        await second.shutdown()
        await actors.shutdown()
        await first.shutdown()
    }

    @Test func missingPiecesAreTypedErrors() throws {
        let key = try NIOSSLPrivateKey(file: "\(certificates)/node-key.pem", format: .pem)
        let chain = try NIOSSLCertificate.fromPEMFile("\(certificates)/node.pem")
        #expect(throws: ClusterTLSError.noCertificate) {
            try ClusterTLS(certificateChain: [], privateKey: key, trustRoots: chain)
        }
        #expect(throws: ClusterTLSError.noTrustRoots) {
            try ClusterTLS(certificateChain: chain, privateKey: key, trustRoots: [])
        }
        #expect {
            try ClusterTLS(
                certificateChainFile: "\(certificates)/missing.pem", privateKeyFile: "\(certificates)/node-key.pem",
                trustRootsFile: "\(certificates)/ca.pem")
        } throws: { error in
            guard case ClusterTLSError.cannotLoad(_, let file, _) = error else { return false }
            return file.hasSuffix("missing.pem") && "\(error)".contains("missing.pem")
        }
    }
}
