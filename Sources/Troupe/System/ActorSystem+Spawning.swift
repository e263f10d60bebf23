internal import TroupeLocks
import Synchronization
internal import CTroupe

/// Spawning: making a cell for an actor, registering it and scheduling its start.
extension ActorSystem {
    /// Spawns an actor from an instance, with the default ``SpawnOptions``. It cannot be
    /// restarted after a failure (there is no factory); use ``spawn(options:factory:)`` for that.
    @discardableResult
    @inlinable
    public func spawn<Actor: SpawnableActor>(_ actor: sending Actor) -> ActorRef<Actor.Definition.Message> {
        // Compiled for the definition in the caller's module: the cell's class metadata comes
        // from a cache there instead of a generic-metadata lookup, and no options value is
        // built, copied and destroyed (about 100 instructions per spawn, measured).
        let cell = ActorCell<Actor.Definition>(system: self, instance: Actor.runnable(actor), config: nil)
        start(cell, config: nil, parent: nil)
        return ActorRef(cell: cell)
    }

    /// Spawns an actor from an instance with `options`. It cannot be restarted after a failure
    /// (there is no factory); use ``spawn(options:factory:)`` for that.
    @discardableResult
    @inlinable
    public func spawn<Actor: SpawnableActor>(
        _ actor: sending Actor, options: SpawnOptions
    ) -> ActorRef<Actor.Definition.Message> {
        guard options.needsNoCellConfig else {
            return spawnRef(Actor.runnable(actor), factory: nil, options: options, parent: nil)
        }
        return spawn(actor)
    }

    /// Spawns an actor from a factory, which is called again to restart it after a failure.
    @discardableResult
    public func spawn<Actor: SpawnableActor>(
        options: SpawnOptions = .default, factory: @escaping @Sendable () -> Actor
    ) -> ActorRef<Actor.Definition.Message> {
        let runnable = Actor._runnableFactory(factory)
        return spawnRef(runnable(), factory: runnable, options: options, parent: nil)
    }

    /// Spawns from a factory of runnable definitions (the registrar's restart factories).
    func spawnRef<Definition: ActorDefinition>(
        options: SpawnOptions, factory: @escaping @Sendable () -> Definition
    ) -> ActorRef<Definition.Message> {
        spawnRef(factory(), factory: factory, options: options, parent: nil)
    }

    /// Spawns and returns the spawner's ref. A self-invalidating actor is held alive for the
    /// spawner until that ref exists, so that it cannot invalidate itself in between (its first
    /// turn may run on a worker before `makeCell` even returns).
    @usableFromInline
    func spawnRef<Definition: ActorDefinition>(
        _ definition: consuming Definition, factory: (@Sendable () -> Definition)?,
        options: SpawnOptions, parent: AnyCell?
    ) -> ActorRef<Definition.Message> {
        let cell = makeCell(definition, factory: factory, options: options, parent: parent)
        let ref = ActorRef(cell: cell)
        cell.config?.selfInvalidation?.releaseSpawnerHold()
        return ref
    }

    func makeCell<Definition: ActorDefinition>(
        _ definition: consuming Definition, factory: (@Sendable () -> Definition)?,
        options: SpawnOptions, parent: AnyCell?
    ) -> ActorCell<Definition> {
        var config: CellConfig?
        if CellConfig.needed(for: options, hasFactory: factory != nil) {
            let dedicated =
                options.executor == .dedicatedThread && manualDriver == nil
                ? scheduler.makeDedicatedWorker(label: options.name ?? "\(configuration.name)-dedicated") : nil
            config = CellConfig(options: options, dedicated: dedicated, factory: factory)
        }
        let cell = ActorCell(system: self, instance: definition, config: config, parentID: parent?.id ?? 0)
        start(cell, config: config, parent: parent)
        return cell
    }

    /// Registers a new cell and schedules its first turn (which runs `started`); during
    /// shutdown, stops it at once instead. The non-generic half of every spawn.
    @usableFromInline
    func start(_ cell: AnyCell, config: CellConfig?, parent: AnyCell?) {
        // Before the first turn is scheduled, so the dedicated thread sees it (the run queue's
        // push publishes it).
        config?.dedicated?.servedCell = cell
        if let parent {
            cell.extrasCreatingIfNeeded.parent = parent
            parent.extrasCreatingIfNeeded.children[ObjectIdentifier(cell)] = cell
        }
        guard register(cell) else {
            // Shutting down: the actor never runs; everything sent to it is dead-lettered. It
            // leaves its parent's family at once (no `childStopped` will come for it), which
            // also breaks the strong parent link's cycle.
            if let parent {
                cell.extras?.parent = nil
                parent.extras?.children[ObjectIdentifier(cell)] = nil
            }
            cell.stopBeforeStarting()
            if let dedicated = config?.dedicated { scheduler.retireDedicated(dedicated) }
            logger.warning(
                "spawn during shutdown: the actor is stopped at once", metadata: ["actor": "\(cell.address)"])
            return
        }
        config?.selfInvalidation?.holdForSpawner(cell)
        if CTroupe_mailbox_try_acquire(cell.mailbox) { schedule(cell) }
    }

    /// Places a cell whose scheduling right the caller just won (see ``Scheduler``). The
    /// scheduler lives as long as the system, so the hot path borrows it without retaining.
    @inline(__always)
    func schedule(_ cell: AnyCell) {
        // Safety: `scheduler`, a `let` of this system, holds the scheduler as long as the system lives,
        // and the caller holds the system.
        schedulerHandle._withUnsafeGuaranteedRef { $0.schedule(cell) }
    }

    func nextActorID() -> UInt64 { actorIDs.add(1, ordering: .relaxed).newValue }

    // Safety: `scheduler`, a `let` of this system, holds the scheduler as long as the system lives.
    /// Whether the workers have ended (the last step of shutdown).
    var schedulerHasTerminated: Bool { schedulerHandle._withUnsafeGuaranteedRef { $0.hasTerminated } }

    /// The index of the calling thread's shared worker, if it is one of this system's; the
    /// scheduler borrowed, not retained.
    func currentSharedWorkerIndex() -> Int? {
        // Safety: `scheduler`, a `let` of this system, holds the scheduler as long as the system lives.
        schedulerHandle._withUnsafeGuaranteedRef { $0.currentSharedWorkerIndex() }
    }
}
