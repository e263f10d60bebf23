/// Failure detection and membership by SWIM, as a pure state machine: no threads, no clock, no
/// network. The caller feeds it time (`tick(now:)`) and messages (`receive(_:from:now:)`) and
/// carries out what it returns (`SWIMDirective`s: messages to send, membership events), so that
/// its tests replay any schedule of messages, losses and partitions deterministically.
///
/// The protocol: every `probeInterval` a member pings the next member of a shuffled round; a
/// ping unanswered after `pingTimeout` is retried indirectly through `indirectProbes` other
/// members (the case where one link is cut but the member is up); unanswered by the end of the
/// probe period, the member becomes suspect. A suspect refutes by raising its incarnation; a
/// suspect past `suspicionTimeout` becomes unreachable, and an unreachable member past
/// `downAfter` is down, for good (a restarted node joins with a new uid). Status changes ride on
/// every message as gossip. Any message from a member is proof of life.
public struct SWIMStateMachine: Sendable {
    public let myself: MemberID
    public let settings: SWIMSettings
    public private(set) var incarnation: UInt64 = 0
    private var members: [MemberID: Entry] = [:]
    private var round: [MemberID] = []
    private var nextProbeAt: Duration?
    private var sequence: UInt64 = 0
    private var probes: [UInt64: Probe] = [:]
    private var relays: [UInt64: Relay] = [:]
    private var gossip: [GossipItem] = []
    private var generator: SplitMix

    struct Entry {
        var status: MemberStatus
        var since: Duration
    }

    struct Probe {
        let target: MemberID
        let sentAt: Duration
        var indirect: Bool
    }

    struct Relay {
        let requester: MemberID
        let sequence: UInt64
        let target: MemberID
        let sentAt: Duration
    }

    struct GossipItem {
        let member: MemberID
        let status: MemberStatus
        var remaining: Int
    }

    public init(myself: MemberID, settings: SWIMSettings = SWIMSettings(), seed: UInt64) {
        self.myself = myself
        self.settings = settings
        generator = SplitMix(seed: seed ^ myself.uid)
    }

    /// What this member knows of every other (down ones included).
    public var membership: [MemberID: MemberStatus] { members.mapValues(\.status) }

    public func status(of member: MemberID) -> MemberStatus? {
        member == myself ? .alive(incarnation: incarnation) : members[member]?.status
    }

    /// Joins through `seeds`: they are pinged at once, and they learn of this member from it.
    public mutating func join(_ seeds: [MemberID], now: Duration) -> [SWIMDirective] {
        var out: [SWIMDirective] = []
        for seed in seeds where seed != myself && members[seed] == nil {
            members[seed] = Entry(status: .alive(incarnation: 0), since: now)
            // Gossiped, so that the members already here learn of the newcomer.
            enqueue(seed, .alive(incarnation: 0))
            out.append(.event(MembershipEvent(member: seed, status: .alive(incarnation: 0))))
            out.append(sendPing(to: seed, now: now))
        }
        return out
    }

    // MARK: Time

    /// Advances the protocol to `now`: times out probes and suspicions, and starts the next
    /// probe when one is due.
    public mutating func tick(now: Duration) -> [SWIMDirective] {
        var out: [SWIMDirective] = []
        // Probes: indirect after the ping timeout, suspicion at the end of the probe period.
        for (sequence, probe) in probes.sorted(by: { $0.key < $1.key }) {
            let age = now - probe.sentAt
            if !probe.indirect && age >= settings.pingTimeout {
                probes[sequence]?.indirect = true
                let helpers = pick(settings.indirectProbes, from: reachableMembers.filter { $0 != probe.target })
                for helper in helpers {
                    out.append(
                        .send(
                            .pingRequest(sequence: sequence, target: probe.target, gossip: outgoingGossip()), to: helper
                        ))
                }
            }
            if age >= settings.probeInterval {
                probes[sequence] = nil
                if case .alive(let i)? = members[probe.target]?.status {
                    out += change(probe.target, to: .suspect(incarnation: i), now: now)
                }
            }
        }
        relays = relays.filter { now - $0.value.sentAt < settings.probeInterval }
        // Suspicion and unreachability time out.
        for (member, entry) in members.sorted(by: { $0.key.description < $1.key.description }) {
            switch entry.status {
            case .suspect(let i) where now - entry.since >= settings.suspicionTimeout:
                out += change(member, to: .unreachable(incarnation: i), now: now)
            case .unreachable where now - entry.since >= settings.downAfter:
                out += change(member, to: .down, now: now)
            default:
                break
            }
        }
        // The next probe.
        if nextProbeAt == nil || now >= nextProbeAt! {
            nextProbeAt = now + settings.probeInterval
            if let target = nextTarget() { out.append(sendPing(to: target, now: now)) }
        }
        return out
    }

