import TroupeCluster
import TroupeClusterMembership

/// One simulated node: its current run's identity and membership state machine, its clock, and
/// what the simulator keeps about it.
struct SimulatedNode {
    enum State {
        case up
        /// Stopped from `since` to `until`: events for it are held until then.
        case paused(since: Int64, until: Int64)
        case killed
        case vanished
        /// Declared down by a member: it learns so at its next contact and stops, as a
        /// TroupeCluster node removed from its cluster does (taken as at once).
        case removed
    }

    var node: ClusterNode
    var machine: SWIMStateMachine
    var state: State = .up
    /// The clock: local = offset + virtual time × rate.
    let clockRate: Double
    let clockOffset: Int64
    /// Events that arrived while paused, in arrival order.
    var held: [ClusterSimulation.Event] = []
    /// While overloaded (``SimulatedFault/slow(node:by:for:)``): until when, and how late it
    /// reads each message.
    var slowUntil: Int64 = 0
    var slowBy: Int64 = 0
    /// When the messages it was sent while slow have all been read.
    var backlogUntil: Int64 = 0
    /// Pauses of this node (all runs), as (start, end).
    var pauses: [(start: Int64, until: Int64)] = []
    /// The uids this run has a connection with (it sent to them or they to it).
    var peers: Set<UInt64> = []
    /// The nodes (by index: their addresses) this node dials as its seeds: every probe interval
    /// while it knows no member (`alone`), then every 10 those it does not know alive.
    var seeds: [Int] = []
    var alone = false
    var lastSeedDial: Int64?
    /// Up to when its up-time has been counted in the report.
    var accountedUntil: Int64
    /// This run's receptionist (TroupeCluster's own state), and the number its next actor
    /// checks in with.
    var receptionist = ReceptionistRegistry()
    var nextActorNumber: UInt64 = 1

    init(node: ClusterNode, machine: SWIMStateMachine, clockRate: Double, clockOffset: Int64, startedAt: Int64) {
        self.node = node
        self.machine = machine
        self.clockRate = clockRate
        self.clockOffset = clockOffset
        accountedUntil = startedAt
    }

    /// Killed or removed: its process is gone, so dials of its address are refused.
    var isStopped: Bool {
        switch state {
        case .killed, .removed: true
        case .up, .paused, .vanished: false
        }
    }

    /// Up or paused: the process exists.
    var isRunning: Bool {
        switch state {
        case .up, .paused: true
        case .killed, .vanished, .removed: false
        }
    }
}
