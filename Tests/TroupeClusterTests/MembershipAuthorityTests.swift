import Testing
import TroupeClusterMembership
import TroupeTestSupport

@testable import TroupeCluster

/// What one authenticated member (buggy or compromised: it knows the secret) can and cannot do
/// to the membership of the others through gossip.
@Suite("Membership authority: gossip from one member", .serialized)
struct MembershipAuthorityTests {
    @Test func forgedDownGossipRemovesNobodyReachable() async throws {
        let nodes = try await startCluster(3)
        let (a, b, liar) = (nodes[0].cluster, nodes[1].cluster, nodes[2].cluster)
        // The liar tells A, in one frame and repeatedly, that B and A itself are down.
        for _ in 0..<20 {
            liar.send(
                .membership(
                    .ping(
                        sequence: 0,
                        gossip: [
                            .init(member: b.node, status: .unreachable(incarnation: .max)),
                            .init(member: b.node, status: .down), .init(member: a.node, status: .down),
                        ])), to: a.node)
            try await Task.sleep(for: .milliseconds(20))
        }
        // Give A a few probe rounds to act on it, were it to.
        try await Task.sleep(for: .seconds(1))
        #expect(a.membership[b.node] != .down)
        #expect(!a.shutDown, "gossip about the receiver never removes it")
        await waitUntil("B is alive again at A (its probe answered)") {
            if case .alive? = a.membership[b.node] { true } else { false }
        }
        // A still calls B.
        let greeter = Greeter(actorSystem: b)
        let remote = try Greeter.resolve(id: greeter.id, using: a)
        #expect(try await remote.greet("after the lies") == "Hello, after the lies!")
        await shutdownAll(nodes)
    }

    @Test func madeUpMembersAreNotAdmittedAndCostBoundedDials() async throws {
        let nodes = try await startCluster(2)
        let (a, liar) = (nodes[0].cluster, nodes[1].cluster)
        let before = a.membership.count
        // 2,000 identities at addresses where nothing listens (and one at A's own address
        // with a made-up uid).
        for batch in 0..<10 {
            let gossip = (0..<200).map { index in
                SWIMMessage.Gossip(
                    member: ClusterNode(host: "127.0.0.1", port: 1 + batch * 200 + index, uid: UInt64(index + 1)),
                    status: .alive(incarnation: 0))
            }
            liar.send(.membership(.ping(sequence: 0, gossip: gossip)), to: a.node)
        }
        liar.send(
            .membership(
                .ping(
                    sequence: 0,
                    gossip: [
                        .init(
                            member: ClusterNode(host: a.node.host, port: a.node.port, uid: 77),
                            status: .alive(incarnation: 0))
                    ])),
            to: a.node)
        try await Task.sleep(for: .seconds(1))
        #expect(a.membership.count == before, "nobody is admitted on another member's word")
        #expect(a.discoveryDials.load(ordering: .relaxed) <= ClusterSystem.maximumDiscoveryDials)
        await shutdownAll(nodes)
    }

    @Test func aJoinIsPushedToEveryMember() async throws {
        // Five nodes, each joining through the first, with a probe round of 60 s: gossip riding
        // on probes would take minutes to tell everyone; pushed joins take round trips.
        var slowRounds = patientMembership()
        slowRounds.probeInterval = .seconds(60)
        slowRounds.pingTimeout = .seconds(20)
        let first = try await startNode(membership: slowRounds)
        var nodes = [first]
        for _ in 1..<4 { nodes.append(try await startNode(seeds: [first.cluster.node], membership: slowRounds)) }
        await waitUntil(timeout: .seconds(50), "4 nodes see each other within a probe round") {
            nodes.allSatisfy { $0.cluster.aliveMembers.count == 4 }
        }
        let started = ContinuousClock.now
        nodes.append(try await startNode(seeds: [first.cluster.node], membership: slowRounds))
        await waitUntil(timeout: .seconds(50), "5 nodes see each other within a probe round") {
            nodes.allSatisfy { $0.cluster.aliveMembers.count == 5 }
        }
        // Not a performance target (troupe-bench cluster measures convergence): only that it
        // did not wait for a probe round.
        #expect(ContinuousClock.now - started < .seconds(50))
        await shutdownAll(nodes)
    }
}
