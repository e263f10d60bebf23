#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Failure detection and membership by SWIM, as a pure state machine: no threads, no clock, no
/// network. The caller feeds it time (`tick(now:)`) and messages (`receive(_:from:now:)`) and
/// carries out what it returns (`SWIMDirective`s: messages to send, membership events, members
/// to dial), so that its tests replay any schedule of messages, losses and partitions
/// deterministically.
///
/// The protocol: every probe interval a member pings the next member of a shuffled round; a
/// ping unanswered after the ping timeout is retried indirectly through `indirectProbes` other
/// members (the case where one link is cut but the member is up); unanswered by the end of the
/// probe period, the member becomes suspect. A suspect refutes by raising its incarnation; a
/// suspect past its suspicion timeout becomes unreachable, and an unreachable member past
/// `downAfter` is down, for good (a restarted node joins with a new uid). Status changes ride on
/// every message as gossip. Any message from a member is proof of life.
///
/// No single member's gossip can add, remove or condemn another member, nor this one (a buggy or
/// compromised peer may send anything):
/// - Admission only by direct contact: a member enters the table through `join(_:now:)`, as the
///   sender of a message, or through `heard(from:now:)` (the caller's authenticated peers).
///   Gossip naming an unknown member yields `.discovered` (at most once per `probeInterval` per
///   member, from a memory of `maximumRememberedDiscoveries`); the caller dials it and joins it
///   when its handshake completes. Gossip that a member held down here is alive yields
///   `.discovered` too: the caller's dial tells it, in the handshake, that it is down.
/// - Down needs this node's own evidence: `suspect` or `unreachable` gossip about another
///   member makes it at most suspect here and probes it at once, so that a live member clears
///   itself; only this node's own suspicion timer (or `confirmUnreachable`) makes it
///   unreachable; `down` gossip applies only to a member already unreachable here (about one
///   alive here, it triggers a probe). Gossip about
///   this node other than suspicion (which it refutes) is ignored. A suspicion this node's own
///   contact has cleared is not taken up again from gossip at the same incarnation, so that a
///   suspicion the member cannot outbid (incarnation `UInt64.max`) dies out.
/// - Lifeguard (Dadgar et al., as in HashiCorp memberlist): a Local Health Multiplier, raised
///   when a probe of this node's rounds goes unanswered or it refutes a suspicion of itself, and
///   lowered when a probe is answered directly, stretches its probe interval and ping timeout
///   (× (multiplier + 1)), so that a slow node accuses others less; a suspicion's timeout starts
///   at `suspicionTimeout × suspicionMaximumMultiplier` and shrinks to `suspicionTimeout` as
///   other members confirm it (gossip it, each a distinct sender).
/// - Joins are pushed: a member first admitted by direct contact (not after gossip named it)
///   is announced at once to up to `joinPushFanOut` alive members, by a ping of sequence 0
///   (never a probe's, so its acks are ignored), instead of waiting for probe rounds.
/// - Changes are gossiped in rounds too (memberlist's gossip rounds): while there are changes
///   to spread, every `gossipInterval` they go to `gossipFanOut` random alive members, each
///   change for `gossipRounds` rounds, besides its `gossipRepeats` on the probes' messages.
/// - Down members stay as tombstones, so that gossip cannot bring them back, at most
///   `maximumTombstones` of them, the oldest dropped first.
public struct SWIMStateMachine: Sendable {
    public let myself: ClusterNode
    public let settings: ClusterMembershipSettings
    public private(set) var incarnation: UInt64 = 0
    /// Lifeguard's Local Health Multiplier, 0...`maximumLocalHealthMultiplier`: high when this
    /// node's own probes go unanswered or it is suspected, as when it is itself slow or cut off.
    public private(set) var localHealthMultiplier = 0
    private var members: [ClusterNode: Entry] = [:] {
        didSet {
            assert(
                timed.allSatisfy { members[$0]?.status.isTimed == true }
                    && timed.count == members.values.count(where: \.status.isTimed),
                "`timed` holds exactly the suspect and unreachable members")
        }
    }
    /// The members whose status runs a timer (suspect or unreachable), so that a tick looks at
    /// them only: O(timed), not O(members), which a 1,000-member simulation ticks 10,000 times
    /// a simulated second.
    private var timed: Set<ClusterNode> = []
    /// Down members, oldest first: the tombstones dropped first.
    private var tombstones: [ClusterNode] = []
    /// Members reported as `.discovered` within the last probe interval, oldest first.
    private var discoveryOrder: [ClusterNode] = []
    private var discoveredAt: [ClusterNode: Duration] = [:]
    private var round: [ClusterNode] = []
    /// The members still to be carried as anti-entropy in this pass (taken from the end).
    private var fillOrder: [ClusterNode] = []
    private var nextProbeAt: Duration?
    /// When the next gossip round may go (`gossipInterval` after the last one).
    private var nextGossipAt: Duration = .zero
    private var sequence: UInt64 = 0
    private var probes: [UInt64: Probe] = [:]
    private var relays: [UInt64: Relay] = [:]
    private var gossip: [GossipItem] = []
    private var generator: SplitMix

