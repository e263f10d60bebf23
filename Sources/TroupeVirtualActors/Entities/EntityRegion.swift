import Troupe
internal import TroupeLocks

/// The live directory of one ``EntityKind`` on one system: it finds or activates the one
/// activation of each identity, passivates idle ones, and keeps every message across a
/// passivation.
///
/// Get references with ``entity(_:)``; they are valid before the entity is active and after it
/// has been passivated. The first message to an identity spawns its activation from the kind's
/// factory; messages sent while it stops (idle, over the limit, or on its own) wait here and go
/// to the next activation in the order they were sent.
///
/// One region per kind per system (a second fails with ``EntityRegionError/duplicateKind(_:)``).
/// A region lives as long as its system runs; at shutdown its activations stop with the others.
public final class EntityRegion<Message: Sendable>: Sendable {
    /// The kind's name.
    public let name: String
    /// The system the activations run in.
    public let system: ActorSystem

    let idleSweepsToPassivate: UInt32?
    let activeLimit: Int?
    let activate: @Sendable (EntityID) -> ActorRef<Message>
    let state = Locked(RegionState())

    /// Registers `kind` in `system`; spawns the region's sweeper when the kind passivates idle
    /// activations.
    public convenience init<Actor: SpawnableActor>(
        system: ActorSystem, kind: EntityKind<Actor>
    ) throws(EntityRegionError)
    where Actor.Definition.Message == Message {
        try self.init(
            system: system, name: kind.name, idleTimeout: kind.idleTimeout, activeLimit: kind.activeLimit,
            activate: Self.activation(of: kind, in: system))
    }

    /// Registers a kind whose activations `spawn` makes, for actors that another module
    /// spawns: a durable actor of TroupePersistence, for one (its `spawn(persistent:journal:)`
    /// gives the ref), so that every activation recovers the entity's state and claims its
    /// writer anew. `idleTimeout` and `activeLimit` are as in ``EntityKind``.
    ///
    /// `spawn` is called once per activation, outside the region's lock, and must spawn a new
    /// actor in `system` and return its ref: the region stops that actor to passivate it and
    /// sends it nothing once it has stopped. Capture the region weakly, if at all (see
    /// ``EntityKind/factory``).
    ///
    /// ```swift
    /// let accounts = try EntityRegion(system: system, name: "account") { id in
    ///     system.spawn(persistent: Account(persistenceID: PersistenceID(id.description)), journal: journal).actorRef
    /// }
    /// let balance = try await accounts.entity("42").ask { .command(.deposit(10, $0)) }
    /// ```
    ///
    /// - Precondition: `name` is not empty, `idleTimeout` is positive and `activeLimit` is at
    ///   least 1.
    public convenience init(
        system: ActorSystem, name: String, idleTimeout: Duration? = .seconds(120), activeLimit: Int? = nil,
        spawn: @escaping @Sendable (EntityID) -> ActorRef<Message>
    ) throws(EntityRegionError) {
        try self.init(system: system, name: name, idleTimeout: idleTimeout, activeLimit: activeLimit, activate: spawn)
    }

    private init(
        system: ActorSystem, name: String, idleTimeout: Duration?, activeLimit: Int?,
        activate: @escaping @Sendable (EntityID) -> ActorRef<Message>
    ) throws(EntityRegionError) {
        precondition(!name.isEmpty, "EntityRegion: a kind needs a name")
        if let idleTimeout { precondition(idleTimeout > .zero, "EntityRegion \(name): idleTimeout must be positive") }
        if let activeLimit { precondition(activeLimit >= 1, "EntityRegion \(name): activeLimit must be at least 1") }
        self.name = name
        self.system = system
        self.activeLimit = activeLimit
        var interval: Duration? = activeLimit == nil ? nil : RegionSweeper<Message>.recencyInterval
        if let idleTimeout {
            let sweep = RegionSweeper<Message>.interval(forIdleTimeout: idleTimeout)
            interval = sweep
            idleSweepsToPassivate = UInt32(clamping: Int((idleTimeout / sweep).rounded(.up)))
        } else {
            idleSweepsToPassivate = nil
        }
        self.activate = activate
        try RegionRegistry.claim(kind: name, in: system)
        // The directory's state, not the region: a weak reference would give the region a side
        // table, and every EntityRef copy's retain of it would take the runtime's slow path.
        system.provideSnapshotSection(key: RegionRegistry.Key(system: system, kind: name)) { [state, name] in
            SnapshotSection(kind: "entity_region", instance: name, values: Self.statistics(of: state).section)
        }
        if let interval { _ = system.spawn(RegionSweeper(region: self, interval: interval)) }
    }

