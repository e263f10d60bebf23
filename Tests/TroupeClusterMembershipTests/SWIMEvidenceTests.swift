import Testing

@testable import TroupeClusterMembership

/// One state machine fed messages by hand: what gossip can and cannot do to the table
/// (admission, suspicion, down), Lifeguard's health multiplier and suspicion timeout, pushed
/// joins and the tombstone bound.
struct SWIMEvidenceTests {
    static let a = SWIMTests.Network.member(1), b = SWIMTests.Network.member(2)
    static let c = SWIMTests.Network.member(3), d = SWIMTests.Network.member(4)
    static let e = SWIMTests.Network.member(5)
    static let stranger = ClusterNode(host: "10.9.9.9", port: 7337, uid: 99)

    /// `a`'s machine, knowing `others` by direct contact at time zero.
    func machine(
        knowing others: [ClusterNode], settings: ClusterMembershipSettings = ClusterMembershipSettings()
    ) -> SWIMStateMachine {
        var machine = SWIMStateMachine(myself: Self.a, settings: settings, seed: 7)
        for other in others { _ = machine.heard(from: other, now: .zero) }
        return machine
    }

    func gossip(_ items: (ClusterNode, ClusterMemberStatus)...) -> SWIMMessage {
        .ping(sequence: 0, gossip: items.map { SWIMMessage.Gossip(member: $0.0, status: $0.1) })
    }

    func events(_ directives: [SWIMDirective]) -> [ClusterMembershipEvent] {
        directives.compactMap { if case .event(let event) = $0 { event } else { nil } }
    }

    func discovered(_ directives: [SWIMDirective]) -> [ClusterNode] {
        directives.compactMap { if case .discovered(let member) = $0 { member } else { nil } }
    }

    func pings(_ directives: [SWIMDirective]) -> [(sequence: UInt64, gossip: [SWIMMessage.Gossip], to: ClusterNode)] {
        directives.compactMap {
            if case .send(.ping(let sequence, let gossip), let to) = $0 { (sequence, gossip, to) } else { nil }
        }
    }

    // MARK: Admission

    @Test func aMemberNamedInGossipIsDiscoveredOnceAnIntervalButNotAdmitted() {
        var machine = machine(knowing: [Self.b])
        let message = gossip((Self.stranger, .alive(incarnation: 0)))
        #expect(discovered(machine.receive(message, from: Self.b, now: .seconds(1))) == [Self.stranger])
        #expect(machine.status(of: Self.stranger) == nil)
        #expect(machine.membership.count == 1)
        let soon = machine.receive(message, from: Self.b, now: .milliseconds(1_990))
        #expect(discovered(soon).isEmpty, "once a probe interval")
        #expect(discovered(machine.receive(message, from: Self.b, now: .seconds(2))) == [Self.stranger])
        // Down gossip about an unknown member: nothing to dial.
        let gone = ClusterNode(host: "10.9.9.8", port: 7337, uid: 98)
        #expect(discovered(machine.receive(gossip((gone, .down)), from: Self.b, now: .seconds(2))).isEmpty)
        // Its handshake completed: the caller joins it.
        _ = machine.join([Self.stranger], now: .seconds(3))
        #expect(machine.status(of: Self.stranger) == .alive(incarnation: 0))
    }

    @Test func aFloodOfMadeUpNamesAddsNoMemberAndBoundedMemory() {
        var machine = machine(knowing: [Self.b, Self.c])
        let statuses: [ClusterMemberStatus] = [
            .alive(incarnation: 0), .suspect(incarnation: 5), .unreachable(incarnation: 9),
        ]
        let madeUp = (0..<2_000).map { index in
            SWIMMessage.Gossip(
                member: ClusterNode(host: "10.0.\(index / 256).\(index % 256)", port: 7337, uid: UInt64(index)),
                status: statuses[index % 3])
        }
        let out = machine.receive(.ping(sequence: 0, gossip: madeUp), from: Self.b, now: .seconds(1))
        #expect(machine.membership.count == 2)
        #expect(events(out).isEmpty)
        #expect(Set(discovered(out)).count == 2_000)
        #expect(machine.rememberedDiscoveryCount == ClusterMembershipSettings().maximumRememberedDiscoveries)
        _ = machine.tick(now: .seconds(2))
        #expect(machine.rememberedDiscoveryCount == 0, "forgotten after a probe interval")
    }

