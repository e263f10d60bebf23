import Testing
import TroupeCluster
import TroupeClusterEntities
import TroupeTestSupport
import TroupeVirtualActors

/// The same races over lines of different speeds (`FaultInjectingTransport`'s delay, in order
/// per connection, as TCP keeps it): each node's frames leave it late by its own amount, so
/// every pair of nodes sees the other's markers, confirms and receptionist updates at other
/// moments than a third node does, and the nodes adopt each change of members at different
/// times.
extension HandoffUnderTrafficTests {
    /// How late each node's frames leave it: the three that hold the kind throughout, and the
    /// one that joins and leaves.
    static let lineDelays: [Duration] = [.zero, .milliseconds(7), .milliseconds(23), .milliseconds(13)]

    /// Appends each node tells an identity before it asks it, in order.
    static let appendsPerCall = 3

    /// First calls from every node at once, to fresh identities, batch after batch, while a
    /// fourth node joins and then leaves; every node also tells every identity of the batch,
    /// in order (three each), and each round one append to every identity of ``keys``. One activation of an identity at a time, every ask answered, every tell
    /// handled once and in each sender's order, and no handoff that ended by its timeout.
    @Test func firstCallsFromEveryNodeOverLinesOfDifferentSpeedsWhileANodeJoinsAndLeaves() async throws {
        let transports = Self.lineDelays.map { delay in
            let transport = FaultInjectingTransport(NIOTransport())
            transport.setDelay(delay)
            return transport
        }
        let first = try await startNode(transport: transports[0])
        var nodes = [first]
        for index in 1..<transports.count {
            nodes.append(try await startNode(seeds: [first.cluster.node], transport: transports[index]))
        }
        await waitUntil(timeout: .seconds(60), "4 nodes see each other alive") {
            nodes.allSatisfy { $0.cluster.aliveMembers.count == 4 }
        }
        let log = LedgerLog()
        let regions = try await ledgersOnEveryNode(Array(nodes[0...2]), log: log)
        let stop = TestLock(false)
        let batchSize = StressScale.isThreadSanitized ? 10 : 30
        // Rounds of first calls: every node asks each identity of a fresh batch at once, after
        // telling it one append.
        let racing = Task { () -> (asks: Int, failures: [String], batches: Int) in
            var asks = 0
            var failures: [String] = []
            var batch = 0
            while !stop.withLock({ $0 }) {
                let keys = (0..<batchSize).map { "race-\(batch)-\($0)" }
                // And identities that live throughout, so that some are running wherever
                // their owner changes.
                for (sender, region) in regions.enumerated() {
                    for key in Self.keys { region.entity(key).tell(.append(sender: sender, sequence: batch)) }
                }
                let outcomes = await withTaskGroup(of: String?.self) { group in
                    for (sender, region) in regions.enumerated() {
                        for key in keys {
                            group.addTask {
                                let entity = region.entity(key)
                                for sequence in 0..<Self.appendsPerCall {
                                    entity.tell(.append(sender: sender, sequence: sequence))
                                }
                                do {
                                    _ = try await entity.ask(WhichNode())
                                    return nil
                                } catch {
                                    return "\(key) from node \(sender): \(error)"
                                }
                            }
                        }
                    }
                    return await group.reduce(into: [String?]()) { $0.append($1) }
                }
                asks += outcomes.count
                failures += outcomes.compactMap { $0 }
                batch += 1
            }
            return (asks, failures, batch)
        }
        try await Task.sleep(for: .milliseconds(400))
        let joining = try await ledgers(on: nodes[3], log: log)
        for region in regions + [joining] { try await region.awaitMembers(4, timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(400))
        await joining.leave()
        for region in regions {
            await waitUntil("the three see three settled members") { region.members.count == 3 && region.isSettled }
        }
        try await Task.sleep(for: .milliseconds(400))
        stop.withLock { $0 = true }
        let (asks, failures, batches) = await racing.value
        let sent = batches * regions.count * (batchSize * Self.appendsPerCall + Self.keys.count)
        await waitUntil(timeout: .seconds(60), "every append handled (\(sent) sent)") { log.appendsHandled == sent }

        for region in regions + [joining] {
            let statistics = region.statistics
            print(
                "lines of different speeds: region \(region.cluster.node.uid % 10_000): activations \(statistics.local.activations), handed off \(statistics.handedOff), forwarded \(statistics.forwarded), held \(statistics.heldForHandoff), parked \(statistics.parkedForNewerMembers)"
            )
        }
        print("lines of different speeds: \(batches) batches, \(asks) asks, \(sent) appends")
        #expect(batches >= 3, "the races ran through the join and the leave (\(batches) batches)")
        #expect(asks == batches * batchSize * regions.count)
        #expect(failures.isEmpty, "\(failures.count) asks failed; the first: \(failures.prefix(3))")
        #expect(log.mostConcurrentActivationsOfOneKey == 1)
        #expect(log.appendsHandled == sent)
        #expect(log.appendsOutOfOrder == 0, "\(log.firstAppendsOutOfOrder)")
        #expect((regions + [joining]).map(\.statistics.handoffTimeouts).reduce(0, +) == 0)
        #expect(
            (regions + [joining]).map { $0.statistics.lostInTransit + $0.statistics.undeliverable } == [0, 0, 0, 0])
        #expect(joining.statistics.local.active == 0, "the leaving node's activations stopped before it left")
        for node in nodes { await node.shutdown() }
    }
}