    /// How an activation is spawned. From an instance, unless the kind's options set a failure
    /// decider: a factory would cost each activation a closure and a cell configuration (216
    /// bytes of the 720 that an idle activation took, measured with DHAT on the memory row of
    /// `troupe-bench entities`) and a restart in place is what a decider asks for.
    private static func activation<Actor: SpawnableActor>(
        of kind: EntityKind<Actor>, in system: ActorSystem
    ) -> @Sendable (EntityID) -> ActorRef<Message> where Actor.Definition.Message == Message {
        let (factory, options) = (kind.factory, kind.options)
        guard options.failureDecider == nil else {
            return { id in system.spawn(options: options) { factory(id) } }
        }
        return { id in system.spawn(factory(id), options: options) }
    }

    /// The reference to the entity with `key`: cheap, valid on this node whether or not the
    /// entity is active. Fetch it again after a while rather than keeping one for ever: a kept
    /// reference whose identity was passivated and reactivated meanwhile looks its identity up
    /// here on every send (a lock and a dictionary lookup).
    public func entity(_ key: String) -> EntityRef<Message> {
        // A known identity through a lookup whose types are all concrete: returning the slot's
        // generic type from the lock's closure made every call look up the metadata of
        // `EntitySlot<Message>` in the runtime's cache (327 of 1,232 instructions, callgrind).
        let known: KeyedSlot? = state.withLock { $0.slots[key] }
        if let known { return EntityRef(region: self, slot: RegionState.typed(known)) }
        return EntityRef(region: self, slot: state.withLock { $0.slot(for: key) as EntitySlot<Message> })
    }

    /// The region's counters now.
    public var statistics: EntityRegionStatistics { Self.statistics(of: state) }

    /// Reads the counters without holding the region (for a snapshot section of another
    /// module, which must not keep the region alive nor reference it weakly).
    package var statisticsReader: @Sendable () -> EntityRegionStatistics { { [state] in Self.statistics(of: state) } }

    private static func statistics(of state: Locked<RegionState>) -> EntityRegionStatistics {
        state.withLock { state in
            var statistics = state.counters
            statistics.active = state.active
            statistics.passivating = state.passivating
            statistics.known = state.slots.count
            return statistics
        }
    }

    /// Passivates every active entity now, as idleness would (for tests and for draining a
    /// node); returns how many were asked to stop.
    @discardableResult
    public func passivateAll() -> Int { passivate(where: { _ in true }) }

    /// Passivates the active entities whose key `matches` says so, as idleness would: each
    /// stops after the messages it already has, and the next message activates it again.
    /// Returns how many were asked to stop (counted in
    /// ``EntityRegionStatistics/requestedPassivations``). `matches` runs under the region's
    /// lock: keep it short and do not use the region from it.
    @discardableResult
    public func passivate(where matches: (String) -> Bool) -> Int {
        let (count, actions) = state.withLock { state in
            var actions: [RegionAction<Message>] = []
            var count = 0
            var matching: [EntitySlot<Message>] = []
            state.slots.forEach { untyped in
                let slot: EntitySlot<Message> = RegionState.typed(untyped)
                if slot.phase == .active, matches(slot.key) { matching.append(slot) }
            }
            for slot in matching { state.passivate(slot, counter: \.requestedPassivations, into: &actions) }
            count = matching.count
            return (count, actions)
        }
        perform(actions)
        return count
    }

