/// Which member owns an identity: rendezvous (highest random weight) hashing. Every member
/// scores `(key, member)` with the same stable hash and the highest score owns the key, so
/// nodes that see the same members agree without talking, and a member that joins or leaves
/// moves only the keys it wins or held: about 1/(N+1) of them, the least any placement can.
///
/// The hash is FNV-1a over the key's UTF-8 bytes, mixed with the member's uid by SplitMix64's
/// finalizer: fixed across processes and runs (Swift's `Hasher` is seeded per process, so it
/// could not be used here). The uid is drawn anew at every start, so a restarted node is a
/// new member for placement too.
///
/// It lives in this pure module, not the entities', so that the cluster simulator measures the
/// placement the entities use; inlinable, so that the entities' lookups stay inlined.
package enum RendezvousPlacement {
    /// FNV-1a, 64 bits, over the key's UTF-8 bytes: read in place when the string stores them
    /// contiguously (native strings, small or not: about 100 instructions less per lookup than
    /// the view's iterator for a 4-byte key), else through the view.
    @inlinable package static func keyHash(_ key: String) -> UInt64 {
        if let hash = key.utf8.withContiguousStorageIfAvailable(fnv1a) { return hash }
        return fnv1a(key.utf8)
    }

    @inlinable static func fnv1a<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// SplitMix64's finalizer: every input bit affects every output bit.
    @inlinable package static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    @inlinable package static func score(keyHash: UInt64, member uid: UInt64) -> UInt64 {
        mix(keyHash ^ mix(uid))
    }

    /// The index in `uids` of the member that owns `key`; nil when there are none. Ties (two
    /// equal 64-bit scores) go to the larger uid, so the choice never depends on order.
    @inlinable package static func owner(of key: String, among uids: [UInt64]) -> Int? {
        owner(keyHash: keyHash(key), among: uids)
    }

    /// ``owner(of:among:)`` for a key already hashed with ``keyHash(_:)``.
    @inlinable package static func owner(keyHash hash: UInt64, among uids: [UInt64]) -> Int? {
        var best: Int?
        var bestScore: UInt64 = 0
        for (index, uid) in uids.enumerated() {
            let score = score(keyHash: hash, member: uid)
            if let current = best, score < bestScore || (score == bestScore && uid < uids[current]) { continue }
            best = index
            bestScore = score
        }
        return best
    }

    /// ``owner(keyHash:among:)`` with each member's uid mixed already (`mixed[i]` is
    /// `mix(uids[i])`), as a view keeps them: one mix per member per lookup instead of two.
    @inlinable package static func owner(keyHash hash: UInt64, among uids: [UInt64], mixed: [UInt64]) -> Int? {
        assert(uids.count == mixed.count, "one mixed uid per member")
        var best: Int?
        var bestScore: UInt64 = 0
        for index in uids.indices {
            let score = mix(hash ^ mixed[index])
            if let current = best, score < bestScore || (score == bestScore && uids[index] < uids[current]) {
                continue
            }
            best = index
            bestScore = score
        }
        return best
    }
}
