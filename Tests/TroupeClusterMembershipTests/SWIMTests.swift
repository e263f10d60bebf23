import Testing

@testable import TroupeClusterMembership

/// SWIM on a simulated network with a simulated clock: joins, crashes, cut links, refutation,
/// restarts, all deterministic. Serialized, and the simulation yields its thread every few
/// ticks: it is CPU work on Swift's 2-thread cooperative pool, which other suites' tasks need
/// (two of them timed out in CI while simulations held both threads).
@Suite(.serialized) struct SWIMTests {
    /// Nodes, a network with 1 ms latency that can lose a node or a link, and a clock. A
    /// `.discovered` member that is a live node of the simulation is dialled: after one latency
    /// the discoverer joins it (the caller's handshake); made-up members are dropped.
    struct Network {
        var nodes: [ClusterNode: SWIMStateMachine] = [:]
        var now: Duration = .zero
        var inFlight: [(at: Duration, from: ClusterNode, to: ClusterNode, message: SWIMMessage)] = []
        var dials: [(at: Duration, from: ClusterNode, to: ClusterNode)] = []
        var crashed: Set<ClusterNode> = []
        var cutLinks: Set<[ClusterNode]> = []
        /// Nodes whose messages are lost (they still receive): a one-way cut.
        var muted: Set<ClusterNode> = []
        var events: [ClusterNode: [ClusterMembershipEvent]] = [:]
        var eventTimes: [(at: Duration, observer: ClusterNode, event: ClusterMembershipEvent)] = []
        var roundTrips: [(by: ClusterNode, to: ClusterNode, roundTrip: Duration)] = []
        var indirectRoundTrips: [(by: ClusterNode, to: ClusterNode, via: ClusterNode, roundTrip: Duration)] = []
        let settings: ClusterMembershipSettings

        init(settings: ClusterMembershipSettings = ClusterMembershipSettings()) { self.settings = settings }

        static func member(_ index: Int, uid: UInt64 = 1) -> ClusterNode {
            ClusterNode(host: "127.0.0.\(index)", port: 7337, uid: uid)
        }

        mutating func start(_ member: ClusterNode, seeds: [ClusterNode]) {
            var machine = SWIMStateMachine(myself: member, settings: settings, seed: 42)
            let directives = machine.join(seeds, now: now)
            nodes[member] = machine
            carryOut(directives, by: member)
        }

        mutating func cut(_ a: ClusterNode, _ b: ClusterNode) {
            cutLinks.insert([a, b].sorted { $0.description < $1.description })
        }

        func isCut(_ a: ClusterNode, _ b: ClusterNode) -> Bool {
            cutLinks.contains([a, b].sorted { $0.description < $1.description })
        }

        mutating func carryOut(_ directives: [SWIMDirective], by member: ClusterNode) {
            for directive in directives {
                switch directive {
                case .send(let message, let to):
                    inFlight.append((now + .milliseconds(1), member, to, message))
                case .event(let event):
                    events[member, default: []].append(event)
                    eventTimes.append((now, member, event))
                case .discovered(let discovered):
                    if nodes[discovered] != nil { dials.append((now + .milliseconds(1), member, discovered)) }
                case .measured(let roundTrip, let to):
                    roundTrips.append((member, to, roundTrip))
                case .measuredIndirectly(let roundTrip, let to, let helper):
                    indirectRoundTrips.append((member, to, helper, roundTrip))
                }
            }
        }

        /// Sends `message` as if `from` had (a forged or buggy frame, say).
        mutating func inject(_ message: SWIMMessage, from: ClusterNode, to: ClusterNode) {
            inFlight.append((now + .milliseconds(1), from, to, message))
        }

