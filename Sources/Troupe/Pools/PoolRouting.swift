/// How an ``ActorPool`` picks the member that gets a message.
///
/// Every strategy decides per message without locks: an atomic counter at most, plus atomic
/// loads of the members' mailbox depth and busy flag for the load-aware ones. A member that
/// has stopped is skipped while a live one remains.
public struct PoolRouting<Message: Sendable>: Sendable, CustomStringConvertible {
    enum Strategy: Sendable {
        case roundRobin
        case random
        case leastLoaded
        case firstFreeOrGrow(maximum: Int)
        case consistentHash(@Sendable (Message) -> UInt64)
        case broadcast
    }

    let strategy: Strategy

    /// Members in turn.
    public static var roundRobin: PoolRouting { PoolRouting(strategy: .roundRobin) }

    /// A uniformly random member (a SplitMix64 sequence on one atomic counter: cheap, not
    /// cryptographic).
    public static var random: PoolRouting { PoolRouting(strategy: .random) }

    /// The member with the least load: messages waiting in its mailbox plus one while it is
    /// handling a message (its busy state). An idle member wins at once; ties go to the next
    /// member in turn. Members count their mailbox depth
    /// (``SpawnOptions/tracksMailboxDepth`` is switched on for them).
    ///
    /// A worker takes up to the system's ``ActorSystem/Configuration/batchSize`` messages out
    /// of a mailbox at the start of a turn, and those no longer count as waiting; the busy flag
    /// stays set while they are handled one after another.
    public static var leastLoaded: PoolRouting { PoolRouting(strategy: .leastLoaded) }

    /// The first free member (idle, empty mailbox) in member order;
    /// when none is free and the pool has fewer than `maximum` members, a new member is created
    /// and takes the message; otherwise the least loaded member takes it.
    public static func firstFreeOrGrow(upTo maximum: Int) -> PoolRouting {
        PoolRouting(strategy: .firstFreeOrGrow(maximum: maximum))
    }

    /// Messages with equal keys go to the same member (jump consistent hashing over the live
    /// members). The key is hashed with Swift's `Hasher`, which is seeded per process: the
    /// mapping is stable for the life of the process. For a mapping stable across processes,
    /// use ``consistentHash(stableHash:)``.
    public static func consistentHash<Key: Hashable & SendableMetatype>(
        by key: @escaping @Sendable (Message) -> Key
    ) -> PoolRouting {
        PoolRouting(
            strategy: .consistentHash({ message in
                var hasher = Hasher()
                hasher.combine(key(message))
                return UInt64(bitPattern: Int64(hasher.finalize()))
            }))
    }

    /// Consistent hashing on a hash you compute (for example FNV-1a of a user id), so that the
    /// same key maps to the same member index in every process.
    public static func consistentHash(stableHash: @escaping @Sendable (Message) -> UInt64) -> PoolRouting {
        PoolRouting(strategy: .consistentHash(stableHash))
    }

    /// Every message to every member (``ActorPool/tell(_:)`` copies it). An `ask` has one reply
    /// slot, so it goes to one member, in turn; use ``ActorPool/askAll(timeout:_:)`` to hear
    /// from all of them.
    public static var broadcast: PoolRouting { PoolRouting(strategy: .broadcast) }

    /// Whether members must report their load (mailbox depth and busy flag).
    var tracksLoad: Bool {
        switch strategy {
        case .leastLoaded, .firstFreeOrGrow: true
        default: false
        }
    }

    /// The most members the pool may have, given its initial size.
    func capacity(initialSize: Int) -> Int {
        if case .firstFreeOrGrow(let maximum) = strategy { return maximum }
        return initialSize
    }

    func validate(size: Int) throws(PoolError) {
        guard size >= 1 else { throw .invalidSize(size) }
        if case .firstFreeOrGrow(let maximum) = strategy, maximum < size {
            throw .invalidMaximum(size: size, maximum: maximum)
        }
    }

    public var description: String {
        switch strategy {
        case .roundRobin: "roundRobin"
        case .random: "random"
        case .leastLoaded: "leastLoaded"
        case .firstFreeOrGrow(let maximum): "firstFreeOrGrow(upTo: \(maximum))"
        case .consistentHash: "consistentHash"
        case .broadcast: "broadcast"
        }
    }
}

/// Jump consistent hash (Lamping and Veach, 2014): maps `key` to a bucket in `0..<buckets` so
/// that growing from n to n + 1 buckets moves only about 1/(n + 1) of the keys. No memory, no
/// allocation, O(log n).
@inline(__always)
func jumpConsistentHash(_ key: UInt64, buckets: Int) -> Int {
    var key = key
    var bucket: Int64 = -1
    var next: Int64 = 0
    while next < Int64(buckets) {
        bucket = next
        key = key &* 2_862_933_555_777_941_757 &+ 1
        next = Int64(Double(bucket + 1) * (Double(UInt64(1) << 31) / Double((key >> 33) + 1)))
    }
    return Int(bucket)
}

/// SplitMix64's output function: turns a counter into a well-mixed 64-bit value.
@inline(__always)
func splitMix64(_ value: UInt64) -> UInt64 {
    var z = value
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}