    struct Entry {
        var status: ClusterMemberStatus
        var since: Duration
        /// While suspect: who accused it, for the dynamic suspicion timeout.
        var suspicion: Suspicion?
        /// The incarnation at which this node's own contact with the member last cleared a
        /// suspicion: gossip suspecting it at that incarnation again is not taken up.
        var suspicionClearedAt: UInt64?
    }

    struct Suspicion {
        /// Whoever made it suspect here (this node, or the sender of the gossip); not a confirmation.
        let accuser: ClusterNode
        var confirmations: Set<ClusterNode> = []
        /// Confirmations that bring the timeout down to `suspicionTimeout`.
        let confirmationsNeeded: Int
    }

    struct Probe {
        let target: ClusterNode
        let sentAt: Duration
        let indirectAt: Duration
        let expiresAt: Duration
        /// Only the probe rounds' own probes measure this node's health (not those that join or
        /// check gossip, whose targets others chose).
        let measuresLocalHealth: Bool
        var indirect = false
        /// When the ping requests went out (nil: none did, no helper was reachable).
        var indirectSentAt: Duration?
    }

    struct Relay {
        let requester: ClusterNode
        let sequence: UInt64
        let target: ClusterNode
        let sentAt: Duration
    }

    struct GossipItem {
        let member: ClusterNode
        let status: ClusterMemberStatus
        var remaining: Int
        /// Gossip rounds still to carry it (apart from `remaining`, which the rounds leave alone).
        var roundsLeft: Int
    }

    /// Stops the process if `settings` has a ``ClusterMembershipSettings/problem``: out-of-range
    /// timing would make the machine probe without pause or never suspect anyone.
    public init(myself: ClusterNode, settings: ClusterMembershipSettings = ClusterMembershipSettings(), seed: UInt64) {
        if let problem = settings.problem { fatalError("invalid SWIM settings: \(problem)") }
        self.myself = myself
        self.settings = settings
        generator = SplitMix(seed: seed ^ myself.uid)
    }

    /// What this member knows of every other (down ones included, up to `maximumTombstones`).
    public var membership: [ClusterNode: ClusterMemberStatus] { members.mapValues(\.status) }

    public func status(of member: ClusterNode) -> ClusterMemberStatus? {
        member == myself ? .alive(incarnation: incarnation) : members[member]?.status
    }

    /// The probe interval, stretched by the local health multiplier.
    public var effectiveProbeInterval: Duration { settings.probeInterval * (localHealthMultiplier + 1) }

    /// The ping timeout, stretched by the local health multiplier.
    public var effectivePingTimeout: Duration { settings.pingTimeout * (localHealthMultiplier + 1) }

    /// Joins through `seeds` (the caller has contact with them): they are pinged at once, and
    /// learn of this member from it.
    public mutating func join(_ seeds: [ClusterNode], now: Duration) -> [SWIMDirective] {
        var out: [SWIMDirective] = []
        for seed in seeds where seed != myself && members[seed] == nil {
            out += admit(seed, now: now)
            out.append(sendPing(to: seed, now: now, measuresLocalHealth: false))
        }
        return out
    }

    /// Starts as a member of a formed cluster: `formed` are known alive at incarnation 0, as
    /// once every join has spread, with no events, pushes or gossip. For the cluster simulator,
    /// which starts a thousand nodes this way rather than by a thousand joins.
    package mutating func assumeFormed(_ formed: [ClusterNode], now: Duration) {
        members.reserveCapacity(members.count + formed.count)
        for member in formed where member != myself && members[member] == nil {
            setEntry(Entry(status: .alive(incarnation: 0), since: now), for: member)
        }
    }

    // MARK: Time

    /// Advances the protocol to `now`: times out probes and suspicions, and starts the next
    /// probe when one is due.
    public mutating func tick(now: Duration) -> [SWIMDirective] {
        var out: [SWIMDirective] = []
        // Probes: indirect after the ping timeout, suspicion at the end of the probe period.
        for (sequence, probe) in probes.sorted(by: { $0.key < $1.key }) {
            if !probe.indirect && now >= probe.indirectAt {
                probes[sequence]?.indirect = true
                let helpers = pickReachable(settings.indirectProbes, except: probe.target)
                if !helpers.isEmpty { probes[sequence]?.indirectSentAt = now }
                for helper in helpers {
                    out.append(
                        .send(
                            .pingRequest(sequence: sequence, target: probe.target, gossip: outgoingGossip()), to: helper
                        ))
                }
            }
            if now >= probe.expiresAt {
                probes[sequence] = nil
                if probe.measuresLocalHealth { adjustLocalHealth(by: 1) }
                switch members[probe.target]?.status {
                case .alive(let i)?:
                    out += change(probe.target, to: .suspect(incarnation: i), now: now, accuser: myself)
                case .suspect?:
                    confirmSuspicion(of: probe.target, by: myself)
                default:
                    break
                }
            }
        }
        relays = relays.filter { now - $0.value.sentAt < settings.probeInterval }
        forgetDiscoveries(expiredBy: now)
        // Suspicion and unreachability time out (only those due are put in order: a tick looks
        // at every timed member, and a slow cluster can have many).
        let due = timed.filter { member in
            guard let entry = members[member] else { return false }
            switch entry.status {
            case .suspect: return now - entry.since >= suspicionTimeout(entry.suspicion)
            case .unreachable: return now - entry.since >= settings.downAfter
            case .alive, .down: return false
            }
        }
        for member in due.sorted(by: Self.inOrder) {
            switch members[member]?.status {
            case .suspect(let i)?: out += change(member, to: .unreachable(incarnation: i), now: now)
            case .unreachable?: out += change(member, to: .down, now: now)
            default: break
            }
        }
        // The next probe.
        if nextProbeAt == nil || now >= nextProbeAt! {
            nextProbeAt = now + effectiveProbeInterval
            if let target = nextTarget() { out.append(sendPing(to: target, now: now, measuresLocalHealth: true)) }
        }
        out += gossipRound(now: now)
        return out
    }

