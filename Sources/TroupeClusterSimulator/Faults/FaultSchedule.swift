import TroupeClusterMembership

/// Random fault schedules, each drawn from a seed (the same seed, the same schedule), for
/// exploring interleavings: kills, vanishings, restarts, pauses short and long, partitions
/// symmetric and one-way, bursts of loss, joins and strangers, over a window of virtual time, every
/// fault healed by the window's end so that the views must converge afterwards.
public enum FaultSchedule {
    /// `count` faults for a cluster of `nodes`, within `window`. A partition is followed by its
    /// heal and a burst of loss by its end, both inside the window; at most `nodes / 2 - 1`
    /// nodes are killed or vanish, so that a majority stays up. No nodes (or no faults): none.
    public static func random(
        seed: UInt64, nodes: Int, window: Duration, count: Int, settings: ClusterMembershipSettings
    ) -> [ScheduledFault] {
        guard nodes > 0, count > 0 else { return [] }
        var generator = SplitMix(seed: seed ^ 0x5343_4845_4455_4C45)
        let windowNanoseconds = max(1, window.simulatedNanoseconds)
        func instant(after start: Int64 = 0) -> Int64 {
            start + Int64(generator.nextUnit() * Double(max(1, windowNanoseconds - start)))
        }
        var faults: [(Int64, SimulatedFault)] = []
        var down: [Int] = []
        var started = nodes
        let maximumDown = max(0, nodes / 2 - 1)
        for _ in 0..<count {
            let at = instant()
            let node = Int(generator.next() % UInt64(started))
            switch generator.next() % 9 {
            case 0 where down.count < maximumDown && !down.contains(node):
                faults.append((at, .kill(node: node)))
                down.append(node)
            case 1 where down.count < maximumDown && !down.contains(node):
                faults.append((at, .vanish(node: node)))
                down.append(node)
                // Half of them come back, as a new member.
                if generator.next() % 2 == 0 { faults.append((instant(after: at), .restart(node: node))) }
            case 2:
                // Up to the suspicion timeout: never a reason to be declared down.
                let length = Int64(generator.nextUnit() * Double(settings.suspicionTimeout.simulatedNanoseconds))
                faults.append((at, .pause(node: node, for: .nanoseconds(length))))
            case 3:
                // Long enough to be declared down (then it must come back as itself or learn it
                // was removed; nothing else is checked of it).
                let length = settings.downAfter * 2 + settings.suspicionTimeout * settings.suspicionMaximumMultiplier
                faults.append((at, .pause(node: node, for: length)))
            case 4, 5:
                let size = 1 + Int(generator.next() % UInt64(max(1, started / 2)))
                var group = Set<Int>()
                while group.count < size { group.insert(Int(generator.next() % UInt64(started))) }
                faults.append((at, .partition(group: group.sorted(), oneWay: generator.next() % 2 == 0)))
                faults.append((instant(after: at), .heal))
            case 6:
                faults.append((at, .loss(0.05 + generator.nextUnit() * 0.25)))
                faults.append((instant(after: at), .loss(0)))
            case 7:
                let tactics = StrangerTactic.allCases
                faults.append((at, .stranger(dials: node, tactics[Int(generator.next() % UInt64(tactics.count))])))
            default:
                faults.append((at, .join))
                started += 1
            }
        }
        // Stable order: by time, then as drawn.
        return faults.enumerated().sorted { ($0.element.0, $0.offset) < ($1.element.0, $1.offset) }
            .map { ScheduledFault(at: .nanoseconds($0.element.0), $0.element.1) }
    }
}
