import Testing

@testable import TroupeClusterMembership

/// Gossip rounds: a change goes to `gossipFanOut` random alive members every `gossipInterval`,
/// `gossipRounds` times, besides the `gossipRepeats` messages of the probes it rides on; nothing
/// is sent while there is nothing to spread.
struct SWIMGossipRoundTests {
    static let me = SWIMTests.Network.member(1)
    static let others = (2...12).map { SWIMTests.Network.member($0) }
    static let suspect = others[5]

    /// A formed cluster of twelve, probing once an hour: within a test's few seconds the only
    /// probe is the first one (unanswered, it expires an hour later), so every change is the
    /// test's own.
    func machine(_ configure: (inout ClusterMembershipSettings) -> Void = { _ in }) -> SWIMStateMachine {
        var settings = ClusterMembershipSettings()
        settings.probeInterval = .seconds(3_600)
        configure(&settings)
        var machine = SWIMStateMachine(myself: Self.me, settings: settings, seed: 11)
        machine.assumeFormed(Self.others, now: .zero)
        return machine
    }

    /// The pings of sequence 0 (neither a probe's nor a relay's) among `directives`.
    func roundPings(_ directives: [SWIMDirective]) -> [(to: ClusterNode, gossip: [SWIMMessage.Gossip])] {
        directives.compactMap {
            if case .send(.ping(0, let gossip), let to) = $0 { (to, gossip) } else { nil }
        }
    }

    /// Ticks every 100 ms (as TroupeCluster's membership actor does) from `start` for `duration`:
    /// the round pings, with when each went.
    func tick(
        _ machine: inout SWIMStateMachine, from start: Duration, for duration: Duration
    ) -> [(at: Duration, to: ClusterNode, gossip: [SWIMMessage.Gossip])] {
        var sent: [(at: Duration, to: ClusterNode, gossip: [SWIMMessage.Gossip])] = []
        var now = start
        while now < start + duration {
            sent += roundPings(machine.tick(now: now)).map { (now, $0.to, $0.gossip) }
            now += .milliseconds(100)
        }
        return sent
    }

    /// `suspect`'s suspicion, told by another member: a change this node now spreads. Returns
    /// what the machine did (it pings the suspect itself).
    @discardableResult
    func hearSuspicion(_ machine: inout SWIMStateMachine, at now: Duration) -> [SWIMDirective] {
        let news = SWIMMessage.ack(
            sequence: 77, target: Self.others[0],
            gossip: [SWIMMessage.Gossip(member: Self.suspect, status: .suspect(incarnation: 0))])
        let directives = machine.receive(news, from: Self.others[0], now: now)
        #expect(machine.status(of: Self.suspect) == .suspect(incarnation: 0))
        return directives
    }

    /// Messages other than rounds' pings that carry `suspect`'s news.
    func carrying(_ directives: [SWIMDirective]) -> Int {
        directives.count { directive in
            guard case .send(let message, _) = directive else { return false }
            if case .ping(0, _) = message { return false }
            return message.gossip.contains { $0.member == Self.suspect }
        }
    }

    @Test func nothingToSpreadSendsNoRound() {
        var machine = machine()
        #expect(tick(&machine, from: .zero, for: .seconds(5)).isEmpty)
    }

    @Test func aChangeGoesToThreeAliveMembersEveryIntervalForItsRoundsThenStops() throws {
        var machine = machine()
        _ = tick(&machine, from: .zero, for: .seconds(1))
        hearSuspicion(&machine, at: .seconds(1))
        let sent = tick(&machine, from: .seconds(1), for: .seconds(3))
        let settings = machine.settings
        #expect(sent.count == settings.gossipRounds * settings.gossipFanOut, "\(sent.map { ($0.at, $0.to) })")
        let rounds = Dictionary(grouping: sent, by: \.at).sorted { $0.key < $1.key }
        #expect(rounds.count == settings.gossipRounds)
        for (at, pings) in rounds {
            #expect(Set(pings.map(\.to)).count == settings.gossipFanOut, "distinct members in the round at \(at)")
            #expect(!pings.contains { $0.to == Self.suspect }, "only alive members are sent rounds")
            for ping in pings {
                #expect(ping.gossip.contains { $0.member == Self.suspect && $0.status == .suspect(incarnation: 0) })
                #expect(ping.gossip.first?.member == Self.me, "each carries this node's own status first")
            }
        }
        for (earlier, later) in zip(rounds, rounds.dropFirst()) {
            #expect(later.key - earlier.key >= settings.gossipInterval)
        }
        #expect(try #require(rounds.first?.key) == .seconds(1), "the first round goes at the next tick")
    }

    @Test func roundsLeaveTheRepeatsOnTheProbesMessagesWhole() {
        var machine = machine()
        // Its own ping of the suspect carries the news, and so does the first probe.
        var carried = carrying(hearSuspicion(&machine, at: .zero))
        var now = Duration.zero
        var rounds = 0
        while now < .seconds(3) {
            let directives = machine.tick(now: now)
            carried += carrying(directives)
            rounds += roundPings(directives).count
            now += .milliseconds(100)
        }
        #expect(rounds == machine.settings.gossipRounds * machine.settings.gossipFanOut)
        // After its rounds the change still rides on all of its `gossipRepeats` messages: the
        // rest of them here are acks.
        for sequence in 1...40 {
            carried += carrying(
                machine.receive(.ping(sequence: UInt64(sequence), gossip: []), from: Self.others[1], now: now))
        }
        #expect(carried == machine.gossipRepeats)
    }

    @Test func noFanOutNoRounds() {
        var machine = machine { $0.gossipFanOut = 0 }
        hearSuspicion(&machine, at: .zero)
        #expect(tick(&machine, from: .zero, for: .seconds(3)).isEmpty)
    }

    @Test func aSlowNodeGossipsLessOften() {
        // Lifeguard's local health multiplier stretches the interval, as it does the probes'.
        var machine = machine { $0.gossipRounds = 8 }
        for other in Self.others.prefix(3) {
            let accusation = SWIMMessage.Gossip(member: Self.me, status: .suspect(incarnation: machine.incarnation))
            _ = machine.receive(.ack(sequence: 1, target: Self.me, gossip: [accusation]), from: other, now: .zero)
        }
        #expect(machine.localHealthMultiplier >= 2, "refuting suspicions of itself raises it")
        let multiplier = machine.localHealthMultiplier
        hearSuspicion(&machine, at: .zero)
        let sent = tick(&machine, from: .zero, for: .seconds(2))
        let rounds = Set(sent.map(\.at)).sorted()
        #expect(rounds.count >= 2)
        for (earlier, later) in zip(rounds, rounds.dropFirst()) {
            #expect(later - earlier >= machine.settings.gossipInterval * (multiplier + 1))
        }
    }
}
