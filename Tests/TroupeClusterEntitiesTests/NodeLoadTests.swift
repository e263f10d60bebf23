import Testing
import Troupe
import TroupeCluster
import TroupeTestSupport
import TroupeVirtualActors

@testable import TroupeClusterEntities

/// Entities per node, cluster-wide: asked of every member at once, and in the snapshot section's
/// `nodes` table, which asks only while snapshots are read.
@Suite(.serialized) struct NodeLoadTests {
    @Test func everyNodeSeesEachMembersActiveEntitiesAndTheSectionAsksOnlyWhileRead() async throws {
        try await withCluster(3) { nodes in
            let log = LedgerLog()
            let regions = try await ledgersOnEveryNode(nodes, log: log)
            let keys = (0..<60).map { "key-\($0)" }
            for key in keys { regions[0].entity(key).tell(.append(sender: 0, sequence: 1)) }
            #expect(await waitUntil("60 activations") { regions.map(\.local.statistics.active).reduce(0, +) == 60 })
            #expect(!regions[1].loadWatch.isAsking, "nothing asked before anyone reads a snapshot")

            let loads = await regions[1].loadByNode()
            #expect(loads.map(\.node) == nodes.map(\.cluster.node).sorted { $0.uid < $1.uid })
            for (index, node) in nodes.enumerated() {
                let load = loads.first { $0.node == node.cluster.node }
                #expect(load?.active == regions[index].local.statistics.active, "\(node.cluster.node): \(loads)")
                #expect(load?.activations == regions[index].local.statistics.activations)
            }
            #expect(loads.map(\.active).reduce(0, +) == 60)

            // The section's table fills in once it is read (the first read starts the asking).
            func nodesTable() -> SnapshotSection.Table? {
                nodes[1].actors.snapshot().sections.first {
                    $0.kind == "cluster_entity_region" && $0.instance == "ledger"
                }?
                .tables.first { $0.name == "nodes" }
            }
            #expect(
                await waitUntil("the table shows three nodes' 60 entities") {
                    guard let table = nodesTable(), table.rows.count == 3 else { return false }
                    return table.rows.compactMap { Int($0[1]) }.reduce(0, +) == 60
                })
            #expect(
                nodesTable()?.columns == [
                    "node", "active", "activations_total", "journal_queued", "write_p99_us", "age_ms",
                ])
            #expect(
                nodesTable()?.rows.allSatisfy { $0[3] == "" && $0[4] == "" } == true,
                "no journal on these nodes: the lag cells are empty")
            #expect(regions[1].loadWatch.isAsking)
            // Nobody reads: the asking stops (and nothing is asked until the next read).
            #expect(await waitUntil(timeout: .seconds(15), "the watch stops asking") { !regions[1].loadWatch.isAsking })
        }
    }
}