    // MARK: Messages

    /// Handles a message from `sender`.
    public mutating func receive(_ message: SWIMMessage, from sender: MemberID, now: Duration) -> [SWIMDirective] {
        var out = proofOfLife(sender, now: now)
        for item in message.gossip { out += merge(item, now: now) }
        switch message {
        case .ping(let sequence, _):
            out.append(.send(.ack(sequence: sequence, target: myself, gossip: outgoingGossip()), to: sender))
        case .pingRequest(let sequence, let target, _):
            if target == myself {
                out.append(.send(.ack(sequence: sequence, target: myself, gossip: outgoingGossip()), to: sender))
            } else {
                self.sequence += 1
                relays[self.sequence] = Relay(requester: sender, sequence: sequence, target: target, sentAt: now)
                out.append(.send(.ping(sequence: self.sequence, gossip: outgoingGossip()), to: target))
            }
        case .ack(let sequence, let target, _):
            if let relay = relays.removeValue(forKey: sequence) {
                out.append(
                    .send(
                        .ack(sequence: relay.sequence, target: relay.target, gossip: outgoingGossip()),
                        to: relay.requester))
            } else if let probe = probes[sequence], probe.target == target {
                probes[sequence] = nil
                if target != sender { out += proofOfLife(target, now: now) }
            }
        }
        return out
    }

    // MARK: Evidence from outside the protocol

    /// Any frame from `member` (not only SWIM's) is proof of life, and answers a probe of it.
    public mutating func heard(from member: MemberID, now: Duration) -> [SWIMDirective] {
        guard member != myself else { return [] }
        let out = proofOfLife(member, now: now)
        probes = probes.filter { $0.value.target != member }
        return out
    }

    /// Direct evidence that `member` is gone, stronger than an unanswered ping: its address
    /// refuses connections (nothing listens there, so the process that drew this uid is gone).
    /// It is unreachable at once, and down after ``SWIMSettings/downAfter``, unless it proves
    /// otherwise first.
    public mutating func confirmUnreachable(_ member: MemberID, now: Duration) -> [SWIMDirective] {
        guard member != myself, let entry = members[member] else { return [] }
        switch entry.status {
        case .alive(let i), .suspect(let i): return change(member, to: .unreachable(incarnation: i), now: now)
        case .unreachable, .down: return []
        }
    }

    /// `member` said it leaves, or this node decided it is gone: down at once, for good.
    public mutating func markDown(_ member: MemberID, now: Duration) -> [SWIMDirective] {
        guard member != myself, let entry = members[member], entry.status != .down else { return [] }
        return change(member, to: .down, now: now)
    }

    // MARK: Internals

    private var reachableMembers: [MemberID] {
        members.filter { if case .alive = $0.value.status { true } else { false } }.keys
            .sorted { $0.description < $1.description }
    }

    /// A message from `member` shows it is up: a suspect or unreachable member is alive again
    /// here (at its incarnation; it refutes others' suspicion itself when it hears of it).
    private mutating func proofOfLife(_ member: MemberID, now: Duration) -> [SWIMDirective] {
        guard member != myself else { return [] }
        guard let entry = members[member] else {
            members[member] = Entry(status: .alive(incarnation: 0), since: now)
            enqueue(member, .alive(incarnation: 0))
            return [.event(MembershipEvent(member: member, status: .alive(incarnation: 0)))]
        }
        switch entry.status {
        case .suspect(let i), .unreachable(let i):
            members[member] = Entry(status: .alive(incarnation: i), since: now)
            return [.event(MembershipEvent(member: member, status: .alive(incarnation: i)))]
        case .alive, .down:
            return []
        }
    }

