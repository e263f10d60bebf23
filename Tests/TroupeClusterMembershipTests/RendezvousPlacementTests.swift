import Testing
import TroupeClusterMembership

@Suite struct RendezvousPlacementTests {
    @Test func theHashIsStableAcrossProcesses() {
        // Fixed values: placement must not depend on the process (Swift's Hasher is seeded).
        #expect(RendezvousPlacement.keyHash("") == 0xcbf2_9ce4_8422_2325)
        #expect(RendezvousPlacement.keyHash("a") == 0xaf63_dc4c_8601_ec8c)
        // Read in place or through the UTF-8 view, the same bytes: a small string, a long one
        // (heap storage), one with multi-byte characters, and a substring's copy.
        for key in ["user-42", String(repeating: "cart/", count: 40), "número-é-ü", String("xx-key-xx".dropFirst(3))] {
            var expected: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in Array(key.utf8) {
                expected ^= UInt64(byte)
                expected &*= 0x0000_0100_0000_01b3
            }
            #expect(RendezvousPlacement.keyHash(key) == expected, "\(key)")
        }
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

    /// What a view looks up with (its members' uids mixed once) names the same owner as the
    /// plain score, ties included.
    @Test func premixedUIDsNameTheSameOwner() {
        var generator = SystemRandomNumberGenerator()
        for size in [1, 2, 3, 7, 50] {
            let members = (0..<size).map { _ in UInt64.random(in: 1...UInt64.max, using: &generator) }
            let mixed = members.map(RendezvousPlacement.mix)
            for index in 0..<2_000 {
                let hash = RendezvousPlacement.keyHash("key-\(index)")
                #expect(
                    RendezvousPlacement.owner(keyHash: hash, among: members, mixed: mixed)
                        == RendezvousPlacement.owner(keyHash: hash, among: members))
            }
        }
        // Two members with the same uid score alike: the tie goes to the same index both ways.
        let twins: [UInt64] = [9, 9, 4]
        let hash = RendezvousPlacement.keyHash("tie")
        #expect(
            RendezvousPlacement.owner(keyHash: hash, among: twins, mixed: twins.map(RendezvousPlacement.mix))
                == RendezvousPlacement.owner(keyHash: hash, among: twins))
        #expect(RendezvousPlacement.owner(keyHash: hash, among: [], mixed: []) == nil)
    }
}
