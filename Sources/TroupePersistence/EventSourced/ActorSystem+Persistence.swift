import Troupe

/// How a durable actor waits.
public struct PersistenceSettings: Sendable {
    /// Commands kept while a write or the recovery is in flight; one more fails the actor with
    /// ``PersistenceError/stashOverflow(_:capacity:)`` (its supervision decides). Default 10,000.
    public var stashCapacity: Int
    /// At most this many events in one write of one actor (default 1,000). Commands that
    /// arrived during a write are decided together and written as one append, up to this.
    public var maxEventsPerWrite: Int

    public init(stashCapacity: Int = 10_000, maxEventsPerWrite: Int = 1_000) {
        precondition(stashCapacity >= 1, "a stash holds at least one command")
        precondition(maxEventsPerWrite >= 1, "a write holds at least one event")
        self.stashCapacity = stashCapacity
        self.maxEventsPerWrite = maxEventsPerWrite
    }
}

extension ActorSystem {
    /// Spawns a durable actor that writes through `journal`. It recovers first (commands sent
    /// meanwhile wait in its stash); a restart (see `SpawnOptions.failureDecider`) recovers
    /// again from what is stored.
    public func spawn<Actor: EventSourcedActor>(
        persistent actor: Actor, journal: Journal, options: SpawnOptions = .default,
        settings: PersistenceSettings = PersistenceSettings()
    ) -> PersistentRef<Actor.Command> {
        journal.appear(in: self)
        return PersistentRef(
            spawn(options: options) { EventSourcedHost(actor: actor, journal: journal, settings: settings) })
    }

    /// Spawns a durable-state actor that saves through `journal`. It reads its state first
    /// (commands sent meanwhile wait in its stash).
    public func spawn<Actor: DurableStateActor>(
        persistent actor: Actor, journal: Journal, options: SpawnOptions = .default,
        settings: PersistenceSettings = PersistenceSettings()
    ) -> PersistentRef<Actor.Command> {
        journal.appear(in: self)
        return PersistentRef(
            spawn(options: options) { DurableStateHost(actor: actor, journal: journal, settings: settings) })
    }
}
