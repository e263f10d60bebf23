internal import TroupeLocks

/// The lease shared by every ``ActorRef`` of a self-invalidating actor: when the last ref
/// goes, the lease goes, and the actor is told to check whether it should stop.
final class InvalidationLease: Sendable {
    let cell: AnyCell
    init(cell: AnyCell) { self.cell = cell }
    deinit {
        if !cell.isStopped { cell.sendSystem(.referencesReleased) }
    }
}

/// Hands out the current lease of a self-invalidating actor. Any thread, under a lock
/// (creating refs of such actors is not a hot path).
final class SelfInvalidation: Sendable {
    private struct Slot: @unchecked Sendable {  // only touched under `current`'s lock
        weak var lease: InvalidationLease?
        /// The lease the spawner's ref will take, held from spawn until that ref exists.
        var spawnerHold: InvalidationLease?
    }
    private let current = Locked(Slot())

    /// Spawn, before the first turn is scheduled.
    func holdForSpawner(_ cell: AnyCell) {
        current.withLock { slot in
            let lease = InvalidationLease(cell: cell)
            slot.lease = lease
            slot.spawnerHold = lease
        }
    }

    /// Spawn, once the spawner's ref holds the lease.
    func releaseSpawnerHold() {
        let held = current.withLock { slot in
            defer { slot.spawnerHold = nil }
            return slot.spawnerHold
        }
        withExtendedLifetime(held) {}
    }

    func lease(for cell: AnyCell) -> InvalidationLease {
        current.withLock { slot in
            if let lease = slot.lease { return lease }
            let lease = InvalidationLease(cell: cell)
            slot.lease = lease
            return lease
        }
    }

    /// Whether some ref still holds the lease.
    var isReferenced: Bool { current.withLock { $0.lease != nil } }
}
