import CoreMetrics
import TroupeClusterMembership

/// The cluster's metrics, through swift-metrics (``ClusterSettings/metricsFactory``, or the
/// bootstrapped backend: no-ops until one is), with a `cluster` dimension. Names follow
/// TroupeMetrics' `troupe_…` scheme.
struct ClusterMetrics: Sendable {
    let handshakeFailures: Counter
    let protocolViolations: Counter
    let associations: Counter
    let connectionsRefused: Counter
    let callsSucceeded: Counter
    let callsFailed: Counter
    let invocationsReceived: Counter
    let reconnects: Counter
    let alive: Counter
    let suspect: Counter
    let unreachable: Counter
    let down: Counter

    init(clusterName: String, factory: any MetricsFactory) {
        let dimensions = [("cluster", clusterName)]
        func counter(_ label: String, _ extra: [(String, String)] = []) -> Counter {
            Counter(label: label, dimensions: dimensions + extra, factory: factory)
        }
        handshakeFailures = counter("troupe_cluster_handshake_failures_total")
        protocolViolations = counter("troupe_cluster_protocol_violations_total")
        associations = counter("troupe_cluster_associations_total")
        connectionsRefused = counter("troupe_cluster_connections_refused_total")
        callsSucceeded = counter("troupe_cluster_remote_calls_total", [("outcome", "replied")])
        callsFailed = counter("troupe_cluster_remote_calls_total", [("outcome", "failed")])
        invocationsReceived = counter("troupe_cluster_invocations_received_total")
        reconnects = counter("troupe_cluster_reconnects_total")
        func change(_ status: String) -> Counter {
            counter("troupe_cluster_membership_changes_total", [("status", status)])
        }
        alive = change("alive")
        suspect = change("suspect")
        unreachable = change("unreachable")
        down = change("down")
    }

    func membershipChanged(to status: ClusterMemberStatus) {
        switch status {
        case .alive: alive.increment()
        case .suspect: suspect.increment()
        case .unreachable: unreachable.increment()
        case .down: down.increment()
        }
    }
}
