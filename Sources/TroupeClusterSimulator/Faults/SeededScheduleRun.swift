import TroupeClusterMembership

/// One seeded fault schedule as `troupe-bench cluster-sim --only schedules` runs it: 5 to 8
/// nodes (by the seed), 1 % loss, TroupeCluster's receptionist on every node (3 actors checked
/// in, one out and another in every 2 s), four random faults within 40 s, then the detection
/// bound and 10 s more to settle before the properties are checked. A broken seed that the
/// bench prints replays here, in a test, with its whole trace.
public struct SeededScheduleRun {
    /// The schedule's seed (the bench prints it with a broken schedule).
    public let seed: UInt64
    public let simulation: ClusterSimulation
    /// What ``ClusterSimulation/checkSettled(after:)`` found once the faults were over.
    public let violations: [SimulationReport.Violation]

    /// Runs the schedule of `seed` to its end.
    public init(
        seed: UInt64, membership: ClusterMembershipSettings = ClusterMembershipSettings(), traceCapacity: Int = 80
    ) {
        let size = 5 + Int(seed % 4)
        var settings = ClusterSimulationSettings(nodes: size, seed: seed, membership: membership)
        settings.loss = 0.01
        settings.traceCapacity = traceCapacity
        settings.registrationsPerNode = 3
        settings.registrationChurn = .seconds(2)
        let simulation = ClusterSimulation(settings)
        let window = Duration.seconds(40)
        simulation.schedule(
            FaultSchedule.random(seed: seed, nodes: size, window: window, count: 4, settings: membership))
        let settle = settings.detectionBound + .seconds(10)
        simulation.run(until: window + settle)
        self.seed = seed
        self.simulation = simulation
        violations = simulation.checkSettled(after: settle)
    }

    /// The number of nodes: 5 to 8, by the seed.
    public var nodes: Int { simulation.settings.nodes }
}