    // MARK: Evidence

    /// Down gossip about a member alive here changes nothing in the table: it is a reason to
    /// look (one probe of it, none while one is in flight), and about this node it is ignored.
    @Test func oneFrameOfDownGossipAboutAReachableMemberOrThisNodeChangesNothingButAProbe() {
        var machine = machine(knowing: [Self.b, Self.c])
        let out = machine.receive(gossip((Self.b, .down), (Self.a, .down)), from: Self.c, now: .seconds(1))
        #expect(out.count == 2)
        guard case .send(.ack(sequence: 0, target: Self.a, _), to: Self.c)? = out.last else {
            Issue.record("\(out)")
            return
        }
        let probes = pings(out)
        #expect(probes.count == 1 && probes.first?.to == Self.b && probes.first?.sequence != 0, "\(out)")
        let again = machine.receive(gossip((Self.b, .down)), from: Self.c, now: .milliseconds(1_100))
        #expect(pings(again).isEmpty, "no second probe while the first is in flight")
        #expect(machine.status(of: Self.b) == .alive(incarnation: 0))
        #expect(machine.status(of: Self.a) == .alive(incarnation: 0))
        #expect(machine.incarnation == 0)
        #expect(machine.localHealthMultiplier == 0)
    }

    @Test func unreachableGossipMakesAMemberAtMostSuspectUntilItAnswers() {
        var machine = machine(knowing: [Self.b, Self.c, Self.d])
        let accused = gossip((Self.b, .unreachable(incarnation: 0)))
        let out = machine.receive(accused, from: Self.c, now: .seconds(1))
        #expect(machine.status(of: Self.b) == .suspect(incarnation: 0))
        let checks = pings(out).filter { $0.to == Self.b }
        #expect(checks.count == 1 && checks.first?.sequence != 0, "probed at once: \(out)")
        // More say-so, from another member, is no more than suspicion, and b is probed already.
        let again = machine.receive(accused, from: Self.d, now: .milliseconds(1_010))
        #expect(machine.status(of: Self.b) == .suspect(incarnation: 0))
        #expect(pings(again).filter { $0.to == Self.b }.isEmpty)
        // b answers the probe directly.
        let sequence = checks.first?.sequence ?? 0
        let answer = machine.receive(
            .ack(sequence: sequence, target: Self.b, gossip: []), from: Self.b, now: .milliseconds(1_020))
        #expect(machine.status(of: Self.b) == .alive(incarnation: 0))
        #expect(events(answer) == [ClusterMembershipEvent(member: Self.b, status: .alive(incarnation: 0))])
        // The suspicion this node has cleared itself is not taken up again.
        let stale = machine.receive(gossip((Self.b, .suspect(incarnation: 0))), from: Self.d, now: .milliseconds(1_030))
        #expect(events(stale).isEmpty)
        #expect(machine.status(of: Self.b) == .alive(incarnation: 0))
    }