    /// Changes with rounds left go to `gossipFanOut` random alive members, at most every
    /// `gossipInterval` (stretched by the local health multiplier, as probes are: a slow node
    /// spreads its news less), by pings of sequence 0 whose acks answer no probe; each change
    /// for `gossipRounds` rounds. Nothing is sent while there is nothing to spread.
    ///
    /// Why (TroupeClusterSimulator): with gossip only on the probes' pings and acks (two
    /// messages a node-second), a crash's suspicion took 5.5 s (p99) to reach every node of a
    /// 1,000-node cluster, and the worst crash 9.2 s to be seen unreachable everywhere; with
    /// these rounds, 3.8 s and 7.1 s. The rounds do not spend a change's `gossipRepeats`: when
    /// they did, the news went round in one short wave, and a node that heard it from a single
    /// member got no confirmations after it (a 6 s suspicion timer instead of 3).
    private mutating func gossipRound(now: Duration) -> [SWIMDirective] {
        guard settings.gossipFanOut > 0, now >= nextGossipAt,
            gossip.contains(where: { $0.member != myself && $0.roundsLeft > 0 })
        else {
            return []
        }
        nextGossipAt = now + settings.gossipInterval * (localHealthMultiplier + 1)
        var items = [SWIMMessage.Gossip(member: myself, status: .alive(incarnation: incarnation))]
        for index in gossip.indices where gossip[index].roundsLeft > 0 && gossip[index].member != myself {
            guard items.count <= settings.gossipPerMessage else { break }
            items.append(SWIMMessage.Gossip(member: gossip[index].member, status: gossip[index].status))
            gossip[index].roundsLeft -= 1
        }
        gossip.removeAll { $0.remaining <= 0 && $0.roundsLeft <= 0 }
        return pickReachable(settings.gossipFanOut, except: myself).map {
            .send(.ping(sequence: 0, gossip: items), to: $0)
        }
    }

    // MARK: Messages

    /// Handles a message from `sender` (a peer the caller authenticated: it is admitted if new).
    public mutating func receive(_ message: SWIMMessage, from sender: ClusterNode, now: Duration) -> [SWIMDirective] {
        guard sender != myself else { return [] }
        var out = proofOfLife(sender, now: now)
        for item in message.gossip { out += merge(item, from: sender, now: now) }
        switch message {
        case .ping(let sequence, _):
            // A ping of sequence 0 (a gossip round's, a pushed join's, a redial) is answered with
            // this node's changes too, but without spending their repeats: answers to others'
            // rounds would otherwise use them up within a second, and a member that missed that
            // second would never hear the news from the probes' messages.
            out.append(
                .send(
                    .ack(sequence: sequence, target: myself, gossip: outgoingGossip(spending: sequence != 0)),
                    to: sender))
        case .pingRequest(let sequence, let target, _):
            if target == myself {
                out.append(.send(.ack(sequence: sequence, target: myself, gossip: outgoingGossip()), to: sender))
            } else {
                let relayed = nextSequence()
                relays[relayed] = Relay(requester: sender, sequence: sequence, target: target, sentAt: now)
                out.append(.send(.ping(sequence: relayed, gossip: outgoingGossip()), to: target))
            }
        case .ack(let sequence, let target, _):
            // Sequence 0 (pushed joins, the caller's redials) is never a probe's nor a relay's.
            if let relay = relays.removeValue(forKey: sequence) {
                out.append(
                    .send(
                        .ack(sequence: relay.sequence, target: relay.target, gossip: outgoingGossip()),
                        to: relay.requester))
            } else if let probe = probes[sequence], probe.target == target {
                probes[sequence] = nil
                if target != sender {
                    out += proofOfLife(target, now: now)
                    // Answered through a helper only: the target is reachable, not directly.
                    if let requested = probe.indirectSentAt {
                        out.append(.measuredIndirectly(roundTrip: now - requested, to: target, via: sender))
                    }
                } else {
                    // Answered directly: the time from the ping to its ack is the link's round trip.
                    out.append(.measured(roundTrip: now - probe.sentAt, to: target))
                    if probe.measuresLocalHealth { adjustLocalHealth(by: -1) }
                }
            }
        }
        return out
    }

