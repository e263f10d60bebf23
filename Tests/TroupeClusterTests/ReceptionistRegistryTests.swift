import Testing
import TroupeClusterMembership

@testable import TroupeCluster

/// The receptionist's registrations alone, update by update (`ReceptionistRegistry`; the
/// cluster-wide behaviour is in `ReceptionistAndWatchTests` and the simulator's schedules).
@Suite("Receptionist registry")
struct ReceptionistRegistryTests {
    let me = ClusterNode(host: "10.0.0.1", port: 7_337, uid: 1)
    let peer = ClusterNode(host: "10.0.0.2", port: 7_337, uid: 2)

    typealias Entry = WireEnvelope.ReceptionistUpdate.Entry

    @Test func aCheckInIsBroadcastOnceAndACheckOutOnlyOfWhatIsListed() {
        var registry = ReceptionistRegistry()
        let first = registry.checkIn(7, key: "orders")
        #expect(first == .init(operation: .checkIn, entries: [Entry(key: "orders", actorNumber: 7)]))
        #expect(registry.checkIn(7, key: "orders") == nil)
        #expect(registry.checkOut(8, key: "orders") == nil)
        #expect(registry.checkOut(7, key: "sessions") == nil)
        #expect(registry.checkOut(7, key: "orders")?.operation == .checkOut)
        #expect(registry.localEntries.isEmpty)
        #expect(registry.snapshot().entries.isEmpty)
    }

    @Test func aSnapshotReplacesWhatThePeerHadAndNamesEveryKeyItTouched() {
        var registry = ReceptionistRegistry()
        let before = WireEnvelope.ReceptionistUpdate(
            operation: .snapshot,
            entries: [Entry(key: "orders", actorNumber: 1), Entry(key: "sessions", actorNumber: 2)])
        #expect(registry.apply(before, from: peer) == ["orders", "sessions"])
        _ = registry.apply(.init(operation: .checkIn, entries: [Entry(key: "orders", actorNumber: 3)]), from: peer)
        #expect(registry.entries(of: peer) == ["orders": [1, 3], "sessions": [2]])
        // Sessions is gone from the new snapshot: its listing changed too.
        let after = WireEnvelope.ReceptionistUpdate(
            operation: .snapshot, entries: [Entry(key: "orders", actorNumber: 3)])
        #expect(registry.apply(after, from: peer) == ["orders", "sessions"])
        #expect(registry.entries(of: peer) == ["orders": [3]])
        #expect(registry.ids(for: "orders", node: me) == [ClusterActorID(node: peer, number: 3)])
    }

    @Test func aGoneActorLeavesEveryKeyAndADownMemberLeavesEveryListing() throws {
        var registry = ReceptionistRegistry()
        _ = registry.checkIn(5, key: "orders")
        _ = registry.checkIn(5, key: "sessions")
        _ = registry.checkIn(6, key: "orders")
        let checkedOut = registry.checkOutEverywhere(5)
        let gone = try #require(checkedOut)
        #expect(Set(gone.keys) == ["orders", "sessions"])
        #expect(
            Set(gone.update.entries) == [Entry(key: "orders", actorNumber: 5), Entry(key: "sessions", actorNumber: 5)])
        let again = registry.checkOutEverywhere(5)
        #expect(again == nil)
        #expect(registry.localEntries == ["orders": [6]])
        _ = registry.apply(.init(operation: .checkIn, entries: [Entry(key: "orders", actorNumber: 9)]), from: peer)
        #expect(registry.removeEntries(of: peer) == ["orders"])
        #expect(registry.removeEntries(of: peer).isEmpty)
        #expect(registry.ids(for: "orders", node: me) == [ClusterActorID(node: me, number: 6)])
    }
}
