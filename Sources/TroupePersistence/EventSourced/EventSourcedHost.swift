import Logging
import Troupe

/// Runs an ``EventSourcedActor``: its lifecycle is `DurableHost`'s; this adds applying the
/// history, deciding commands into one append per write, and snapshots.
struct EventSourcedHost<Actor: EventSourcedActor>: DurableHost {
    typealias Message = PersistentMessage<Actor.Command>
    typealias Command = Actor.Command

    let actor: Actor
    let core: DurableCore<Actor.Command>
    var phase = DurablePhase<PendingWrite>.admitting
    var state: Actor.State
    var lastSequenceNumber: Int64 = 0
    var eventsSinceSnapshot = 0

    init(actor: Actor, journal: Journal, settings: PersistenceSettings) {
        self.actor = actor
        core = DurableCore(id: actor.persistenceID, journal: journal, settings: settings)
        state = actor.emptyState
    }

    // MARK: Recovery

    /// Reads and decodes the history off the actor.
    static func read(
        _ id: PersistenceID, from journal: Journal
    ) async -> Result<
        RecoveredHistory, PersistenceError
    > {
        let history: StoredHistory
        do { history = try await journal.history(of: id) } catch {
            return .failure(.recoveryFailed(id, underlying: error))
        }
        var snapshotState: Actor.State?
        if let snapshot = history.snapshot {
            guard let codec = Actor.snapshots.codec else {
                return .failure(.recoveryFailed(id, underlying: SnapshotWithoutCodec()))
            }
            do { snapshotState = try codec.decode(snapshot.state) } catch {
                return .failure(.decodingFailed(id, sequenceNumber: snapshot.sequenceNumber, underlying: error))
            }
        }
        var events: [Actor.Event] = []
        events.reserveCapacity(history.events.count)
        var expected = (history.snapshot?.sequenceNumber ?? 0) + 1
        for stored in history.events {
            guard stored.sequenceNumber == expected else {
                return .failure(.sequenceConflict(id, attempted: stored.sequenceNumber, expected: expected))
            }
            do { events.append(try Actor.eventCodec.decode(stored.event)) } catch {
                return .failure(.decodingFailed(id, sequenceNumber: stored.sequenceNumber, underlying: error))
            }
            expected += 1
        }
        return .success(
            RecoveredHistory(state: snapshotState, events: events, lastSequenceNumber: history.lastSequenceNumber))
    }

    mutating func apply(_ history: RecoveredHistory) throws {
        // `read` made these values with this actor's codecs.
        state = (history.state as? Actor.State) ?? actor.emptyState
        for event in history.events {
            guard let event = event as? Actor.Event else { preconditionFailure("a recovered event of another type") }
            actor.apply(event, to: &state)
        }
        lastSequenceNumber = history.lastSequenceNumber
        eventsSinceSnapshot = history.events.count
    }

    // MARK: Commands and writes

    /// The commands of one write: their effects' follow-ups, each bound to the state right after
    /// its own events, and all their events, stored in one atomic append.
    struct PendingWrite {
        /// The follow-ups in the order decided, each bound to its state. Arrays of concrete
        /// closure types: no generic metadata to look up per command (an array of
        /// effect-and-state pairs cost two lookups), and no recursion however many commands
        /// one write carries (up to the stash's capacity), as composed closures would have.
        var succeeded: [() -> Void] = []
        var failed: [(PersistenceError) -> Void] = []
        /// Effects decided (with or without follow-ups).
        var effectCount = 0
        var events: [Actor.Event] = []
        var stops = false

        /// Adds `effect`, whose follow-ups will see `state`.
        mutating func add(_ effect: Effect<Actor>, after state: Actor.State) {
            effectCount += 1
            if let succeed = effect.succeeded.runner { succeeded.append { succeed(state) } }
            if let fail = effect.failed.runner { failed.append(fail) }
        }

        func succeed() { for followUps in succeeded { followUps() } }

        func fail(_ error: PersistenceError) { for followUps in failed { followUps(error) } }
    }

