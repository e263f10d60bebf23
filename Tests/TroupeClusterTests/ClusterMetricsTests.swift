import Distributed
import MetricsTestKit
import Testing
import Troupe
import TroupeTestSupport

@testable import TroupeCluster

/// The counters of ``ClusterMetrics``, each node with its own backend
/// (``ClusterSettings/metricsFactory``), so that nothing here touches the process-wide
/// `MetricsSystem`.
@Suite("The cluster's metrics", .serialized)
struct ClusterMetricsTests {
    @Test func callsInvocationsAssociationsAndMembershipAreCountedPerNode() async throws {
        let metrics = (caller: TestMetrics(), callee: TestMetrics())
        let caller = try await startNode(callTimeout: .milliseconds(300), metricsFactory: metrics.caller)
        let callee = try await startNode(seeds: [caller.cluster.node], metricsFactory: metrics.callee)
        let greeter = Greeter(actorSystem: callee.cluster)
        let remote = try Greeter.resolve(id: greeter.id, using: caller.cluster)

        for round in 0..<5 { #expect(try await remote.greet("\(round)") == "Hello, \(round)!") }
        // A thrown error is still a reply: the call ended with what the method did.
        await #expect(throws: ClusterCallError.self) { _ = try await remote.fail("on purpose") }
        // A call that gets no reply in time fails.
        await #expect(throws: ClusterCallError.self) { _ = try await remote.slow(.seconds(2)) }

        func count(_ metrics: TestMetrics, _ label: String, _ extra: [(String, String)] = []) throws -> Int64 {
            try metrics.expectCounter(label, [("cluster", "test")] + extra).totalValue
        }
        #expect(try count(metrics.caller, "troupe_cluster_remote_calls_total", [("outcome", "replied")]) == 6)
        #expect(try count(metrics.caller, "troupe_cluster_remote_calls_total", [("outcome", "failed")]) == 1)
        // The callee received all seven, the timed-out one too; the caller received none.
        await waitUntil("the callee counted every invocation") {
            (try? count(metrics.callee, "troupe_cluster_invocations_received_total")) == 7
        }
        #expect(try count(metrics.caller, "troupe_cluster_invocations_received_total") == 0)
        // One association each way at least (the join), and each saw the other alive.
        for node in [metrics.caller, metrics.callee] {
            #expect(try count(node, "troupe_cluster_associations_total") >= 1)
            #expect(try count(node, "troupe_cluster_membership_changes_total", [("status", "alive")]) >= 1)
            #expect(try count(node, "troupe_cluster_handshake_failures_total") == 0)
            #expect(try count(node, "troupe_cluster_protocol_violations_total") == 0)
        }
        _ = greeter
        await shutdownAll([caller, callee])
    }

    @Test func refusedHandshakesAreCountedOnBothSides() async throws {
        let metrics = (node: TestMetrics(), intruder: TestMetrics())
        let node = try await startNode(metricsFactory: metrics.node)
        let intruder = try await startNode(
            seeds: [node.cluster.node], secret: "not the secret at all!", metricsFactory: metrics.intruder)
        await waitUntil(timeout: .seconds(60), "both counted a refused handshake") {
            [metrics.node, metrics.intruder].allSatisfy {
                ((try? $0.expectCounter("troupe_cluster_handshake_failures_total", [("cluster", "test")]))?
                    .totalValue ?? 0) > 0
            }
        }
        // Nothing got through: no association, no member.
        #expect(
            metrics.node.counters(label: "troupe_cluster_associations_total").allSatisfy { $0.totalValue == 0 })
        #expect(node.cluster.aliveMembers == [node.cluster.node])
        await shutdownAll([node, intruder])
    }
}
