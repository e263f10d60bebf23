internal import TroupeLocks
import Synchronization
import Troupe

/// How a pool subscribed to a topic receives each publication.
public enum PoolDelivery: Sendable, Hashable {
    /// One member takes each publication, chosen by the pool's `PoolRouting` (with
    /// `.leastLoaded`, an available member).
    case oneMember
    /// Every member gets its own copy.
    case everyMember
}