    /// Handles `first` (if any) and then the stash, while nothing is in flight: commands that
    /// arrived during the previous write are decided together, against the state as of the
    /// events decided before them, and their events go in one append. Their replies wait for it
    /// (all or none are stored), so one actor's commands are group-committed too.
    mutating func handleCommands(first: Actor.Command?, context: ActorContext<Message>) throws {
        guard case .running = phase else { return }
        var working = state
        var pending = PendingWrite()
        var next = first ?? core.stash.pop()
        while let command = next {
            let effect: Effect<Actor>
            do {
                effect = try actor.handle(
                    command, state: working,
                    context: EventSourcedContext(
                        actor: context, persistenceID: id,
                        lastSequenceNumber: lastSequenceNumber + Int64(pending.events.count)))
            } catch {
                // The commands decided before this one are still written (their repliers learn
                // the outcome as "stopped during write", and a restart sees their events).
                try submit(pending, context: context)
                throw error
            }
            if effect.events.isEmpty && pending.effectCount == 0 {
                // Nothing waits to be stored: its follow-ups run at once.
                effect.succeed(with: working)
            } else {
                for event in effect.events { actor.apply(event, to: &working) }
                pending.events += effect.events
                pending.add(effect, after: working)
            }
            if effect.stops {
                pending.stops = true
                if pending.events.isEmpty {
                    context.stop()
                    return
                }
                break
            }
            if pending.events.count >= core.settings.maxEventsPerWrite { break }
            next = core.stash.pop()
        }
        try submit(pending, context: context)
    }

    /// Sends `pending`'s events as one append (or, with none, runs what waits at once).
    private mutating func submit(_ pending: PendingWrite, context: ActorContext<Message>) throws {
        guard !pending.events.isEmpty else {
            pending.succeed()
            return
        }
        var serialized: [SerializedEvent] = []
        serialized.reserveCapacity(pending.events.count)
        do {
            for event in pending.events {
                var encoded = try Actor.eventCodec.encode(event)
                let tags = actor.tags(for: event)
                if !tags.isEmpty {
                    for tag in tags {
                        if let problem = SerializedEvent.problem(withTag: tag) {
                            throw PersistenceError.invalidTag(id, tag: tag, reason: problem)
                        }
                    }
                    encoded.tags = tags.sorted()
                }
                serialized.append(encoded)
            }
        } catch {
            let failure = error as? PersistenceError ?? PersistenceError.storeFailed(id, underlying: error)
            pending.fail(failure)
            throw failure
        }
        let append = EventAppend(
            persistenceID: id, epoch: core.epoch, firstSequenceNumber: lastSequenceNumber + 1, events: serialized)
        phase = .writing(pending)
        core.submit(.append(append), context: context) { .written(incarnation: $0, $1) }
    }

    func fail(_ pending: PendingWrite, with error: PersistenceError) {
        pending.fail(error)
    }

    mutating func written(
        _ pending: PendingWrite, _ result: Result<JournalOutcome, any Error>, context: ActorContext<Message>
    )
        throws
    {
        guard case .success(.written) = result else {
            let failure = core.writeFailure(result, attempted: lastSequenceNumber + 1)
            fail(pending, with: failure)
            throw failure
        }
        for event in pending.events { actor.apply(event, to: &state) }
        lastSequenceNumber += Int64(pending.events.count)
        eventsSinceSnapshot += pending.events.count
        pending.succeed()
        snapshotIfDue(context: context)
        if pending.stops {
            context.stop()
            return
        }
        try handleCommands(first: nil, context: context)
    }

    private mutating func snapshotIfDue(context: ActorContext<Message>) {
        guard let every = Actor.snapshots.every, let codec = Actor.snapshots.codec, eventsSinceSnapshot >= every else {
            return
        }
        eventsSinceSnapshot = 0
        let serialized: SerializedEvent
        do { serialized = try codec.encode(state) } catch {
            context.logger.warning("snapshot not encoded: \(error)", metadata: ["persistence-id": "\(id)"])
            return
        }
        let write = SnapshotWrite(
            persistenceID: id, epoch: core.epoch,
            snapshot: SerializedSnapshot(sequenceNumber: lastSequenceNumber, state: serialized),
            keep: Actor.snapshots.keep)
        core.submit(.saveSnapshot(write), context: context) { .snapshotWritten(incarnation: $0, $1) }
    }
}

/// A snapshot is stored but the actor's ``EventSourcedActor/snapshots`` policy has no codec.
struct SnapshotWithoutCodec: Error, CustomStringConvertible {
    var description: String { "a snapshot is stored but the actor's snapshot policy has no codec to read it" }
}