    /// A suspect is told of its suspicion by every ping it gets, after the news's repeats are
    /// spent too, so that a live member can always refute (memberlist's probes do the same).
    @Test func aPingToASuspectCarriesItsSuspicionWhateverTheRepeatsLeft() {
        var machine = machine(knowing: [Self.b, Self.c, Self.d])
        _ = machine.receive(gossip((Self.b, .suspect(incarnation: 0))), from: Self.c, now: .seconds(1))
        #expect(machine.status(of: Self.b) == .suspect(incarnation: 0))
        // Answers to d's probes spend the news's repeats.
        for sequence in 1...(machine.gossipRepeats + 4) {
            _ = machine.receive(.ping(sequence: UInt64(sequence), gossip: []), from: Self.d, now: .seconds(1))
        }
        let spent = machine.receive(.ping(sequence: 99, gossip: []), from: Self.d, now: .seconds(1))
        for case .send(.ack(_, _, let carried), _) in spent {
            #expect(!carried.contains { $0.member == Self.b }, "the repeats are spent")
        }
        // The probe rounds reach it (three members: within a few rounds): that ping tells it.
        var now = Duration.milliseconds(1_100)
        var probe: [SWIMMessage.Gossip]?
        while probe == nil && now < .seconds(30) {
            probe = pings(machine.tick(now: now)).first { $0.to == Self.b }?.gossip
            now += .milliseconds(100)
        }
        let told = probe?.first { $0.member == Self.b }?.status
        #expect(
            told == .suspect(incarnation: 0) || told == .unreachable(incarnation: 0), "\(String(describing: probe))")
        #expect(told == machine.status(of: Self.b))
    }

    @Test func downGossipAboutAMemberUnreachableHereIsApplied() {
        var machine = machine(knowing: [Self.b, Self.c])
        _ = machine.confirmUnreachable(Self.b, now: .seconds(1))
        let out = machine.receive(gossip((Self.b, .down)), from: Self.c, now: .milliseconds(1_100))
        #expect(machine.status(of: Self.b) == .down)
        #expect(events(out) == [ClusterMembershipEvent(member: Self.b, status: .down)])
        // Nothing brings the tombstone back; that another member has it alive gets it dialled
        // (its handshake tells it it is down), once a probe interval.
        let revived = machine.receive(gossip((Self.b, .alive(incarnation: 9))), from: Self.c, now: .seconds(2))
        #expect(machine.status(of: Self.b) == .down)
        #expect(events(revived).isEmpty)
        #expect(discovered(revived) == [Self.b])
        let again = machine.receive(gossip((Self.b, .alive(incarnation: 9))), from: Self.c, now: .milliseconds(2_500))
        #expect(discovered(again).isEmpty, "once a probe interval")
        #expect(
            discovered(machine.receive(gossip((Self.b, .alive(incarnation: 9))), from: Self.c, now: .seconds(3))) == [
                Self.b
            ])
        // Its own word, which no member that holds it down reads, is no such news.
        #expect(
            discovered(machine.receive(gossip((Self.b, .alive(incarnation: 9))), from: Self.b, now: .seconds(5)))
                .isEmpty)
        #expect(machine.status(of: Self.b) == .down)
    }

    @Test func aSuspicionOfThisNodeAtTheHighestIncarnationSaturates() {
        var machine = machine(knowing: [Self.b])
        _ = machine.receive(gossip((Self.a, .suspect(incarnation: .max))), from: Self.b, now: .seconds(1))
        #expect(machine.incarnation == .max)
        _ = machine.receive(gossip((Self.a, .unreachable(incarnation: .max))), from: Self.b, now: .seconds(2))
        #expect(machine.incarnation == .max)
        // Others' forged incarnation for b: b's direct word brings it back.
        _ = machine.receive(gossip((Self.b, .suspect(incarnation: .max))), from: Self.stranger, now: .seconds(3))
        #expect(machine.status(of: Self.b) == .suspect(incarnation: .max))
        _ = machine.heard(from: Self.b, now: .seconds(3))
        #expect(machine.status(of: Self.b) == .alive(incarnation: .max))
    }

    // MARK: Lifeguard

    @Test func localHealthRisesWithMissedAcksFallsWithAcksAndStretchesTheProbeInterval() {
        var machine = machine(knowing: [Self.b, Self.c, Self.d])
        var now = Duration.zero
        var sent: [(at: Duration, sequence: UInt64, to: ClusterNode)] = []
        func run(until end: Duration) {
            while now < end {
                for ping in pings(machine.tick(now: now)) where ping.sequence != 0 {
                    sent.append((now, ping.sequence, ping.to))
                }
                now += .milliseconds(10)
            }
        }
        // Nothing answers: each probe period ends unanswered, and the next is one longer.
        run(until: .milliseconds(6_010))
        #expect(sent.map(\.at) == [.zero, .seconds(1), .seconds(3), .seconds(6)])
        #expect(machine.localHealthMultiplier == 3)
        #expect(machine.effectiveProbeInterval == .seconds(4))
        #expect(machine.effectivePingTimeout == .milliseconds(1_200))
        // A direct ack brings it down by one.
        let last = sent[sent.count - 1]
        _ = machine.receive(.ack(sequence: last.sequence, target: last.to, gossip: []), from: last.to, now: now)
        #expect(machine.localHealthMultiplier == 2)
        // So does a frame heard straight from the target of a probe.
        run(until: .milliseconds(10_010))
        #expect(sent.last?.at == .seconds(10), "probed 4 s after the last, as scheduled then")
        _ = machine.heard(from: sent[sent.count - 1].to, now: now)
        #expect(machine.localHealthMultiplier == 1)
        // Refuting a suspicion of itself raises it.
        _ = machine.receive(gossip((Self.a, .suspect(incarnation: 0))), from: Self.b, now: now)
        #expect(machine.localHealthMultiplier == 2)
        #expect(machine.incarnation == 1)
    }

    @Test func theLocalHealthMultiplierIsBounded() {
        var settings = ClusterMembershipSettings()
        settings.maximumLocalHealthMultiplier = 2
        var machine = machine(knowing: [Self.b], settings: settings)
        for incarnation in UInt64(0)..<5 {
            _ = machine.receive(gossip((Self.a, .suspect(incarnation: incarnation))), from: Self.b, now: .seconds(1))
        }
        #expect(machine.incarnation == 5)
        #expect(machine.localHealthMultiplier == 2)
        #expect(machine.effectiveProbeInterval == settings.probeInterval * 3)
    }

    /// When the member `a` first probes (unanswered, so suspect at 1 s) becomes unreachable,
    /// with `confirmations` other members gossiping the suspicion at 1.5 s.
    func unreachableAt(confirmations: Int) -> Duration? {
        var settings = ClusterMembershipSettings()
        settings.suspicionTimeout = .seconds(1)  // the longest is 3 s (suspicionMaximumMultiplier)
        var machine = machine(knowing: [Self.b, Self.c, Self.d, Self.e], settings: settings)
        var now = Duration.zero
        var target: ClusterNode?
        while now <= .seconds(10) {
            let out = machine.tick(now: now)
            if target == nil { target = pings(out).first?.to }
            if let target, now == .milliseconds(1_500) {
                #expect(machine.status(of: target) == .suspect(incarnation: 0))
                let others = [Self.b, Self.c, Self.d, Self.e].filter { $0 != target }
                for confirmer in others.prefix(confirmations) {
                    _ = machine.receive(gossip((target, .suspect(incarnation: 0))), from: confirmer, now: now)
                }
            }
            if let target, machine.status(of: target) == .unreachable(incarnation: 0) { return now }
            now += .milliseconds(10)
        }
        return nil
    }

    @Test func confirmationsShortenTheSuspicionTimeout() {
        // Suspect at 1 s; unreachable 3 s later unconfirmed, 1 s later with all 3 confirmations.
        #expect(unreachableAt(confirmations: 0) == .seconds(4))
        let once = unreachableAt(confirmations: 1)
        #expect(once != nil && once! >= .seconds(3) && once! <= .milliseconds(3_010), "log 2 / log 4 of the way")
        #expect(unreachableAt(confirmations: 3) == .seconds(2))
    }

    // MARK: Pushed joins, tombstones

    @Test func aMemberAdmittedByDirectContactIsPushedToTheOthers() {
        var settings = ClusterMembershipSettings()
        settings.joinPushFanOut = 2
        var machine = machine(knowing: [Self.b, Self.c, Self.d], settings: settings)
        let out = machine.heard(from: Self.e, now: .seconds(1))
        let pushes = pings(out)
        #expect(pushes.count == 2, "at most joinPushFanOut: \(out)")
        for push in pushes {
            #expect(push.sequence == 0)
            #expect([Self.b, Self.c, Self.d].contains(push.to))
            #expect(push.gossip.contains(SWIMMessage.Gossip(member: Self.e, status: .alive(incarnation: 0))))
        }
        // Their acks match no probe.
        let ack = machine.receive(.ack(sequence: 0, target: Self.b, gossip: []), from: Self.b, now: .seconds(1))
        #expect(ack.isEmpty && machine.localHealthMultiplier == 0)
        // A member gossip told of first is not pushed again: its teller spreads it.
        _ = machine.receive(gossip((Self.stranger, .alive(incarnation: 0))), from: Self.b, now: .seconds(2))
        let joined = machine.join([Self.stranger], now: .seconds(2))
        #expect(pings(joined).map(\.to) == [Self.stranger])
        #expect(pings(joined).first?.sequence != 0)
    }

    /// Spare gossip room carries alive members in turn: every member is named within
    /// members / `gossipPerMessage` messages, though nothing changed (anti-entropy); off, a
    /// quiet cluster's messages name their sender only.
    @Test func spareGossipRoomCarriesEveryAliveMemberInTurn() {
        let others = (2...40).map { SWIMTests.Network.member($0) }
        for antiEntropy in [true, false] {
            var settings = ClusterMembershipSettings()
            settings.antiEntropy = antiEntropy
            var machine = SWIMStateMachine(myself: Self.a, settings: settings, seed: 3)
            machine.assumeFormed(others, now: .zero)
            var named = Set<ClusterNode>()
            for _ in 0..<(others.count / settings.gossipPerMessage + 1) {
                let ack = machine.receive(.ping(sequence: 1, gossip: []), from: Self.b, now: .zero)
                guard case .send(let message, _)? = ack.first else {
                    Issue.record("no ack: \(ack)")
                    return
                }
                #expect(message.gossip.count <= settings.gossipPerMessage + 1)
                named.formUnion(message.gossip.map(\.member).filter { $0 != Self.a })
            }
            #expect(named == (antiEntropy ? Set(others) : []))
        }
    }

    /// memberlist's rule: 4 × ⌈log10(members + 1)⌉ repeats when more than `gossipRepeats`.
    @Test func gossipRepeatsGrowWithTheClusterUnlessTurnedOff() {
        for (members, expected) in [(2, 6), (9, 6), (10, 8), (99, 8), (100, 12), (999, 12), (1_000, 16)] {
            var machine = SWIMStateMachine(myself: Self.a, settings: ClusterMembershipSettings(), seed: 1)
            machine.assumeFormed(
                (0..<members).map { ClusterNode(host: "10.1.0.1", port: 1 + $0, uid: UInt64(100 + $0)) }, now: .zero)
            #expect(machine.gossipRepeats == expected, "\(members) members")
        }
        var fixed = ClusterMembershipSettings()
        fixed.scalesGossipRepeats = false
        var machine = SWIMStateMachine(myself: Self.a, settings: fixed, seed: 1)
        machine.assumeFormed(
            (0..<1_000).map { ClusterNode(host: "10.1.0.1", port: 1 + $0, uid: UInt64(100 + $0)) }, now: .zero)
        #expect(machine.gossipRepeats == 6)
    }

    @Test func tombstonesAreCappedOldestFirst() {
        var settings = ClusterMembershipSettings()
        settings.maximumTombstones = 3
        let members = (2...6).map { SWIMTests.Network.member($0) }
        var machine = machine(knowing: members, settings: settings)
        for (index, member) in members.enumerated() {
            _ = machine.markDown(member, now: .seconds(index + 1))
        }
        #expect(machine.membership.count == 3)
        for member in members.prefix(2) { #expect(machine.status(of: member) == nil) }
        for member in members.suffix(3) { #expect(machine.status(of: member) == .down) }
    }
}
