import Testing
import TroupeClusterMembership

@testable import TroupeCluster

/// The cluster system's own table of members: down members are kept as tombstones (so that
/// `isDown` refuses calls and dials to them) but no more than SWIM's `maximumTombstones`,
/// oldest forgotten first, with what else the table held about them.
struct MemberTableTests {
    static func node(_ number: Int) -> ClusterNode {
        ClusterNode(host: "10.0.0.\(number)", port: 7337, uid: UInt64(number))
    }

    @Test func tombstonesAreBoundedOldestFirstAndTakeTheirRoundTripsAndLeavingWith() {
        var table = MemberTable()
        for number in 1...5 {
            table.record(
                ClusterMembershipEvent(member: Self.node(number), status: .alive(incarnation: 0)), tombstoneLimit: 3)
            table.roundTrips[Self.node(number)] = .milliseconds(number)
        }
        table.leaving.insert(Self.node(1))
        for number in 1...4 {
            table.record(ClusterMembershipEvent(member: Self.node(number), status: .down), tombstoneLimit: 3)
            // Down again (gossip repeats it): not a second tombstone.
            table.record(ClusterMembershipEvent(member: Self.node(number), status: .down), tombstoneLimit: 3)
        }
        #expect(table.statuses[Self.node(1)] == nil)
        #expect(!table.leaving.contains(Self.node(1)))
        #expect((2...4).allSatisfy { table.statuses[Self.node($0)] == .down && table.roundTrips[Self.node($0)] == nil })
        #expect(table.statuses[Self.node(5)] == .alive(incarnation: 0))
        #expect(table.roundTrips[Self.node(5)] == .milliseconds(5))
        #expect(table.downOrder == (2...4).map(Self.node))
    }
}
