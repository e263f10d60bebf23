import TroupeClusterMembership

/// A simulated cluster: its size, its members' SWIM settings, its network and clocks, and the
/// seed every choice is drawn from.
public struct ClusterSimulationSettings: Sendable {
    /// The nodes at the start: a formed cluster (each knows every other alive), or, when not
    /// `formed`, node 0 alone and the others joining through it as they start.
    public var nodes: Int
    public var formed = true
    public var seed: UInt64
    /// Every node's SWIM settings (as TroupeCluster's `ClusterSettings.membership`).
    public var membership: ClusterMembershipSettings
    public var latency: LatencyDistribution = .dataCentre
    /// The probability that a message is lost, 0...1.
    public var loss = 0.0
    /// Each node's clock runs at 1 ± up to this (0.0001 is 100 ppm) and starts anywhere within
    /// ± `maximumClockOffset`: SWIM measures intervals on the node's own clock.
    public var maximumClockDrift = 0.0001
    public var maximumClockOffset: Duration = .seconds(60)
    /// How often each node's membership ticks; nil for a tenth of the probe interval, as
    /// TroupeCluster's membership actor does. Each node's ticks start at a random phase.
    public var tickInterval: Duration?
    /// Pauses up to this long must never get a node declared down (longer ones may); nil for
    /// the membership's `suspicionTimeout`.
    public var pauseLimit: Duration?
    /// A node declared down stops (as a TroupeCluster node removed from its cluster does) and
    /// is started again this much later with a fresh uid, as a process supervisor would; nil
    /// leaves it stopped.
    public var restartRemovedAfter: Duration? = .seconds(2)
    /// The receptionist's workload (TroupeCluster's `ReceptionistRegistry` on every node): each
    /// run of a node checks in this many actors as it starts, under three keys drawn from the
    /// seed; with `registrationChurn`, each node checks one out and another in about that often
    /// (uniformly 0.5–1.5 ×). ``ClusterSimulation/checkSettled(after:)`` then also checks that
    /// every node lists exactly what each member it has alive checked in. 0 and nil: none.
    public var registrationsPerNode = 0
    public var registrationChurn: Duration?
    /// A handshake not complete by then is closed, as TroupeCluster's
    /// `ClusterConnectionLimits.handshakeTimeout` does (its default, 5 s).
    public var handshakeTimeout: Duration = .seconds(5)
    /// Lines of trace kept (the last ones).
    public var traceCapacity = 200
    /// Checked as the run goes (false downs) and by ``ClusterSimulation/checkSettled(after:)``:
    /// a crash must be seen down by every node up throughout within this; nil for
    /// ``detectionBound``.
    public var detectionLimit: Duration?

    public init(nodes: Int, seed: UInt64, membership: ClusterMembershipSettings = ClusterMembershipSettings()) {
        self.nodes = nodes
        self.seed = seed
        self.membership = membership
    }

    /// How long a crash may take to be seen down everywhere with these settings: a few probe
    /// periods to be suspected and the suspicion to spread (stretched by Lifeguard's local
    /// health), the longest suspicion timeout, then `downAfter`.
    public var detectionBound: Duration {
        let settings = membership
        let stretchedPeriod = settings.probeInterval * (1 + max(0, settings.maximumLocalHealthMultiplier) / 2)
        return stretchedPeriod * 5 + settings.suspicionTimeout * max(1, settings.suspicionMaximumMultiplier)
            + settings.downAfter + settings.probeInterval * 2
    }

    /// Lifeguard's parts off (no local health, no dynamic suspicion timeout): SWIM as first
    /// published, to measure what Lifeguard buys.
    public static func withoutLifeguard(_ membership: ClusterMembershipSettings) -> ClusterMembershipSettings {
        var plain = membership
        plain.maximumLocalHealthMultiplier = 0
        plain.suspicionMaximumMultiplier = 1
        plain.suspicionConfirmations = 0
        return plain
    }
}

extension ClusterSimulationSettings {
    /// Stops with a message naming the setting when one is out of range. `fatalError`, not
    /// `precondition`: release builds drop a precondition's message and say only that it failed.
    func checkRanges() {
        func refuse(_ message: String) -> Never { fatalError("ClusterSimulationSettings.\(message)") }
        if nodes < 0 { refuse("nodes is a count of nodes, 0 or more, not \(nodes)") }
        if !(0...1).contains(loss) { refuse("loss is a probability, 0...1, not \(loss)") }
        if !(0..<1).contains(maximumClockDrift) {
            refuse(
                "maximumClockDrift is a fraction of a second per second, 0..<1 (0.0001 is 100 ppm), not \(maximumClockDrift)"
            )
        }
        if maximumClockOffset < .zero {
            refuse("maximumClockOffset is a length of time, zero or more, not \(maximumClockOffset)")
        }
        if let tickInterval, tickInterval <= .zero {
            refuse(
                "tickInterval is a length of time above zero (or nil for a tenth of the probe interval), not \(tickInterval)"
            )
        }
        if let pauseLimit, pauseLimit < .zero {
            refuse("pauseLimit is a length of time, zero or more (or nil), not \(pauseLimit)")
        }
        if let restartRemovedAfter, restartRemovedAfter < .zero {
            refuse(
                "restartRemovedAfter is a length of time, zero or more (or nil to leave a removed node stopped), not \(restartRemovedAfter)"
            )
        }
        if let detectionLimit, detectionLimit <= .zero {
            refuse("detectionLimit is a length of time above zero (or nil for detectionBound), not \(detectionLimit)")
        }
        if registrationsPerNode < 0 {
            refuse("registrationsPerNode is a count of actors, 0 or more, not \(registrationsPerNode)")
        }
        if let registrationChurn, registrationChurn <= .zero {
            refuse("registrationChurn is a length of time above zero (or nil for none), not \(registrationChurn)")
        }
        if handshakeTimeout <= .zero {
            refuse("handshakeTimeout is a length of time above zero, not \(handshakeTimeout)")
        }
        if traceCapacity < 0 { refuse("traceCapacity is a count of trace lines, 0 or more, not \(traceCapacity)") }
        if let problem = membership.problem { refuse(problem) }
    }
}
