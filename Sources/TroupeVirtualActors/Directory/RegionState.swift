import Troupe

/// A region's directory under its lock: the slots by key, and the transitions of a slot's
/// ``EntitySlot/Phase``. Each transition changes state only and returns the actions
/// (activate, stop, resume) for the region to run once the lock is released, so that no user code
/// (a factory, a termination callback, a dead-letter observer) ever runs under it.
///
/// ```
/// vacant ──first message──▶ flushing ──buffer empty──▶ active ──idle / limit──▶ draining
///    ▲                         ▲                         │ stopped on its own      │ gate drained
///    │                         │                         ▼                         ▼
///    └── retired ◀──nothing buffered── (terminated) ◀── draining ◀────────────── stopping
///                               └──────something buffered──────▶ flushing
/// ```
///
/// A value type with a reference inside: `slots` is shared by every copy, so the state is never
/// copied. It lives only inside the region's `Locked`, and is changed only through it.
struct RegionState {
    /// Every slot of a region has the region's `Message` type. The table holds them untyped so
    /// that the region's state, and its lock, are not generic: generic, every lock taken from
    /// the unspecialised region looked up their metadata in the runtime's cache (about 2,900
    /// instructions per `entity(_:)`, callgrind).
    let slots = UnsafeSlotTable()
    var active = 0
    /// Activations asked to passivate that have not stopped yet: still in `active`, but
    /// already leaving, so the active limit does not count them again.
    var passivating = 0
    /// Activations made so far, numbering them: among equally idle slots, the older goes first.
    var activationSequence: UInt64 = 0
    var counters = EntityRegionStatistics(
        active: 0, passivating: 0, known: 0, activations: 0, idlePassivations: 0, limitPassivations: 0,
        requestedPassivations: 0,
        unplannedStops: 0, buffered: 0, directoryLookups: 0)

    /// The slot for `key`, made vacant if the directory has none.
    /// Safety: a region stores only slots of its own `Message` type.
    @inline(__always)
    static func typed<Message: Sendable>(_ slot: KeyedSlot) -> EntitySlot<Message> {
        unsafeDowncast(slot, to: EntitySlot<Message>.self)
    }

    mutating func slot<Message: Sendable>(for key: String) -> EntitySlot<Message> {
        if let slot = slots[key] { return Self.typed(slot) }
        let slot = EntitySlot<Message>(key: key)
        slots.insert(slot)
        return slot
    }

    /// `slot`, or the slot that replaced it when it was retired.
    mutating func current<Message: Sendable>(_ slot: EntitySlot<Message>) -> EntitySlot<Message> {
        slot.phase == .retired ? self.slot(for: slot.key) as EntitySlot<Message> : slot
    }

    /// vacant → flushing: the region spawns the activation once the lock is released (the
    /// factory is user code), then the flush delivers the buffer and opens the gate. Senders
    /// meanwhile find the gate closed and the slot flushing: they buffer.
    mutating func startActivation<Message: Sendable>(
        _ slot: EntitySlot<Message>, region: EntityRegion<Message>
    ) -> [RegionAction<Message>] {
        assert(slot.phase == .vacant && !slot.gate.isOpen)
        slot.phase = .flushing
        slot.terminated = false
        slot.idleSweeps = 0
        active += 1
        activationSequence += 1
        slot.activationNumber = activationSequence
        counters.activations += 1
        var actions: [RegionAction<Message>] = [.activate(slot)]
        if let limit = region.activeLimit, active - passivating > limit { evict(toWithin: limit, into: &actions) }
        return actions
    }

    /// The activation has been spawned: store it and, when nothing was buffered meanwhile (the
    /// usual first message), open the gate at once (flushing → active) and return true; else
    /// the region flushes.
    mutating func activated<Message: Sendable>(_ slot: EntitySlot<Message>, _ ref: ActorRef<Message>) -> Bool {
        assert(slot.phase == .flushing)
        slot.setActivation(ref)
        guard slot.buffer.isEmpty, !slot.terminated else { return false }
        open(slot)
        return true
    }

    private func open<Message: Sendable>(_ slot: EntitySlot<Message>) {
        slot.phase = .active
        // One behind, so the first sweep counts the activation itself as activity: else a sweep
        // between the gate's opening and the first send would count a brand-new activation
        // idle, and pick it before older ones for the active limit (seen under TSan).
        slot.lastCompleted = slot.gate.activity().completed &- 1
        slot.gate.open()
    }

    /// One batch of a flush: the buffered items and the ref to deliver them to; or, with the
    /// buffer empty, flushing → active (gate opened), or on to what follows a termination.
    mutating func flushStep<Message: Sendable>(
        _ slot: EntitySlot<Message>, region: EntityRegion<Message>
    ) -> FlushStep<Message> {
        assert(slot.phase == .flushing && slot.activation != nil)
        if !slot.buffer.isEmpty {
            let batch = slot.buffer
            slot.buffer = []
            return .deliver(batch, slot.activation.unsafelyUnwrapped)
        }
        if slot.terminated { return .done(afterTermination(slot, region: region)) }
        open(slot)
        return .done([])
    }