    // MARK: Evidence from outside the protocol

    /// Any frame from `member` (not only SWIM's) is proof of life, and answers a probe of it. A
    /// member not known yet is admitted (the caller hears only authenticated peers).
    public mutating func heard(from member: ClusterNode, now: Duration) -> [SWIMDirective] {
        guard member != myself else { return [] }
        let out = proofOfLife(member, now: now)
        // The frame came straight from it: as good as a direct ack for this node's health.
        if probes.values.contains(where: { $0.target == member && $0.measuresLocalHealth }) {
            adjustLocalHealth(by: -1)
        }
        probes = probes.filter { $0.value.target != member }
        return out
    }

    /// Direct evidence that `member` is gone, stronger than an unanswered ping: its address
    /// refuses connections (nothing listens there, so the process that drew this uid is gone).
    /// It is unreachable at once, and down after ``ClusterMembershipSettings/downAfter``, unless it proves
    /// otherwise first.
    public mutating func confirmUnreachable(_ member: ClusterNode, now: Duration) -> [SWIMDirective] {
        guard member != myself, let entry = members[member] else { return [] }
        switch entry.status {
        case .alive(let i), .suspect(let i): return change(member, to: .unreachable(incarnation: i), now: now)
        case .unreachable, .down: return []
        }
    }

    /// `member` said it leaves, or this node decided it is gone: down at once, for good.
    public mutating func markDown(_ member: ClusterNode, now: Duration) -> [SWIMDirective] {
        guard member != myself, let entry = members[member], entry.status != .down else { return [] }
        return change(member, to: .down, now: now)
    }

    // MARK: Internals

    /// Every member in ``inOrder(_:_:)``, kept until a member is added or forgotten (statuses
    /// change far more often than the set), so that picks need no sort.
    private var memberOrder: [ClusterNode]? = nil

    private mutating func orderedMembers() -> [ClusterNode] {
        if let memberOrder { return memberOrder }
        let order = members.keys.sorted(by: Self.inOrder)
        memberOrder = order
        return order
    }

    /// Up to `count` alive members other than `excluded`, at random. In a large table, drawn
    /// from the cached order until enough are found (no pass over every member); in a small
    /// one, or when few are alive, from all of them, as ``pick(_:from:)`` does.
    private mutating func pickReachable(_ count: Int, except excluded: ClusterNode) -> [ClusterNode] {
        guard count > 0 else { return [] }
        let order = orderedMembers()
        func eligible(_ member: ClusterNode) -> Bool {
            guard member != excluded, case .alive? = members[member]?.status else { return false }
            return true
        }
        if order.count > 4 * count {
            var picked: [ClusterNode] = []
            var draws = 0
            while picked.count < count && draws < 8 * count {
                draws += 1
                let candidate = order[Int(generator.next() % UInt64(order.count))]
                if eligible(candidate) && !picked.contains(candidate) { picked.append(candidate) }
            }
            if picked.count == count { return picked }
        }
        return pick(count, from: order.filter(eligible))
    }

    /// A fixed order of members, so that the same seed picks the same ones whatever the
    /// dictionary's (per-process) order: by uid first, which is cheap and almost always decides.
    static func inOrder(_ a: ClusterNode, _ b: ClusterNode) -> Bool {
        (a.uid, a.port, a.host) < (b.uid, b.port, b.host)
    }

    /// Sets (or removes) `member`'s entry, keeping `timed` and the member order in step.
    private mutating func setEntry(_ entry: Entry?, for member: ClusterNode) {
        if entry?.status.isTimed == true { timed.insert(member) } else { timed.remove(member) }
        if (members[member] == nil) != (entry == nil) { memberOrder = nil }
        members[member] = entry
    }

    /// How many members recalled as `.discovered` lately (bounded by `maximumRememberedDiscoveries`).
    var rememberedDiscoveryCount: Int { discoveredAt.count }

    /// Adds `member`, which the caller has direct contact with, and pushes the news to the alive
    /// members, unless gossip named it lately (whoever told this node is spreading it already;
    /// so that a join costs O(members) pushes, not O(members²)).
    private mutating func admit(_ member: ClusterNode, now: Duration) -> [SWIMDirective] {
        let status = ClusterMemberStatus.alive(incarnation: 0)
        setEntry(Entry(status: status, since: now), for: member)
        enqueue(member, status)
        var out: [SWIMDirective] = [.event(ClusterMembershipEvent(member: member, status: status))]
        guard !forgetDiscovery(of: member) else { return out }
        let news = [
            SWIMMessage.Gossip(member: myself, status: .alive(incarnation: incarnation)),
            SWIMMessage.Gossip(member: member, status: status),
        ]
        for recipient in pickReachable(settings.joinPushFanOut, except: member) {
            out.append(.send(.ping(sequence: 0, gossip: news), to: recipient))
        }
        return out
    }