        /// Runs the network for `duration`, 10 ms at a time: delivers what is due (unless a
        /// node is crashed or the link cut), then ticks every live node.
        mutating func run(for duration: Duration) async {
            let end = now + duration
            var ticks = 0
            while now < end {
                ticks += 1
                if ticks % 20 == 0 { await Task.yield() }
                now += .milliseconds(10)
                let due = inFlight.filter { $0.at <= now }
                inFlight.removeAll { $0.at <= now }
                for delivery in due {
                    guard !crashed.contains(delivery.to), !crashed.contains(delivery.from),
                        !isCut(delivery.from, delivery.to), !muted.contains(delivery.from),
                        var node = nodes[delivery.to]
                    else { continue }
                    let directives = node.receive(delivery.message, from: delivery.from, now: now)
                    nodes[delivery.to] = node
                    carryOut(directives, by: delivery.to)
                }
                let dialled = dials.filter { $0.at <= now }
                dials.removeAll { $0.at <= now }
                for dial in dialled {
                    guard !crashed.contains(dial.to), !crashed.contains(dial.from), !isCut(dial.from, dial.to),
                        var node = nodes[dial.from]
                    else { continue }
                    let directives = node.join([dial.to], now: now)
                    nodes[dial.from] = node
                    carryOut(directives, by: dial.from)
                }
                for member in nodes.keys.sorted(by: { $0.description < $1.description }) where !crashed.contains(member)
                {
                    var node = nodes[member]!
                    let directives = node.tick(now: now)
                    nodes[member] = node
                    carryOut(directives, by: member)
                }
            }
        }

        func status(of member: ClusterNode, at observer: ClusterNode) -> ClusterMemberStatus? {
            nodes[observer]!.status(of: member)
        }
    }

    static let a = Network.member(1), b = Network.member(2), c = Network.member(3), d = Network.member(4)

    func fourNodes() -> Network {
        var network = Network()
        network.start(Self.a, seeds: [])
        for node in [Self.b, Self.c, Self.d] { network.start(node, seeds: [Self.a]) }
        return network
    }

    @Test func nodesJoiningThroughOneSeedLearnOfEachOther() async {
        var network = fourNodes()
        await network.run(for: .seconds(5))
        for observer in [Self.a, Self.b, Self.c, Self.d] {
            for member in [Self.a, Self.b, Self.c, Self.d] where member != observer {
                #expect(network.status(of: member, at: observer) == .alive(incarnation: 0), "\(observer) on \(member)")
            }
        }
    }

    @Test func directAcksMeasureEachLinksRoundTrip() async {
        var network = fourNodes()
        await network.run(for: .seconds(5))
        let members = [Self.a, Self.b, Self.c, Self.d]
        for observer in members {
            let measured = Set(network.roundTrips.filter { $0.by == observer }.map(\.to))
            #expect(measured == Set(members.filter { $0 != observer }), "\(observer) measured \(measured)")
        }
        // A ping and its ack each wait for the next 10 ms step of the simulation: 20 ms.
        #expect(network.roundTrips.allSatisfy { $0.roundTrip == .milliseconds(20) })
        #expect(network.indirectRoundTrips.isEmpty, "no link lost anything")
        // An indirect ack (through a relay) says nothing about the direct link: it is measured
        // apart, with the helper that relayed it.
        var cut = fourNodes()
        await cut.run(for: .seconds(2))
        cut.cut(Self.a, Self.b)
        cut.roundTrips.removeAll()
        await cut.run(for: .seconds(3))
        #expect(!cut.roundTrips.contains { ($0.by, $0.to) == (Self.a, Self.b) || ($0.by, $0.to) == (Self.b, Self.a) })
        for (observer, member) in [(Self.a, Self.b), (Self.b, Self.a)] {
            let through = cut.indirectRoundTrips.filter { ($0.by, $0.to) == (observer, member) }
            #expect(!through.isEmpty, "\(observer) reached \(member) through no helper")
            // The request, the helper's ping, its ack and the relayed ack: four 10 ms steps.
            #expect(through.allSatisfy { $0.roundTrip == .milliseconds(40) }, "\(through.map(\.roundTrip))")
            #expect(through.allSatisfy { [Self.c, Self.d].contains($0.via) }, "\(through.map(\.via))")
        }
        #expect(cut.indirectRoundTrips.allSatisfy { [[Self.a, Self.b], [Self.b, Self.a]].contains([$0.by, $0.to]) })
    }

