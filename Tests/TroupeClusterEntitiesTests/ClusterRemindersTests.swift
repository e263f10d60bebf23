import Testing
import Troupe
import TroupeCluster
import TroupeClusterEntities
import TroupePersistence
import TroupeTestSupport
import TroupeVirtualActors

/// Reminders of a kind spread over a cluster, on one store the nodes share: each node fires the
/// reminders of the keys it owns, each tick is delivered once, and a key's reminders go on on
/// its new owner when its node leaves.
@Suite(.serialized) struct ClusterRemindersTests {
    @Test func eachTickIsDeliveredOnceByTheKeysOwnerAndRemindersFollowAKeyThatMoves() async throws {
        try await withCluster(3) { nodes in
            let log = LedgerLog()
            let regions = try await ledgersOnEveryNode(nodes, log: log)
            let store = InMemoryStore()
            let reminders = regions.map { region in
                // A tick becomes an append whose sequence is its due time: the ledger logs where it ran.
                EntityReminders(region: region, store: store, pollInterval: .milliseconds(50)) {
                    .append(sender: -1, sequence: Int($0.scheduledAt))
                }
            }
            let keys = (0..<30).map { "key-\($0)" }
            for key in keys {
                try await reminders[0].register("beat", for: key, after: .milliseconds(200), every: .milliseconds(200))
            }
            #expect(await waitUntil("four ticks per key") { log.appendsHandled >= 4 * keys.count })
            for index in regions.indices {
                let owned = keys.filter { regions[0].owner(of: $0) == nodes[index].cluster.node }.count
                #expect(
                    (reminders[index].statistics.delivered > 0) == (owned > 0),
                    "node \(index) owns \(owned) keys and delivered \(reminders[index].statistics.delivered)")
            }
            #expect(log.appendsOutOfOrder == 0, "a tick delivered twice or out of order: \(log.firstAppendsOutOfOrder)")
            // On a stable cluster only a key's owner tries to claim its ticks: no node loses a race.
            #expect(reminders.map(\.statistics.claimedElsewhere) == [0, 0, 0])

            // The third node leaves gracefully: its keys move, and their reminders go on there.
            let leaving = nodes[2].cluster.node
            let moved = keys.filter { regions[0].owner(of: $0) == leaving }
            try #require(!moved.isEmpty, "rendezvous hashing gave the third node none of 30 keys")
            reminders[2].stop()
            await regions[2].leave(timeout: .seconds(10))
            await waitUntil("the others see two members") {
                regions[0].members.count == 2 && regions[1].members.count == 2
            }
            let before = log.appendsHandled
            #expect(await waitUntil("three more ticks per key") { log.appendsHandled >= before + 3 * keys.count })
            let handledAfter = Set(
                log.started.values.filter { $0.node != leaving.uid && moved.contains($0.key) }.map(\.key))
            #expect(handledAfter == Set(moved), "the moved keys were activated on their new owners by their ticks")
            #expect(log.appendsOutOfOrder == 0, "a tick delivered twice or out of order: \(log.firstAppendsOutOfOrder)")
            let failures = reminders.map(\.statistics.storeFailures).reduce(0, +)
            #expect(failures == 0)
            for reminder in reminders { reminder.stop() }
        }
    }
}