    /// A message from `member` shows it is up: a suspect or unreachable member is alive again
    /// here (at its incarnation; it refutes others' suspicion itself when it hears of it). An
    /// unknown member is admitted.
    private mutating func proofOfLife(_ member: ClusterNode, now: Duration) -> [SWIMDirective] {
        guard member != myself else { return [] }
        guard let entry = members[member] else { return admit(member, now: now) }
        switch entry.status {
        case .suspect(let i), .unreachable(let i):
            setEntry(Entry(status: .alive(incarnation: i), since: now, suspicionClearedAt: i), for: member)
            return [.event(ClusterMembershipEvent(member: member, status: .alive(incarnation: i)))]
        case .alive, .down:
            return []
        }
    }

    private mutating func merge(_ item: SWIMMessage.Gossip, from sender: ClusterNode, now: Duration) -> [SWIMDirective]
    {
        if item.member == myself { return refute(item.status) }
        // The message itself is fresher news of its sender than anything it says against itself.
        if item.member == sender {
            guard case .alive = item.status else { return [] }
        }
        guard let known = members[item.member] else {
            return item.status == .down ? [] : discover(item.member, now: now)
        }
        switch item.status {
        case .alive:
            if known.status == .down {
                // Another member has it alive: it still runs and has not learned it is down here.
                // A dial tells it (the handshake refuses it with a proved "you are down", or it
                // refuses this node the same way if it holds this node down). Two nodes that held
                // each other down after a healed partition otherwise never spoke again, while
                // every other member had both alive (the simulator, seed 27585). Its own word is
                // not such news: no member that holds it down reads it.
                return item.member == sender ? [] : discover(item.member, now: now)
            }
            guard item.status.supersedes(known.status) else { return [] }
            return change(item.member, to: item.status, now: now)
        case .suspect(let i), .unreachable(let i):
            // Others' suspicion is a reason to look, not a verdict: at most suspect here.
            return suspectFromGossip(item.member, incarnation: i, accuser: sender, now: now)
        case .down:
            // Only on this node's own evidence: the member is unreachable here already. Else a
            // reason to look: a probe of it, whose silence (or a refused or superseded dial) is
            // this node's evidence. Ignoring it left a node whose stretched probe rounds had not
            // reached a crashed member to learn of it a minute late, while every other member,
            // having dialled the node's next run, had it down (the simulator, seed 11955).
            switch known.status {
            case .unreachable:
                return change(item.member, to: .down, now: now)
            case .alive, .suspect:
                guard !probes.values.contains(where: { $0.target == item.member }) else { return [] }
                return [sendPing(to: item.member, now: now, measuresLocalHealth: false)]
            case .down:
                return []
            }
        }
    }

    /// Gossip about this node: only suspicion matters, refuted by a higher incarnation
    /// (saturating: a forged `UInt64.max` must not trap; direct probes clear this node anyway).
    private mutating func refute(_ status: ClusterMemberStatus) -> [SWIMDirective] {
        switch status {
        case .suspect(let i), .unreachable(let i):
            guard i >= incarnation else { return [] }
            incarnation = i == .max ? .max : i + 1
            adjustLocalHealth(by: 1)
            enqueue(myself, .alive(incarnation: incarnation))
        case .alive, .down:
            break
        }
        return []
    }

    private mutating func suspectFromGossip(
        _ member: ClusterNode, incarnation i: UInt64, accuser: ClusterNode, now: Duration
    ) -> [SWIMDirective] {
        guard let known = members[member] else { return [] }
        let suspicion = ClusterMemberStatus.suspect(incarnation: i)
        if known.status == suspicion {
            confirmSuspicion(of: member, by: accuser)
            return []
        }
        guard suspicion.supersedes(known.status) else { return [] }
        if known.status == .alive(incarnation: i) && known.suspicionClearedAt == i {
            // Cleared here by its own answer at this incarnation: not taken up again from gossip
            // (a suspicion it cannot outbid must die out), but checked with a probe of its own,
            // whose silence is this node's evidence. Ignoring it outright left a node that had
            // once cleared a member to find its crash by its own probe round: 28 s in one of
            // the simulator's schedules.
            guard !probes.values.contains(where: { $0.target == member }) else { return [] }
            return [sendPing(to: member, now: now, measuresLocalHealth: false)]
        }
        var out = change(member, to: suspicion, now: now, accuser: accuser)
        if !probes.values.contains(where: { $0.target == member }) {
            out.append(sendPing(to: member, now: now, measuresLocalHealth: false))
        }
        return out
    }

    private mutating func confirmSuspicion(of member: ClusterNode, by confirmer: ClusterNode) {
        guard var suspicion = members[member]?.suspicion, confirmer != suspicion.accuser,
            suspicion.confirmations.count < suspicion.confirmationsNeeded
        else { return }
        suspicion.confirmations.insert(confirmer)
        members[member]?.suspicion = suspicion
    }

