import Testing
import TroupeCluster
import TroupeClusterMembership

@testable import TroupeClusterEntities

@Suite struct RendezvousPlacementTests {
    @Test func theHashIsStableAcrossProcesses() {
        // Fixed values: placement must not depend on the process (Swift's Hasher is seeded).
        #expect(RendezvousPlacement.keyHash("") == 0xcbf2_9ce4_8422_2325)
        #expect(RendezvousPlacement.keyHash("a") == 0xaf63_dc4c_8601_ec8c)
    }

    @Test func aJoinMovesAboutOneInNPlusOneKeysAndOnlyToTheNewMember() {
        let keys = (0..<100_000).map { "entity-\($0)" }
        var members: [UInt64] = (1...9).map { UInt64($0) &* 0x9e37_79b9_7f4a_7c15 }
        let before = keys.map { members[RendezvousPlacement.owner(of: $0, among: members)!] }
        let counts = Dictionary(grouping: before, by: { $0 }).mapValues(\.count)
        // Balanced within 10 % of the ideal 1/9 each.
        #expect(counts.values.allSatisfy { abs($0 - keys.count / 9) < keys.count / 90 }, "\(counts)")
        let newcomer: UInt64 = 0xdead_beef
        members.append(newcomer)
        let after = keys.map { members[RendezvousPlacement.owner(of: $0, among: members)!] }
        var moved = 0
        for (old, new) in zip(before, after) where old != new {
            moved += 1
            #expect(new == newcomer, "a key moved between two old members")
        }
        // Ideal 1/10 of the keys; at most 1.2/(N+1), the bound.
        #expect(Double(moved) <= 1.2 * Double(keys.count) / 10, "\(moved) moved")
        #expect(Double(moved) >= 0.8 * Double(keys.count) / 10, "\(moved) moved")
    }

    @Test func theOwnerDoesNotDependOnTheMembersOrder() {
        let members: [UInt64] = [5, 17, 99, 1_000_003]
        for key in ["a", "b", "user-42", ""] {
            let owner = members[RendezvousPlacement.owner(of: key, among: members)!]
            let reversed = Array(members.reversed())
            #expect(reversed[RendezvousPlacement.owner(of: key, among: reversed)!] == owner)
        }
        #expect(RendezvousPlacement.owner(of: "a", among: []) == nil)
    }
}