    @Test func aCrashedNodeIsSuspectedThenUnreachableThenDownEverywhere() async {
        var network = fourNodes()
        await network.run(for: .seconds(5))
        network.crashed.insert(Self.d)
        let crashedAt = network.now
        await network.run(for: .seconds(2) + network.settings.probeInterval * 3)
        for observer in [Self.a, Self.b, Self.c] {
            let status = network.status(of: Self.d, at: observer)
            #expect(
                status == .suspect(incarnation: 0) || status == .unreachable(incarnation: 0),
                "\(observer): \(String(describing: status))")
        }
        await network.run(for: network.settings.suspicionTimeout + network.settings.downAfter + .seconds(3))
        for observer in [Self.a, Self.b, Self.c] {
            #expect(network.status(of: Self.d, at: observer) == .down)
            let downAt = network.events[observer]!.firstIndex { $0.member == Self.d && $0.status == .down }
            #expect(downAt != nil)
            // The living never suspect each other.
            for member in [Self.a, Self.b, Self.c] where member != observer {
                #expect(network.status(of: member, at: observer) == .alive(incarnation: 0))
            }
        }
        #expect(network.now - crashedAt < .seconds(25))
    }

    @Test func aCutLinkIsBridgedByIndirectProbes() async {
        var network = fourNodes()
        await network.run(for: .seconds(5))
        network.cut(Self.a, Self.c)
        await network.run(for: .seconds(30))
        #expect(network.status(of: Self.c, at: Self.a) == .alive(incarnation: 0), "b and d vouch for c")
        #expect(network.status(of: Self.a, at: Self.c) == .alive(incarnation: 0))
        let suspicions = (network.events[Self.a] ?? []).filter {
            $0.member == Self.c && $0.status != .alive(incarnation: 0)
        }
        #expect(suspicions.isEmpty, "\(suspicions)")
    }

    @Test func aSuspectedNodeThatIsUpRefutesWithAHigherIncarnation() async {
        var network = fourNodes()
        await network.run(for: .seconds(5))
        // d hears everyone but nothing it sends gets through for a while: c suspects d, and the
        // pings that keep probing it tell d so (a suspect is told by every ping it gets).
        network.muted.insert(Self.d)
        await network.run(for: network.settings.probeInterval * 4)
        #expect(
            [.suspect(incarnation: 0), .unreachable(incarnation: 0)].contains(network.status(of: Self.d, at: Self.c)))
        // The link heals before the suspicion times out everywhere: d has refuted, and its
        // higher incarnation clears it everywhere.
        network.muted.removeAll()
        await network.run(for: .seconds(10))
        for observer in [Self.a, Self.b, Self.c] {
            let status = network.status(of: Self.d, at: observer)
            #expect(status != .down, "\(observer) on d: \(String(describing: status))")
            if case .alive = status {} else { Issue.record("\(observer) on d: \(String(describing: status))") }
        }
        #expect(network.nodes[Self.d]!.incarnation >= 1, "d raised its incarnation to refute")
    }

    @Test func aRestartedNodeJoinsAsANewMemberAndItsOldSelfGoesDown() async {
        var network = fourNodes()
        await network.run(for: .seconds(5))
        network.crashed.insert(Self.d)
        await network.run(for: .seconds(1))
        let restarted = Network.member(4, uid: 2)
        network.start(restarted, seeds: [Self.a])
        await network.run(for: .seconds(25))
        for observer in [Self.a, Self.b, Self.c] {
            #expect(network.status(of: restarted, at: observer) == .alive(incarnation: 0), "\(observer)")
            #expect(network.status(of: Self.d, at: observer) == .down, "\(observer)")
        }
    }

    /// The cluster tests' settings (ClusterFixtures' `fastMembership`).
    static var fastSettings: ClusterMembershipSettings {
        var settings = ClusterMembershipSettings()
        settings.probeInterval = .milliseconds(200)
        settings.pingTimeout = .milliseconds(80)
        settings.suspicionTimeout = .milliseconds(600)
        settings.downAfter = .seconds(1)
        return settings
    }

    /// How long after it starts a sixth node is known to the five members of a settled cluster
    /// and knows them all (nil: not within 5 s).
    func timeForAJoinToSpread(settings: ClusterMembershipSettings) async -> Duration? {
        var network = Network(settings: settings)
        let members = (1...5).map { Network.member($0) }
        network.start(members[0], seeds: [])
        for member in members.dropFirst() { network.start(member, seeds: [members[0]]) }
        await network.run(for: .seconds(5))
        let newcomer = Network.member(6)
        let startedAt = network.now
        network.start(newcomer, seeds: [members[2]])
        while network.now - startedAt < .seconds(5) {
            await network.run(for: .milliseconds(10))
            let spread = members.allSatisfy {
                network.status(of: newcomer, at: $0) == .alive(incarnation: 0)
                    && network.status(of: $0, at: newcomer) == .alive(incarnation: 0)
            }
            if spread { return network.now - startedAt }
        }
        return nil
    }

    @Test func aJoinIsPushedToEveryMemberWithinAFewLatencies() async {
        let pushed = await timeForAJoinToSpread(settings: ClusterMembershipSettings())
        var gossipOnly = ClusterMembershipSettings()
        gossipOnly.joinPushFanOut = 0
        gossipOnly.antiEntropy = false
        gossipOnly.gossipFanOut = 0
        let byGossip = await timeForAJoinToSpread(settings: gossipOnly)
        // The newcomer's ping reaches the seed, the seed's pushes the others, they dial and
        // join the newcomer, their pings reach it: four 10 ms steps of the simulation.
        #expect(pushed != nil && pushed! <= .milliseconds(40), "\(String(describing: pushed))")
        // By the changes' gossip on the probes' messages alone (no push, no anti-entropy, no
        // gossip rounds) it takes a good part of a probe round (1 s).
        #expect(byGossip != nil && byGossip! >= .milliseconds(200), "\(String(describing: byGossip))")
    }

    @Test func aCrashedNodeIsUnreachableEverywhereWithinTwoSecondsByProbesAlone() async {
        var network = Network(settings: Self.fastSettings)
        let members = (1...5).map { Network.member($0) }
        network.start(members[0], seeds: [])
        for member in members.dropFirst() { network.start(member, seeds: [members[0]]) }
        await network.run(for: .seconds(3))
        let crashed = members[4]
        network.crashed.insert(crashed)
        let crashedAt = network.now
        var unreachableEverywhereAt: Duration?
        while unreachableEverywhereAt == nil && network.now - crashedAt < .seconds(5) {
            await network.run(for: .milliseconds(10))
            let everywhere = members.dropLast().allSatisfy {
                let status = network.status(of: crashed, at: $0)
                return status == .unreachable(incarnation: 0) || status == .down
            }
            if everywhere { unreachableEverywhereAt = network.now }
        }
        let elapsed = unreachableEverywhereAt.map { $0 - crashedAt }
        #expect(elapsed != nil && elapsed! <= .seconds(2), "\(String(describing: elapsed))")
        for observer in members.dropLast() {
            for member in members.dropLast() where member != observer {
                #expect(network.status(of: member, at: observer) == .alive(incarnation: 0), "\(observer) on \(member)")
            }
        }
    }

    @Test func aSuspicionAtTheHighestIncarnationNeitherTrapsNorDownsALiveMember() async {
        var network = fourNodes()
        await network.run(for: .seconds(5))
        let forged: [SWIMMessage.Gossip] = [
            .init(member: Self.b, status: .suspect(incarnation: .max)),
            .init(member: Self.a, status: .unreachable(incarnation: .max)),
        ]
        for target in [Self.a, Self.b, Self.d] {
            network.inject(.ping(sequence: 0, gossip: forged), from: Self.c, to: target)
        }
        let forgedAt = network.now
        await network.run(for: .seconds(30))
        let all = [Self.a, Self.b, Self.c, Self.d]
        for observer in all {
            for member in all where member != observer {
                let status = network.status(of: member, at: observer)
                #expect(status?.isAlive == true, "\(observer) on \(member): \(String(describing: status))")
            }
        }
        #expect(network.nodes[Self.a]!.incarnation == .max, "a refuted, saturating")
        #expect(network.nodes[Self.b]!.incarnation == .max, "b refuted, saturating")
        let afterwards = network.eventTimes.filter { $0.at > forgedAt }
        let condemned = afterwards.filter {
            if case .unreachable = $0.event.status { true } else { $0.event.status == .down }
        }
        #expect(condemned.isEmpty, "\(condemned.map(\.event))")
        // A suspicion nobody can outbid dies out instead of flapping for ever.
        let late = afterwards.filter { $0.at > forgedAt + .seconds(10) }
        #expect(late.isEmpty, "\(late.map(\.event))")
    }

    @Test func precedenceFollowsIncarnationsThenSeverity() {
        #expect(ClusterMemberStatus.suspect(incarnation: 1).supersedes(.alive(incarnation: 1)))
        #expect(!ClusterMemberStatus.alive(incarnation: 1).supersedes(.suspect(incarnation: 1)))
        #expect(ClusterMemberStatus.alive(incarnation: 2).supersedes(.suspect(incarnation: 1)))
        #expect(ClusterMemberStatus.unreachable(incarnation: 1).supersedes(.suspect(incarnation: 1)))
        #expect(ClusterMemberStatus.down.supersedes(.alive(incarnation: 9)))
        #expect(!ClusterMemberStatus.alive(incarnation: 9).supersedes(.down))
    }
}

extension ClusterMemberStatus {
    var isAlive: Bool { if case .alive = self { true } else { false } }
}