    /// Whether `key` has an activation here that takes its messages now: one running, or one
    /// starting. An activation that is stopping does not count: a message sent to it now would
    /// start the next one.
    public func hasActivation(_ key: String) -> Bool {
        state.withLock { state in
            guard let untyped = state.slots[key] else { return false }
            let slot: EntitySlot<Message> = RegionState.typed(untyped)
            return slot.phase == .active || slot.phase == .flushing
        }
    }

    /// How many identities whose key `matches` have an activation here in any phase (running,
    /// starting, or stopping with what it still has to deliver). 0 means none of them runs
    /// here now, and none will until a message to one of them arrives: a cluster's handoff
    /// waits for that before the identities may start elsewhere. `matches` runs under the
    /// region's lock: keep it short and do not use the region from it.
    public func activations(where matches: (String) -> Bool) -> Int {
        state.withLock { state in
            var count = 0
            state.slots.forEach { untyped in
                let slot: EntitySlot<Message> = RegionState.typed(untyped)
                if slot.phase != .vacant && slot.phase != .retired && matches(slot.key) { count += 1 }
            }
            return count
        }
    }

    // MARK: The slow paths

    /// A tell that found the gate closed. A vacant identity is activated and the tell retried
    /// through the gate, so the outcome is the activation's; while an activation stops or
    /// starts, the message waits here (`.enqueued`).
    @usableFromInline
    func tellThroughDirectory(_ slot: EntitySlot<Message>, _ message: consuming Message) -> TellOutcome {
        var message = Optional(message)
        var slot = slot
        var activated: ActorRef<Message>?
        while true {
            let step = state.withLock { state -> SlowStep<Message> in
                state.counters.directoryLookups += 1
                slot = state.current(slot)
                switch slot.phase {
                case .active:
                    return .retry
                case .vacant:
                    return .activating(state.startActivation(slot, region: self))
                case .draining, .stopping, .flushing:
                    slot.buffer.append(.message(message.take()!))
                    state.counters.buffered += 1
                    return .buffered
                case .retired:
                    preconditionFailure("EntityRegion: current(_:) returned a retired slot")
                }
            }
            switch step {
            case .buffered:
                return .enqueued
            case .activating(let actions):
                let ref = perform(actions)
                if let ref, activated != nil, system.isShuttingDown {
                    // Refused twice by a system that is shutting down: the ref's own tell
                    // dead-letters (and counts) the message.
                    return ref.tell(message.take()!)
                }
                activated = ref
            case .retry:
                break
            }
            if slot.gate.enter() {
                let outcome = slot.tellActivation(message.take()!)
                leave(slot, sent: true)
                return outcome
            }
            leave(slot, sent: false)
        }
    }