    /// Lifeguard's dynamic suspicion timeout: from `suspicionTimeout × suspicionMaximumMultiplier`
    /// with no confirmation down to `suspicionTimeout` with all those needed, logarithmically.
    private func suspicionTimeout(_ suspicion: Suspicion?) -> Duration {
        let minimum = settings.suspicionTimeout
        let maximum = minimum * max(1, settings.suspicionMaximumMultiplier)
        guard let suspicion, suspicion.confirmationsNeeded > 0 else { return minimum }
        let progress =
            log(Double(suspicion.confirmations.count + 1)) / log(Double(suspicion.confirmationsNeeded + 1))
        return max(minimum, maximum - (maximum - minimum) * min(1, progress))
    }

    /// Confirmations a new suspicion of `member` can get: the members that could confirm it
    /// (alive or suspect, but not it nor its accuser), up to `suspicionConfirmations`, so that a
    /// small cluster is not held to the longest timeout for want of members.
    private func confirmationsNeeded(toSuspect member: ClusterNode) -> Int {
        // Counted only up to what is needed: O(1) in a large cluster, not O(members).
        let wanted = max(0, settings.suspicionConfirmations)
        var others = 0
        for (key, entry) in members {
            if others >= wanted { break }
            guard key != member else { continue }
            switch entry.status {
            case .alive, .suspect: others += 1
            case .unreachable, .down: break
            }
        }
        // This node and the others (the table holds no entry for this node) less the accuser.
        return min(wanted, others)
    }

    private mutating func change(
        _ member: ClusterNode, to status: ClusterMemberStatus, now: Duration, accuser: ClusterNode? = nil
    ) -> [SWIMDirective] {
        var entry = Entry(status: status, since: now, suspicionClearedAt: members[member]?.suspicionClearedAt)
        if case .suspect = status {
            entry.suspicion = Suspicion(
                accuser: accuser ?? myself, confirmationsNeeded: confirmationsNeeded(toSuspect: member))
        }
        setEntry(entry, for: member)
        enqueue(member, status)
        if status == .down {
            probes = probes.filter { $0.value.target != member }
            tombstones.append(member)
            while tombstones.count > max(0, settings.maximumTombstones) {
                setEntry(nil, for: tombstones.removeFirst())
            }
        }
        return [.event(ClusterMembershipEvent(member: member, status: status))]
    }

    private mutating func adjustLocalHealth(by delta: Int) {
        localHealthMultiplier = min(
            max(0, localHealthMultiplier + delta), max(0, settings.maximumLocalHealthMultiplier))
    }

    /// `.discovered(member)`, unless reported within the last probe interval; the memory of
    /// reports is bounded (oldest dropped), so that a flood of made-up names costs bounded memory.
    private mutating func discover(_ member: ClusterNode, now: Duration) -> [SWIMDirective] {
        forgetDiscoveries(expiredBy: now)
        guard discoveredAt[member] == nil else { return [] }
        discoveredAt[member] = now
        discoveryOrder.append(member)
        while discoveryOrder.count > max(0, settings.maximumRememberedDiscoveries) {
            discoveredAt[discoveryOrder.removeFirst()] = nil
        }
        return [.discovered(member)]
    }

    private mutating func forgetDiscoveries(expiredBy now: Duration) {
        while let oldest = discoveryOrder.first, now - discoveredAt[oldest]! >= settings.probeInterval {
            discoveredAt[oldest] = nil
            discoveryOrder.removeFirst()
        }
    }

    /// Forgets that `member` was discovered; returns whether it was.
    private mutating func forgetDiscovery(of member: ClusterNode) -> Bool {
        guard discoveredAt.removeValue(forKey: member) != nil else { return false }
        discoveryOrder.removeAll { $0 == member }
        return true
    }

    private mutating func enqueue(_ member: ClusterNode, _ status: ClusterMemberStatus) {
        gossip.removeAll { $0.member == member }
        gossip.append(
            GossipItem(
                member: member, status: status, remaining: gossipRepeats,
                roundsLeft: settings.gossipFanOut > 0 ? max(0, settings.gossipRounds) : 0))
    }

    /// How many messages each change rides on: `gossipRepeats`, or 4 × ⌈log10(members + 1)⌉
    /// when more (memberlist's rule), so that a change still reaches every member of a large
    /// cluster (16 at 1,000 members; the simulator measured 6 leaving the last members to
    /// learn a crash from their own probes, seconds later).
    var gossipRepeats: Int {
        var digits = 0
        var remaining = members.count + 1
        while remaining > 1 {
            digits += 1
            remaining = (remaining + 9) / 10
        }
        return max(settings.gossipRepeats, settings.scalesGossipRepeats ? 4 * digits : 0)
    }

    /// Up to `gossipPerMessage` recent changes (each sent `gossipRepeats` times; `spending`
    /// false carries them without counting), and this member's own status; room left over
    /// carries alive members in turn (anti-entropy).
    private mutating func outgoingGossip(spending: Bool = true) -> [SWIMMessage.Gossip] {
        var picked = [SWIMMessage.Gossip(member: myself, status: .alive(incarnation: incarnation))]
        for index in gossip.indices where gossip[index].remaining > 0 && gossip[index].member != myself {
            guard picked.count <= settings.gossipPerMessage else { break }
            picked.append(SWIMMessage.Gossip(member: gossip[index].member, status: gossip[index].status))
            if spending { gossip[index].remaining -= 1 }
        }
        // A change stays while it has repeats or gossip rounds left.
        gossip.removeAll { ($0.remaining <= 0 && $0.roundsLeft <= 0) || $0.member == myself }
        if settings.antiEntropy { fillWithMembers(&picked) }
        return picked
    }