    /// active → draining; straight on when nobody was inside the gate.
    mutating func passivate<Message: Sendable>(
        _ slot: EntitySlot<Message>, counter: WritableKeyPath<EntityRegionStatistics, Int>,
        into actions: inout [RegionAction<Message>]
    ) {
        assert(slot.phase == .active)
        slot.phase = .draining
        slot.passivating = true
        passivating += 1
        counters[keyPath: counter] += 1
        if slot.gate.close() { drainedLocked(slot, into: &actions) }
    }

    /// The gate's claim was won outside the lock: continue.
    mutating func drained<Message: Sendable>(
        _ slot: EntitySlot<Message>, region: EntityRegion<Message>, into actions: inout [RegionAction<Message>]
    ) {
        if slot.terminated {
            assert(slot.phase == .draining)
            actions += afterTermination(slot, region: region)
        } else {
            drainedLocked(slot, into: &actions)
        }
    }

    /// draining → stopping: every message sent through the gate is in the mailbox; the stop
    /// follows them.
    private mutating func drainedLocked<Message: Sendable>(
        _ slot: EntitySlot<Message>, into actions: inout [RegionAction<Message>]
    ) {
        assert(slot.phase == .draining)
        slot.phase = .stopping
        actions.append(.stop(slot.activation.unsafelyUnwrapped))
    }

    /// The activation's termination callback.
    mutating func terminated<Message: Sendable>(
        _ slot: EntitySlot<Message>, region: EntityRegion<Message>
    ) -> [RegionAction<Message>] {
        slot.terminated = true
        switch slot.phase {
        case .active:
            // Stopped on its own: close the gate; messages already sent to it are dead letters
            // (the system counts them), later ones wait for the next activation.
            counters.unplannedStops += 1
            slot.phase = .draining
            return slot.gate.close() ? afterTermination(slot, region: region) : []
        case .stopping:
            return afterTermination(slot, region: region)
        case .draining, .flushing:
            return []  // the drain's claim, or the flush's last step, goes on from here
        case .vacant, .retired:
            preconditionFailure("EntitySlot \(slot.key): termination while \(slot.phase)")
        }
    }

    /// The activation has stopped and its gate is drained: activate again for what is
    /// buffered, or retire the slot.
    private mutating func afterTermination<Message: Sendable>(
        _ slot: EntitySlot<Message>, region: EntityRegion<Message>
    ) -> [RegionAction<Message>] {
        active -= 1
        if slot.passivating {
            slot.passivating = false
            passivating -= 1
        }
        slot.clearActivation()
        slot.terminated = false
        slot.phase = .vacant
        if !slot.buffer.isEmpty { return startActivation(slot, region: region) }
        retire(slot)
        return []
    }

    private mutating func retire<Message: Sendable>(_ slot: EntitySlot<Message>) {
        slot.phase = .retired
        slots.remove(slot)
    }

    /// Passivates active slots, most idle first, down to nine tenths of `limit` (so the scan
    /// is paid once per tenth of the limit's activations, not per activation).
    private mutating func evict<Message: Sendable>(toWithin limit: Int, into actions: inout [RegionAction<Message>]) {
        let target = limit - max(1, limit / 10)
        var candidates: [EntitySlot<Message>] = []
        slots.forEach { untyped in
            let slot: EntitySlot<Message> = Self.typed(untyped)
            if slot.phase == .active { candidates.append(slot) }
        }
        let excess = min(candidates.count, active - passivating - target)
        guard excess > 0 else { return }
        candidates.sort { ($0.idleSweeps, $1.activationNumber) > ($1.idleSweeps, $0.activationNumber) }
        for slot in candidates.prefix(excess) { passivate(slot, counter: \.limitPassivations, into: &actions) }
    }

    /// One sweep: an active slot whose gate saw no send since the last sweep, with nobody
    /// inside, has been idle one sweep more; after enough it is passivated. A vacant slot
    /// nobody sent to since the last sweep is retired.
    mutating func sweep<Message: Sendable>(region: EntityRegion<Message>) -> [RegionAction<Message>] {
        var actions: [RegionAction<Message>] = []
        var unused: [EntitySlot<Message>] = []
        slots.forEach { untyped in
            let slot: EntitySlot<Message> = Self.typed(untyped)
            switch slot.phase {
            case .active:
                let (completed, busy) = slot.gate.activity()
                if busy || completed != slot.lastCompleted {
                    slot.lastCompleted = completed
                    slot.idleSweeps = 0
                } else {
                    slot.idleSweeps &+= 1
                    if let needed = region.idleSweepsToPassivate, slot.idleSweeps >= needed {
                        passivate(slot, counter: \.idlePassivations, into: &actions)
                    }
                }
            case .vacant:
                if slot.buffer.isEmpty { unused.append(slot) }
            case .draining, .stopping, .flushing, .retired:
                break
            }
        }
        for slot in unused { retire(slot) }
        return actions
    }
}
