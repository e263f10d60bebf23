import CoreMetrics
import TroupeClusterMembership

/// The cluster's metrics, through swift-metrics (no-ops until a backend is bootstrapped), with
/// a `cluster` dimension. Names follow TroupeMetrics' `troupe_…` scheme.
struct ClusterMetrics: Sendable {
    let handshakeFailures: Counter
    let protocolViolations: Counter
    let associations: Counter
    let callsSucceeded: Counter
    let callsFailed: Counter
    let invocationsReceived: Counter
    let alive: Counter
    let suspect: Counter
    let unreachable: Counter
    let down: Counter

    init(clusterName: String) {
        let dimensions = [("cluster", clusterName)]
        handshakeFailures = Counter(label: "troupe_cluster_handshake_failures_total", dimensions: dimensions)
        protocolViolations = Counter(label: "troupe_cluster_protocol_violations_total", dimensions: dimensions)
        associations = Counter(label: "troupe_cluster_associations_total", dimensions: dimensions)
        callsSucceeded = Counter(
            label: "troupe_cluster_remote_calls_total", dimensions: dimensions + [("outcome", "replied")])
        callsFailed = Counter(
            label: "troupe_cluster_remote_calls_total", dimensions: dimensions + [("outcome", "failed")])
        invocationsReceived = Counter(label: "troupe_cluster_invocations_received_total", dimensions: dimensions)
        func change(_ status: String) -> Counter {
            Counter(label: "troupe_cluster_membership_changes_total", dimensions: dimensions + [("status", status)])
        }
        alive = change("alive")
        suspect = change("suspect")
        unreachable = change("unreachable")
        down = change("down")
    }

    func membershipChanged(to status: MemberStatus) {
        switch status {
        case .alive: alive.increment()
        case .suspect: suspect.increment()
        case .unreachable: unreachable.increment()
        case .down: down.increment()
        }
    }
}
