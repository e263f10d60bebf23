import TroupeClusterMembership

/// The simulated network between the nodes: latency per message, loss, cut links, and the
/// order TCP keeps. Every choice is drawn from the simulation's one generator.
///
/// TroupeCluster talks over one TCP connection per pair of nodes, so messages on a link arrive
/// in the order they were sent (a message never overtakes an earlier one on its link); links
/// reorder against each other freely. The order is the connection's: when it closes (a run
/// ends, or one end holds the other down), the next connection between the two starts with
/// nothing queued ahead of it. A dial's handshake is a connection of its own, in its own order
/// (``reliableArrival(from:to:now:after:using:)``). A lost message is dropped: the harsher model (over TCP a
/// lost segment arrives late, after a retransmission, unless the connection breaks).
struct SimulatedNetwork {
    var latency: LatencyDistribution
    var loss: Double
    /// The group a partition cuts off, and whether only its outgoing links are cut.
    private(set) var partition: (group: Set<Int>, oneWay: Bool)?
    /// When the latest message on each directed link (`from << 32 | to`) arrives.
    private var lastArrival: [UInt64: Int64] = [:]

    init(latency: LatencyDistribution, loss: Double) {
        self.latency = latency
        self.loss = loss
    }

    mutating func cut(_ group: Set<Int>, oneWay: Bool) { partition = (group, oneWay) }

    /// Node `index`'s run ended: its connections are gone, and what they still had to deliver
    /// holds up nothing the next run sends or is sent. (A receptionist update retransmitted for
    /// 102 s on a lossy link otherwise held up every message to the node's next run: the
    /// simulator, seed 70158, a restarted node and a member that never admitted each other.)
    mutating func closeLinks(of index: Int) {
        lastArrival = lastArrival.filter { link, _ in
            Int(truncatingIfNeeded: link >> 32) != index && Int(truncatingIfNeeded: link & 0xFFFF_FFFF) != index
        }
    }

    /// The connection between `a` and `b` closed: the next one keeps its own order.
    mutating func closeLink(between a: Int, and b: Int) {
        lastArrival[UInt64(a) << 32 | UInt64(b)] = nil
        lastArrival[UInt64(b) << 32 | UInt64(a)] = nil
    }
    mutating func heal() { partition = nil }

    /// Whether the link from `from` to `to` is cut.
    func isCut(from: Int, to: Int) -> Bool {
        guard let partition else { return false }
        let (fromInside, toInside) = (partition.group.contains(from), partition.group.contains(to))
        guard fromInside != toInside else { return false }
        return !partition.oneWay || fromInside
    }

    /// When a message sent now from `from` arrives at `to`; nil when it is lost or the link is cut.
    mutating func arrival(from: Int, to: Int, now: Int64, using generator: inout SplitMix) -> Int64? {
        guard !isCut(from: from, to: to) else { return nil }
        if loss > 0 && generator.nextUnit() < loss { return nil }
        return inOrder(from: from, to: to, sentAt: now, using: &generator)
    }

    /// When a segment of a TCP connection sent now from `from` arrives at `to`; nil only when
    /// the link is cut. A lost segment is not dropped: it comes after a retransmission, first
    /// after Linux's minimum retransmission timeout (200 ms), each further loss doubling it. For
    /// the handshake's envelopes, whose connection would otherwise wait out its whole deadline.
    mutating func reliableArrival(from: Int, to: Int, now: Int64, using generator: inout SplitMix) -> Int64? {
        guard let sent = retransmitted(from: from, to: to, now: now, using: &generator) else { return nil }
        return inOrder(from: from, to: to, sentAt: sent, using: &generator)
    }

    /// As ``reliableArrival(from:to:now:using:)``, for a segment of a connection of its own (a
    /// dial's handshake): in that connection's order, no sooner than `after` (its previous
    /// segment that way), whatever the pair's association still has on its way. (A hello
    /// retransmitted for 102 s otherwise held up every later message from the joining node to
    /// its seed, long after the dial had timed out: seed 83345, a node never admitted.)
    mutating func reliableArrival(
        from: Int, to: Int, now: Int64, after: Int64, using generator: inout SplitMix
    ) -> Int64? {
        guard let sent = retransmitted(from: from, to: to, now: now, using: &generator) else { return nil }
        return max(sent + latency.sample(using: &generator), after)
    }

    /// When a segment sent now leaves for the last time: each loss waits out the retransmission
    /// timeout, doubling it; nil when the link is cut.
    private func retransmitted(from: Int, to: Int, now: Int64, using generator: inout SplitMix) -> Int64? {
        guard !isCut(from: from, to: to) else { return nil }
        var sent = now
        var timeout: Int64 = 200_000_000
        while loss > 0 && generator.nextUnit() < loss && timeout < 60_000_000_000 {
            sent += timeout
            timeout *= 2
        }
        return sent
    }

    /// When what `from` sent at `sent` reaches `to`: a latency drawn, and no sooner than the
    /// link's last arrival, since a link keeps its order (TCP).
    private mutating func inOrder(from: Int, to: Int, sentAt sent: Int64, using generator: inout SplitMix) -> Int64 {
        let link = UInt64(from) << 32 | UInt64(to)
        let at = max(sent + latency.sample(using: &generator), lastArrival[link] ?? 0)
        lastArrival[link] = at
        return at
    }

    /// A round trip's worth of time on the link (for handshakes and refused dials), or nil
    /// when either direction is cut.
    func roundTrip(between a: Int, and b: Int, using generator: inout SplitMix) -> Int64? {
        guard !isCut(from: a, to: b) && !isCut(from: b, to: a) else { return nil }
        return latency.sample(using: &generator) + latency.sample(using: &generator)
    }
}