    /// Fills `picked` up to `gossipPerMessage` changes with alive members, taken in turn from a
    /// shuffled pass over the table: news lost with its messages (a join pushed during a burst
    /// of loss, its repeats spent) still reaches every member, within about
    /// members / `gossipPerMessage` messages. The cluster simulator found views that never
    /// converged without it.
    private mutating func fillWithMembers(_ picked: inout [SWIMMessage.Gossip]) {
        var refilled = false
        while picked.count <= settings.gossipPerMessage {
            guard let member = fillOrder.popLast() else {
                guard !refilled else { return }
                refilled = true
                fillOrder = orderedMembers()
                fillOrder.shuffle(using: &generator)
                continue
            }
            guard let status = members[member]?.status, case .alive = status,
                !picked.contains(where: { $0.member == member })
            else { continue }
            picked.append(SWIMMessage.Gossip(member: member, status: status))
        }
    }

    /// Never 0, which pushed joins and the caller's own pings use, so that their acks match nothing.
    private mutating func nextSequence() -> UInt64 {
        sequence = sequence == .max ? 1 : sequence + 1
        return sequence
    }

    private mutating func sendPing(to target: ClusterNode, now: Duration, measuresLocalHealth: Bool) -> SWIMDirective {
        let sequence = nextSequence()
        probes[sequence] = Probe(
            target: target, sentAt: now, indirectAt: now + effectivePingTimeout,
            expiresAt: now + effectiveProbeInterval,
            measuresLocalHealth: measuresLocalHealth)
        var gossip = outgoingGossip()
        // A member suspected here is told so by every ping it gets, whatever its news's repeats
        // (as memberlist's probes do), so that a live member can refute: once gossip rounds
        // spread a suspicion in a second, its repeats could be spent before a cut link healed.
        if let status = members[target]?.status, status.isTimed, !gossip.contains(where: { $0.member == target }) {
            gossip.append(SWIMMessage.Gossip(member: target, status: status))
        }
        return .send(.ping(sequence: sequence, gossip: gossip), to: target)
    }

    /// The next member of the current round (a shuffled list of the members not down, taken
    /// from its end; members gone down or forgotten since it was drawn are skipped).
    private mutating func nextTarget() -> ClusterNode? {
        for refill in [false, true] {
            if refill {
                round = orderedMembers()
                round.shuffle(using: &generator)
            }
            while let candidate = round.popLast() {
                if let entry = members[candidate], entry.status != .down { return candidate }
            }
        }
        return nil
    }

    /// `count` of `candidates` at random (all of them, in order, when there are no more).
    private mutating func pick(_ count: Int, from candidates: [ClusterNode]) -> [ClusterNode] {
        guard candidates.count > count else { return candidates }
        var shuffled = candidates
        shuffled.shuffle(using: &generator)
        return Array(shuffled.prefix(max(0, count)))
    }
}

/// What the caller of a ``SWIMStateMachine`` must do.
public enum SWIMDirective: Hashable, Sendable {
    case send(SWIMMessage, to: ClusterNode)
    case event(ClusterMembershipEvent)
    /// Gossip named `member`, unknown here: dial it, and call `join([member])` once its
    /// handshake completes (gossip alone never admits a member). Repeated at most once a probe
    /// interval per member. Also for a member held down here that another member has alive:
    /// the dial is to tell it it is down (the handshake's proved notice; `join` ignores a member
    /// already in the table, down ones included).
    case discovered(ClusterNode)
    /// A ping to `member` was acked directly after `roundTrip` (the link's round trip, as the
    /// caller's clock measured it: for the caller's statistics only).
    case measured(roundTrip: Duration, to: ClusterNode)
    /// A probe of `member` was answered only through `helper`, `roundTrip` after the indirect
    /// requests went out (this node to the helper, the helper to `member`, and back): `member`
    /// is reachable, but its direct link lost the ping or its ack. For the caller's statistics
    /// only.
    case measuredIndirectly(roundTrip: Duration, to: ClusterNode, via: ClusterNode)
}

