import Testing
import TroupeTestSupport

@testable import Troupe

/// `PoolRouting.consistentHash`: jump consistent hashing over the members (`jumpConsistentHash`
/// in PoolRouting.swift). Its promises: a key maps to the same member index in every process
/// (for a stable hash), keys spread evenly, and growing the pool from n to n + 1 members moves
/// only keys to the new member, about 1/(n + 1) of them. A stopped member's keys go to the
/// next running member; the other keys stay where they were.
@Suite struct ConsistentHashTests {
    /// Well-mixed 64-bit keys, as a hash would give them.
    private static let keys: [UInt64] = (0..<10_000).map { splitMix64(UInt64($0) &* 0x9E37_79B9_7F4A_7C15) }

    /// The reference implementation's published values (Lamping and Veach's algorithm, as in
    /// other languages' ports): a mapping that other processes and programs can reproduce.
    @Test func keysMapToTheReferenceImplementationsBuckets() {
        #expect(jumpConsistentHash(1, buckets: 1) == 0)
        #expect(jumpConsistentHash(42, buckets: 57) == 43)
        #expect(jumpConsistentHash(0xDEAD_10CC, buckets: 1) == 0)
        #expect(jumpConsistentHash(0xDEAD_10CC, buckets: 666) == 361)
        #expect(jumpConsistentHash(256, buckets: 1024) == 520)
    }

    @Test func everyKeyMapsToAMemberIndexAndToTheSameOneEachTime() {
        for buckets in 1...33 {
            for key in Self.keys.prefix(1000) {
                let bucket = jumpConsistentHash(key, buckets: buckets)
                #expect((0..<buckets).contains(bucket))
                #expect(jumpConsistentHash(key, buckets: buckets) == bucket)
            }
        }
        #expect(Self.keys.allSatisfy { jumpConsistentHash($0, buckets: 1) == 0 })
    }

    @Test func tenThousandKeysSpreadOverEightMembers() {
        var counts = [Int](repeating: 0, count: 8)
        for key in Self.keys { counts[jumpConsistentHash(key, buckets: 8)] += 1 }
        // Each member's share is about 1/8 (1,250 keys); between 5% and 20% of them.
        #expect(counts.allSatisfy { (500...2000).contains($0) }, "shares \(counts)")
        #expect(counts.reduce(0, +) == 10_000)
    }

    @Test(arguments: [1, 2, 3, 4, 7, 8, 15, 16, 31])
    func growingByOneMemberMovesKeysOnlyToTheNewMemberAndAboutTheirFairShare(members: Int) {
        var moved = 0
        for key in Self.keys {
            let before = jumpConsistentHash(key, buckets: members)
            let after = jumpConsistentHash(key, buckets: members + 1)
            if before != after {
                #expect(after == members, "key \(key) moved from \(before) to \(after), not to the new member")
                moved += 1
            }
        }
        // The new member's fair share is 1/(n + 1) of the keys: between half and 1.5 times that.
        let fair = Double(Self.keys.count) / Double(members + 1)
        #expect(Double(moved) > fair / 2 && Double(moved) < fair * 1.5, "\(moved) keys moved, fair share \(fair)")
    }

    @Test func removingTheLastMemberMovesOnlyItsKeys() {
        for key in Self.keys {
            let withFive = jumpConsistentHash(key, buckets: 5)
            if withFive != 4 { #expect(jumpConsistentHash(key, buckets: 4) == withFive) }
        }
    }

    /// Through a pool: the routing skips a stopped member, so only its keys move, all of them
    /// to the next member in member order.
    @Test func aStoppedMembersKeysGoToTheNextMemberAndNoOtherKeyMoves() async throws {
        try await withTestSystem { system in
            let routing = PoolRouting<PoolWorker.Message>.consistentHash(stableHash: { message in
                if case .route(let key, _) = message { return key }
                return 0
            })
            let pool = try system.spawnPool(size: 4, routing: routing) { PoolWorker(index: $0) }
            let keys = Self.keys.prefix(200)
            func members() async throws -> [Int] {
                var members: [Int] = []
                for key in keys { members.append(try await pool.ask { .route(key: key, $0) }) }
                return members
            }
            let before = try await members()
            #expect(before == keys.map { jumpConsistentHash($0, buckets: 4) })
            #expect(Set(before) == [0, 1, 2, 3])
            pool.members[1].stop()
            await waitUntil("member 1 stopped") { pool.members[1].isStopped }
            let after = try await members()
            for (old, new) in zip(before, after) {
                #expect(new == (old == 1 ? 2 : old))
            }
        }
    }
}