    private mutating func merge(_ item: SWIMMessage.Gossip, now: Duration) -> [SWIMDirective] {
        if item.member == myself {
            // Suspected (or declared unreachable) at our incarnation or later: refute.
            switch item.status {
            case .suspect(let i), .unreachable(let i):
                if i >= incarnation {
                    incarnation = i + 1
                    enqueue(myself, .alive(incarnation: incarnation))
                }
            case .alive, .down:
                break
            }
            return []
        }
        guard let known = members[item.member] else {
            guard item.status != .down else { return [] }
            members[item.member] = Entry(status: item.status, since: now)
            enqueue(item.member, item.status)
            return [.event(MembershipEvent(member: item.member, status: item.status))]
        }
        guard item.status.supersedes(known.status) else { return [] }
        return change(item.member, to: item.status, now: now)
    }

    private mutating func change(_ member: MemberID, to status: MemberStatus, now: Duration) -> [SWIMDirective] {
        members[member] = Entry(status: status, since: now)
        enqueue(member, status)
        if status == .down { probes = probes.filter { $0.value.target != member } }
        return [.event(MembershipEvent(member: member, status: status))]
    }

    private mutating func enqueue(_ member: MemberID, _ status: MemberStatus) {
        gossip.removeAll { $0.member == member }
        gossip.append(GossipItem(member: member, status: status, remaining: settings.gossipRepeats))
    }

    /// Up to `gossipPerMessage` recent changes (each sent `gossipRepeats` times), and this
    /// member's own status.
    private mutating func outgoingGossip() -> [SWIMMessage.Gossip] {
        var picked = [SWIMMessage.Gossip(member: myself, status: .alive(incarnation: incarnation))]
        for index in gossip.indices.prefix(settings.gossipPerMessage) where gossip[index].member != myself {
            picked.append(SWIMMessage.Gossip(member: gossip[index].member, status: gossip[index].status))
            gossip[index].remaining -= 1
        }
        gossip.removeAll { $0.remaining <= 0 || $0.member == myself }
        return picked
    }

    private mutating func sendPing(to target: MemberID, now: Duration) -> SWIMDirective {
        sequence += 1
        probes[sequence] = Probe(target: target, sentAt: now, indirect: false)
        return .send(.ping(sequence: sequence, gossip: outgoingGossip()), to: target)
    }

    /// The next member of the current round (a shuffled list of the members not down).
    private mutating func nextTarget() -> MemberID? {
        round.removeAll { members[$0]?.status == .down || members[$0] == nil }
        if round.isEmpty {
            round = members.filter { $0.value.status != .down }.keys.sorted { $0.description < $1.description }
            round.shuffle(using: &generator)
        }
        return round.isEmpty ? nil : round.removeFirst()
    }

    private mutating func pick(_ count: Int, from candidates: [MemberID]) -> [MemberID] {
        var shuffled = candidates
        shuffled.shuffle(using: &generator)
        return Array(shuffled.prefix(count))
    }
}

/// What the caller of a ``SWIMStateMachine`` must do.
public enum SWIMDirective: Hashable, Sendable {
    case send(SWIMMessage, to: MemberID)
    case event(MembershipEvent)
}

/// SWIM's timing and fan-out.
public struct SWIMSettings: Sendable {
    /// How often a member probes another.
    public var probeInterval: Duration = .seconds(1)
    /// How long a direct ping waits before indirect probes are sent.
    public var pingTimeout: Duration = .milliseconds(300)
    /// Members asked to probe indirectly.
    public var indirectProbes = 3
    /// How long a suspect has to refute before it is unreachable.
    public var suspicionTimeout: Duration = .seconds(3)
    /// How long an unreachable member stays before it is down.
    public var downAfter: Duration = .seconds(10)
    /// Status changes piggy-backed per message, and how many messages each rides on.
    public var gossipPerMessage = 8
    public var gossipRepeats = 6

    public init() {}
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