/// SWIM's timing and fan-out, and the bounds that keep a misbehaving peer's gossip cheap.
public struct ClusterMembershipSettings: Sendable {
    /// How often a member probes another (stretched by the local health multiplier).
    public var probeInterval: Duration = .seconds(1)
    /// How long a direct ping waits before indirect probes are sent (stretched likewise).
    public var pingTimeout: Duration = .milliseconds(300)
    /// Members asked to probe indirectly.
    public var indirectProbes = 3
    /// How long a suspect has to refute before it is unreachable, once its suspicion is fully
    /// confirmed (the shortest suspicion timeout).
    public var suspicionTimeout: Duration = .seconds(3)
    /// Lifeguard: an unconfirmed suspicion lasts `suspicionTimeout` × this, so that a member
    /// only this node cannot reach has longer to clear itself. Default 3.
    public var suspicionMaximumMultiplier = 3
    /// Lifeguard: the confirmations (suspicion of the member gossiped by distinct other
    /// members) that bring the timeout down to `suspicionTimeout`; fewer in a cluster with
    /// fewer members to confirm. Default 3.
    public var suspicionConfirmations = 3
    /// Lifeguard: the highest local health multiplier; a node that misses acks or is suspected
    /// probes up to (this + 1) times less often, and waits that much longer. Default 8.
    public var maximumLocalHealthMultiplier = 8
    /// How long an unreachable member stays before it is down.
    public var downAfter: Duration = .seconds(10)
    /// Status changes piggy-backed per message, and how many messages each rides on.
    public var gossipPerMessage = 8
    public var gossipRepeats = 6
    /// Members told at once of a member this node admits (a ping of sequence 0), so that a
    /// join spreads in one round trip rather than a probe round. Default 64.
    public var joinPushFanOut = 64
    /// Gossip rounds: while this node has changes to spread, every `gossipInterval` it sends
    /// them to `gossipFanOut` random alive members (pings of sequence 0), each change for
    /// `gossipRounds` rounds, besides its `gossipRepeats` messages on the probes. A change
    /// then costs each node `gossipRounds × gossipFanOut` more small frames (and their acks),
    /// and a quiet cluster none. `gossipFanOut` 0 turns the rounds off (changes ride on the
    /// probes only). Defaults 200 ms and 3 (memberlist's), and 4 rounds.
    public var gossipInterval: Duration = .milliseconds(200)
    public var gossipFanOut = 3
    public var gossipRounds = 4
    /// Each change rides on max(`gossipRepeats`, 4 × ⌈log10(members + 1)⌉) messages when on
    /// (memberlist's rule: enough to reach every member of a large cluster). Default on.
    public var scalesGossipRepeats = true
    /// Anti-entropy: each message's spare gossip room (up to `gossipPerMessage`) carries alive
    /// members in turn, so that a change whose gossip was lost still reaches every member (as
    /// memberlist's periodic full-state sync does, within the same frames). Default on.
    public var antiEntropy = true
    /// Down members remembered, so that gossip cannot bring them back; the oldest are
    /// forgotten first. Default 1,000.
    public var maximumTombstones = 1_000
    /// Members reported as `.discovered` remembered for a probe interval, so that each is
    /// reported once per interval; bounded against floods of made-up names. Default 256.
    public var maximumRememberedDiscoveries = 256

    public init() {}

    /// Why these settings cannot be used, or nil: a length of time that must be above zero
    /// (`probeInterval`, `pingTimeout`, `suspicionTimeout`, `gossipInterval`), a negative
    /// `downAfter` or count, or a `suspicionMaximumMultiplier` below 1. The text names the
    /// setting as `membership.<name>`, its value and what it may be.
    ///
    /// `ClusterSystem.init` throws `ClusterStartError.invalidSetting` with this text;
    /// `ClusterSimulation.init` and ``SWIMStateMachine/init(myself:settings:seed:)`` stop the
    /// process with it.
    public var problem: String? {
        let lengths: [(String, Duration)] = [
            ("probeInterval", probeInterval), ("pingTimeout", pingTimeout),
            ("suspicionTimeout", suspicionTimeout), ("gossipInterval", gossipInterval),
        ]
        for (name, value) in lengths where value <= .zero {
            return "membership.\(name) is a length of time above zero, not \(value)"
        }
        if downAfter < .zero { return "membership.downAfter is a length of time, zero or more, not \(downAfter)" }
        if suspicionMaximumMultiplier < 1 {
            return
                "membership.suspicionMaximumMultiplier is 1 (no Lifeguard stretch) or more, not \(suspicionMaximumMultiplier)"
        }
        let counts: [(String, Int)] = [
            ("indirectProbes", indirectProbes), ("suspicionConfirmations", suspicionConfirmations),
            ("maximumLocalHealthMultiplier", maximumLocalHealthMultiplier), ("gossipPerMessage", gossipPerMessage),
            ("gossipRepeats", gossipRepeats), ("joinPushFanOut", joinPushFanOut), ("gossipFanOut", gossipFanOut),
            ("gossipRounds", gossipRounds), ("maximumTombstones", maximumTombstones),
            ("maximumRememberedDiscoveries", maximumRememberedDiscoveries),
        ]
        for (name, value) in counts where value < 0 {
            return "membership.\(name) is a count, 0 or more, not \(value)"
        }
        return nil
    }
}

/// SplitMix64, for the probe order: the same seed, the same schedule.
package struct SplitMix: RandomNumberGenerator, Sendable {
    var state: UInt64
    package init(seed: UInt64) { state = seed }
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@available(*, deprecated, renamed: "ClusterMembershipSettings")
public typealias SWIMSettings = ClusterMembershipSettings
