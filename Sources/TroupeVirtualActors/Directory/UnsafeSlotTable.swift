/// A region's slots by key: an open-addressing hash table (linear probing) of the slots
/// themselves, with one tag byte per bucket from the key's hash.
///
/// Why not `[String: EntitySlot]`: the slot holds its key already, so a dictionary's bucket
/// (the key again, 16 bytes, beside the reference) is two thirds redundant, and a table is up
/// to half empty after it doubles (2^21 buckets at 10^6 identities). Here a bucket is a
/// reference and a tag, 9 bytes: about 30 bytes less per identity at 10^6 (the memory row of
/// `troupe-bench entities`). A `Set` of the slots hashed by their keys saves as much, but its
/// lookup needs a probe element and cost 140 instructions more per `entity(_:)` in retains
/// (callgrind); this one takes none until it returns the slot found.
///
/// The tag (7 bits of the hash, never 0; 0 marks an empty bucket) lets a probe skip a bucket
/// whose key differs without reading that slot, so a lookup reads one slot in nearly every
/// case: the one it returns, which its caller reads next anyway.
///
/// Thread-safety: none of its own. It lives in the region's ``RegionState``, under the region's
/// lock, and every method runs under that lock.
final class UnsafeSlotTable {
    /// 0: empty; else the tag of the key in `members` at the same index.
    private var tags: UnsafeMutablePointer<UInt8>
    /// Each bucket whose tag is not 0 holds a retained slot (taken by `insert`, given back by
    /// `remove` or `deinit`); the others are garbage, never read.
    private var members: UnsafeMutablePointer<Unmanaged<KeyedSlot>>
    /// The bucket count minus one (the count is a power of two).
    private var mask: Int
    private(set) var count = 0
    #if DEBUG
        /// Counts insertions and removals, so that `forEach` can check that its body made none.
        private var mutations = 0
    #endif

    init() {
        (tags, members, mask) = Self.allocate(buckets: 16)
    }

    deinit {
        // Safety: the tags say which buckets hold a retain of their own.
        for index in 0...mask where tags[index] != 0 { members[index].release() }
        tags.deallocate()
        members.deallocate()
    }

    private static func allocate(
        buckets: Int
    ) -> (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<Unmanaged<KeyedSlot>>, Int) {
        let tags = UnsafeMutablePointer<UInt8>.allocate(capacity: buckets)
        tags.initialize(repeating: 0, count: buckets)
        return (tags, UnsafeMutablePointer<Unmanaged<KeyedSlot>>.allocate(capacity: buckets), buckets - 1)
    }

    @inline(__always)
    private static func hash(_ key: String) -> Int {
        var hasher = Hasher()
        hasher.combine(key)
        return hasher.finalize()
    }

    /// The top 7 bits of the hash, with the low bit set so that no tag is 0. The bucket index
    /// comes from the low bits, so the two are independent below 2^56 buckets.
    @inline(__always)
    private static func tag(_ hash: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: UInt(bitPattern: hash) >> 56) | 1
    }

    /// The slot with `key`, if the table has one.
    subscript(key: String) -> KeyedSlot? {
        let hash = Self.hash(key)
        let tag = Self.tag(hash)
        var index = hash & mask
        while true {
            let found = tags[index]
            if found == 0 { return nil }
            // Safety: a bucket with a tag holds a retained slot, so it is alive; it is read
            // without a retain of its own and retained only when returned.
            if found == tag, members[index]._withUnsafeGuaranteedRef({ $0.key == key }) {
                return members[index].takeUnretainedValue()
            }
            index = (index + 1) & mask
        }
    }

    /// Adds `slot`; the table must have no slot with its key (checked in debug builds).
    func insert(_ slot: KeyedSlot) {
        assert(self[slot.key] == nil, "UnsafeSlotTable: a slot for \(slot.key) is already in the table")
        // At most three quarters full, as Swift's own hash tables.
        if (count + 1) * 4 > (mask + 1) * 3 { grow() }
        place(Unmanaged.passRetained(slot), hash: Self.hash(slot.key))
        count += 1
        #if DEBUG
            mutations &+= 1
        #endif
    }

    /// Puts a retained member into the first empty bucket of its probe sequence.
    private func place(_ member: Unmanaged<KeyedSlot>, hash: Int) {
        var index = hash & mask
        while tags[index] != 0 { index = (index + 1) & mask }
        tags[index] = Self.tag(hash)
        members[index] = member
    }

    private func grow() {
        let (oldTags, oldMembers, oldMask) = (tags, members, mask)
        (tags, members, mask) = Self.allocate(buckets: 2 * (mask + 1))
        for index in 0...oldMask where oldTags[index] != 0 {
            // Safety: the member's retain moves to its new bucket.
            let member = oldMembers[index]
            place(member, hash: member._withUnsafeGuaranteedRef { Self.hash($0.key) })
        }
        oldTags.deallocate()
        oldMembers.deallocate()
    }

    /// Removes `slot` if it is the one the table has for its key (a newer slot for the key
    /// stays).
    func remove(_ slot: KeyedSlot) {
        let hash = Self.hash(slot.key)
        var index = hash & mask
        while tags[index] != 0 {
            if members[index].toOpaque() == Unmanaged.passUnretained(slot).toOpaque() {
                vacate(index)
                return
            }
            index = (index + 1) & mask
        }
    }

    /// Empties the bucket at `index` and moves later members of its cluster back over it, so
    /// that every member stays reachable from its home bucket without tombstones.
    private func vacate(_ index: Int) {
        // Safety: gives back the retain `insert` took; the caller still holds the slot.
        members[index].release()
        var hole = index
        var next = (index + 1) & mask
        while tags[next] != 0 {
            let home = members[next]._withUnsafeGuaranteedRef { Self.hash($0.key) } & mask
            // The member at `next` may fill the hole unless its home lies cyclically in
            // (hole, next]: then it would move before its home and become unreachable.
            let homeAfterHole = (home &- hole) & mask
            let nextAfterHole = (next &- hole) & mask
            if homeAfterHole == 0 || homeAfterHole > nextAfterHole {
                tags[hole] = tags[next]
                members[hole] = members[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        tags[hole] = 0
        count -= 1
        #if DEBUG
            mutations &+= 1
        #endif
    }

    /// Calls `body` with every slot, in no particular order. `body` must not insert into nor
    /// remove from the table (checked in debug builds); it may change the slots themselves.
    func forEach(_ body: (KeyedSlot) -> Void) {
        #if DEBUG
            let before = mutations
            defer { assert(mutations == before, "UnsafeSlotTable.forEach: the table changed during the walk") }
        #endif
        for index in 0...mask where tags[index] != 0 {
            // Safety: as in the subscript: the bucket's retain keeps the slot alive.
            members[index]._withUnsafeGuaranteedRef { body($0) }
        }
    }
}
