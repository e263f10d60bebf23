import Testing
import TroupeClusterEntities
import TroupeTestSupport
import TroupeVirtualActors

/// Members change while every node sends to many identities: none runs on two nodes at once,
/// no message is lost, and each sender's messages to an identity are handled in the order sent,
/// across the move.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct HandoffUnderTrafficTests {
    /// 120 identities; 40 under TSan, where the nodes share the machine with the stress suites
    /// and the cluster's timing tests.
    static let keys = (0..<(StressScale.isThreadSanitized ? 40 : 120)).map { "t\($0)" }

    /// Sends rounds of one append to every key from `region` (as `sender`) until `stop` is
    /// set; returns how many it sent.
    static func sendRounds(
        _ region: ClusterEntityRegion<Ledger.Message>, sender: Int, stop: TestLock<Bool>
    ) async -> Int {
        var sequence = 0
        while !stop.withLock({ $0 }) {
            for key in keys { region.entity(key).tell(.append(sender: sender, sequence: sequence)) }
            sequence += 1
            // Paced so that the lines carry traffic, not a backlog (a marker travels behind
            // everything sent before it): 60,000 tells a second per node, 2,000 under TSan.
            try? await Task.sleep(for: .milliseconds(StressScale.isThreadSanitized ? 20 : 2))
        }
        return sequence * keys.count
    }

    /// Stops the senders and waits until every append they sent has been handled (expected);
    /// returns how many they sent.
    static func stopSending(_ senders: [Task<Int, Never>], stop: TestLock<Bool>, log: LedgerLog) async -> Int {
        stop.withLock { $0 = true }
        var sent = 0
        for sender in senders { sent += await sender.value }
        await waitUntil(timeout: .seconds(60), "every append handled (\(sent) sent)") { log.appendsHandled == sent }
        #expect(log.appendsHandled == sent)
        return sent
    }

    @Test func aNodeThatJoinsUnderTrafficTakesItsShareWithoutASecondActivation() async throws {
        let nodes = try await startCluster(3)
        let log = LedgerLog()
        let first = try await ledgers(on: nodes[0], log: log)
        let second = try await ledgers(on: nodes[1], log: log)
        for region in [first, second] { try await region.awaitMembers(2, timeout: .seconds(30)) }
        let stop = TestLock(false)
        let senders = [(first, 0), (second, 1)].map { region, sender in
            Task { await Self.sendRounds(region, sender: sender, stop: stop) }
        }
        try await Task.sleep(for: .milliseconds(300))
        let third = try await ledgers(on: nodes[2], log: log)
        for region in [first, second, third] { try await region.awaitMembers(3, timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(300))
        _ = await Self.stopSending(senders, stop: stop, log: log)
        let moved = Self.keys.filter { third.owner(of: $0) == nodes[2].cluster.node }
        #expect(!moved.isEmpty, "the joining node owns a share")
        #expect(log.mostConcurrentActivationsOfOneKey == 1)
        #expect(log.appendsOutOfOrder == 0)
        // What moved runs on the new node now; the others handed theirs off.
        for key in moved { #expect(try await first.entity(key).ask(WhichNode()) == nodes[2].cluster.node.uid) }
        #expect(first.statistics.handedOff + second.statistics.handedOff >= moved.count)
        #expect(
            first.statistics.handoffTimeouts + second.statistics.handoffTimeouts + third.statistics.handoffTimeouts == 0
        )
        for node in nodes { await node.shutdown() }
    }

    @Test func aNodeThatLeavesUnderTrafficHandsOffWithoutASecondActivation() async throws {
        let nodes = try await startCluster(3)
        let log = LedgerLog()
        let regions = try await ledgersOnEveryNode(nodes, log: log)
        let stop = TestLock(false)
        let senders = regions.enumerated().map { sender, region in
            Task { await Self.sendRounds(region, sender: sender, stop: stop) }
        }
        try await Task.sleep(for: .milliseconds(300))
        let leaving = nodes[2].cluster.node
        let moved = Self.keys.filter { regions[0].owner(of: $0) == leaving }
        #expect(!moved.isEmpty)
        await regions[2].leave()
        #expect(regions[2].statistics.local.active == 0, "the leaving node's activations stopped before it left")
        for region in regions[0...1] {
            await waitUntil("the others see two settled members") { region.members.count == 2 && region.isSettled }
        }
        try await Task.sleep(for: .milliseconds(300))
        _ = await Self.stopSending(senders, stop: stop, log: log)
        #expect(log.mostConcurrentActivationsOfOneKey == 1)
        #expect(log.appendsOutOfOrder == 0)
        for key in moved { #expect(try await regions[0].entity(key).ask(WhichNode()) != leaving.uid) }
        #expect(regions.map(\.statistics.handoffTimeouts).reduce(0, +) == 0)
        for node in nodes { await node.shutdown() }
    }

    /// A join and a leave at the same moment: the nodes see the two changes in different
    /// orders, and some see a view that lacks a member whose signals have already come. Nothing
    /// is lost, and when no handoff waited for its timeout, one activation ran at a time.
    /// (Per-sender order is not promised across changes faster than a handoff.)
    ///
    /// Known gap: in 1 of 1,100 runs alone (2026-11-28), the others waited out `handoffTimeout`
    /// (after which a second activation is possible, as documented). Reported below, not
    /// asserted, until it is found; the four bugs this test found first are fixed (signals
    /// forgotten across views, a leave not announced to a joining node, a receptionist snapshot
    /// that overtook a check-in, and markers of two views applied at once sent in the opposite
    /// order: 15 of 281 runs before that fix).
    @Test func aJoinAndALeaveAtOnceUnderTrafficKeepOneActivationAndLoseNothing() async throws {
        let nodes = try await startCluster(4)
        let log = LedgerLog()
        let regions = try await ledgersOnEveryNode(Array(nodes[0...2]), log: log)
        let stop = TestLock(false)
        let senders = regions[0...1].enumerated().map { sender, region in
            Task { await Self.sendRounds(region, sender: sender, stop: stop) }
        }
        try await Task.sleep(for: .milliseconds(300))
        async let joined = ledgers(on: nodes[3], log: log)
        await regions[2].leave()
        let staying = [regions[0], regions[1], try await joined]
        for region in staying { try await region.awaitMembers(3, timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(300))
        let sent = await Self.stopSending(senders, stop: stop, log: log)
        let timeouts = (regions + [staying[2]]).map(\.statistics.handoffTimeouts).reduce(0, +)
        if timeouts == 0 { #expect(log.mostConcurrentActivationsOfOneKey == 1) }
        print("a join and a leave at once: \(timeouts) handoff timeouts (a known gap when not 0)")
        // Reported, not asserted: 0 to 68 of about 18,000 in 10 runs here (2026-11-28).
        print("a join and a leave at once: \(log.appendsOutOfOrder) of \(sent) appends out of order (not promised)")
        for line in log.firstAppendsOutOfOrder { print("a join and a leave at once: out of order: \(line)") }
        for region in regions + [staying[2]] {
            let statistics = region.statistics
            print(
                "a join and a leave at once: region \(region.cluster.node.uid % 10_000): forwarded \(statistics.forwarded), held \(statistics.heldForHandoff), parked \(statistics.parkedForNewerMembers), past the hop limit \(statistics.retriedAfterHopLimit)"
            )
        }
        #expect(regions[2].statistics.local.active == 0)
        for node in nodes { await node.shutdown() }
    }
}
