import Troupe

/// Runs a ``DurableStateActor``: the claim, reading the state, saves through the journal.
/// Its lifecycle is `DurableHost`'s, with one save in flight at most.
struct DurableStateHost<Actor: DurableStateActor>: DurableHost {
    typealias Message = PersistentMessage<Actor.Command>
    typealias Command = Actor.Command

    let actor: Actor
    let core: DurableCore<Actor.Command>
    var phase = DurablePhase<PendingSave>.admitting
    var state: Actor.State
    var revision: Int64 = 0

    init(actor: Actor, journal: Journal, settings: PersistenceSettings) {
        self.actor = actor
        core = DurableCore(id: actor.persistenceID, journal: journal, settings: settings)
        state = actor.emptyState
    }

    mutating func apply(_ recovered: RecoveredHistory) throws {
        state = (recovered.state as? Actor.State) ?? actor.emptyState
        revision = recovered.lastSequenceNumber
    }

    static func read(
        _ id: PersistenceID, from journal: Journal
    ) async -> Result<
        RecoveredHistory, PersistenceError
    > {
        do {
            guard let stored = try await journal.store.durableState(of: id) else {
                return .success(RecoveredHistory(state: nil, events: [], lastSequenceNumber: 0))
            }
            do {
                let state = try Actor.stateCodec.decode(stored.state)
                return .success(RecoveredHistory(state: state, events: [], lastSequenceNumber: stored.revision))
            } catch {
                return .failure(.decodingFailed(id, sequenceNumber: stored.revision, underlying: error))
            }
        } catch {
            return .failure(.recoveryFailed(id, underlying: error))
        }
    }

    /// The commands of one save: their effects, each with the state right after it, and the
    /// state to store (the last one decided).
    struct PendingSave {
        var effects: [(effect: StateEffect<Actor>, state: Actor.State)] = []
        var newState: Actor.State?
        var stops = false
    }

    /// Handles `first` (if any) and then the stash, while nothing is in flight: commands that
    /// arrived during the previous save are decided together and stored as one new revision.
    mutating func handleCommands(first: Actor.Command?, context: ActorContext<Message>) throws {
        guard case .running = phase else { return }
        var working = state
        var pending = PendingSave()
        var next = first ?? core.stash.pop()
        while let command = next {
            let effect: StateEffect<Actor>
            do {
                effect = try actor.handle(
                    command, state: working,
                    context: DurableStateContext(actor: context, persistenceID: id, revision: revision))
            } catch {
                try submit(pending, context: context)
                throw error
            }
            if let newState = effect.newState {
                working = newState
                pending.newState = newState
            }
            if pending.newState == nil {
                effect.succeed(with: working)
            } else {
                pending.effects.append((effect, working))
            }
            if effect.stops {
                pending.stops = true
                if pending.newState == nil {
                    context.stop()
                    return
                }
                break
            }
            if pending.effects.count >= core.settings.maxEventsPerWrite { break }
            next = core.stash.pop()
        }
        try submit(pending, context: context)
    }

    private mutating func submit(_ pending: PendingSave, context: ActorContext<Message>) throws {
        guard let newState = pending.newState else { return }
        let serialized: SerializedEvent
        do { serialized = try Actor.stateCodec.encode(newState) } catch {
            let failure = PersistenceError.storeFailed(id, underlying: error)
            for (effect, _) in pending.effects { effect.fail(failure) }
            throw failure
        }
        phase = .writing(pending)
        let write = StateWrite(persistenceID: id, epoch: core.epoch, expectedRevision: revision, state: serialized)
        core.submit(.saveState(write), context: context) { .written(incarnation: $0, $1) }
    }

    func fail(_ pending: PendingSave, with error: PersistenceError) {
        for (effect, _) in pending.effects { effect.fail(error) }
    }

    mutating func written(
        _ pending: PendingSave, _ result: Result<JournalOutcome, any Error>, context: ActorContext<Message>
    )
        throws
    {
        guard let newState = pending.newState else { preconditionFailure("a save in flight without a state") }
        guard case .success(.written) = result else {
            let failure = core.writeFailure(result, attempted: revision + 1)
            fail(pending, with: failure)
            throw failure
        }
        state = newState
        revision += 1
        for (effect, state) in pending.effects { effect.succeed(with: state) }
        if pending.stops {
            context.stop()
            return
        }
        try handleCommands(first: nil, context: context)
    }
}