    /// An ask that found the gate closed: returns the slot to ask through once it is active.
    /// A vacant identity is activated here, without suspending; while an activation stops or
    /// starts, the ask waits in the buffer, behind what was sent before it.
    @usableFromInline
    nonisolated(nonsending)
        func awaitActivation(_ slot: EntitySlot<Message>) async throws(AskError) -> EntitySlot<Message>
    {
        if system.isShuttingDown { throw AskError.undeliverable(.systemShutdown) }
        var current = slot
        let (mustWait, actions) = state.withLock { state -> (Bool, [RegionAction<Message>]) in
            state.counters.directoryLookups += 1
            current = state.current(slot)
            switch current.phase {
            case .active: return (false, [])
            case .vacant: return (false, state.startActivation(current, region: self))
            case .draining, .stopping, .flushing: return (true, [])
            case .retired: preconditionFailure("EntityRegion: current(_:) returned a retired slot")
            }
        }
        perform(actions)
        guard mustWait else { return current }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let actions = state.withLock { state -> [RegionAction<Message>] in
                current = state.current(current)
                switch current.phase {
                case .active, .vacant:
                    return [.resume([continuation])]  // changed meanwhile: try again
                case .draining, .stopping, .flushing:
                    current.buffer.append(.waiter(continuation))
                    state.counters.buffered += 1
                    return []
                case .retired:
                    preconditionFailure("EntityRegion: current(_:) returned a retired slot")
                }
            }
            perform(actions)
        }
        return current
    }

    /// Leaves `slot`'s gate; when this was the last sender of a closed gate, continues the
    /// passivation it was holding up.
    @inlinable @inline(__always)
    func leave(_ slot: EntitySlot<Message>, sent: Bool) {
        if slot.gate.leave(sent: sent) { drained(slot) }
    }

    @usableFromInline
    func drained(_ slot: EntitySlot<Message>) {
        perform(
            state.withLock { state in
                var actions: [RegionAction<Message>] = []
                state.drained(slot, region: self, into: &actions)
                return actions
            })
    }

    func terminated(_ slot: EntitySlot<Message>) {
        perform(state.withLock { state in state.terminated(slot, region: self) })
    }

    /// Runs what the state machine decided, outside the lock: activations, stops, flushes,
    /// resumes. Returns the activation it spawned, if any.
    @discardableResult
    func perform(_ actions: [RegionAction<Message>]) -> ActorRef<Message>? {
        var spawned: ActorRef<Message>?
        for action in actions {
            switch action {
            case .activate(let slot):
                let ref = activate(EntityID(kind: name, key: slot.key))
                let opened = state.withLock { state in state.activated(slot, ref) }
                spawned = ref
                ref.whenTerminated { [self] _ in terminated(slot) }
                if !opened { flush(slot) }
            case .stop(let ref):
                ref.stop()
            case .resume(let waiters):
                for waiter in waiters { waiter.resume() }
            }
        }
        return spawned
    }

    /// Delivers what `slot` buffered to its new activation, batch by batch, then opens its gate
    /// (or, when the activation has already stopped, lets the state machine go on). Waiting asks
    /// resume last, so they follow every message buffered before them.
    func flush(_ slot: EntitySlot<Message>) {
        var waiters: [CheckedContinuation<Void, Never>] = []
        while true {
            switch state.withLock({ state in state.flushStep(slot, region: self) }) {
            case .deliver(let batch, let ref):
                for pending in batch {
                    switch pending {
                    case .message(let message): ref.tell(message)
                    case .waiter(let waiter): waiters.append(waiter)
                    }
                }
            case .done(let actions):
                perform(actions)
                for waiter in waiters { waiter.resume() }
                return
            }
        }
    }

    /// Runs by the sweeper: counts idle sweeps and passivates what has been idle long enough.
    func sweep() {
        perform(state.withLock { state in state.sweep(region: self) })
    }
}

/// What a tell's slow path decided under the lock.
enum SlowStep<Message: Sendable> {
    /// The gate has opened meanwhile: try it again.
    case retry
    /// This tell starts the activation: run the actions, then try the gate.
    case activating([RegionAction<Message>])
    /// The message waits for the next activation.
    case buffered
}

/// One step of a flush, decided under the lock.
enum FlushStep<Message: Sendable> {
    /// Deliver these buffered items to the new activation, then take the next step.
    case deliver([EntitySlot<Message>.Pending], ActorRef<Message>)
    /// The buffer is empty: the gate is open, or (the activation having stopped) these actions
    /// go on from its termination.
    case done([RegionAction<Message>])
}

/// What the region's state machine asks the region to do once its lock is released.
enum RegionAction<Message: Sendable> {
    /// Spawn the slot's activation from the factory, watch it, and flush the slot to it.
    case activate(EntitySlot<Message>)
    case stop(ActorRef<Message>)
    case resume([CheckedContinuation<Void, Never>])
}
