import Logging
import Troupe

/// Where a durable actor is in its life: waiting for a recovery permit, claiming the writer,
/// reading what is stored, running (a command is handled at once), or writing (one write in
/// flight; commands wait in the stash).
enum DurablePhase<PendingWrite> {
    case admitting
    case claiming
    case reading
    case running
    case writing(PendingWrite)
}

/// The lifecycle both kinds of durable actor share: recovery on start, the stash while
/// something is in flight, journal answers checked against the incarnation (the mailbox
/// outlives a restart, so an answer meant for the previous instance is ignored), and the
/// write in flight failed when the actor stops or restarts. A host supplies how to read, how
/// to apply what was read, how to decide commands and how to take a write's outcome.
protocol DurableHost: ActorDefinition where Message == PersistentMessage<Command> {
    associatedtype Command: Sendable
    associatedtype PendingWrite

    var core: DurableCore<Command> { get }
    var phase: DurablePhase<PendingWrite> { get set }

    /// Reads and decodes what is stored for `id`, off the actor.
    static func read(
        _ id: PersistenceID, from journal: Journal
    ) async -> Result<
        RecoveredHistory, PersistenceError
    >
    /// Takes what `read` produced; the phase becomes `running` afterwards.
    mutating func apply(_ recovered: RecoveredHistory) throws
    /// Decides `first` (if any) and the stashed commands, and may start a write.
    mutating func handleCommands(first: Command?, context: ActorContext<Message>) throws
    /// Takes the outcome of the write in flight (the phase is already `running`).
    mutating func written(
        _ pending: PendingWrite, _ result: Result<JournalOutcome, any Error>, context: ActorContext<Message>)
        throws
    /// Fails the replies waiting on `pending`.
    func fail(_ pending: PendingWrite, with error: PersistenceError)
}

extension DurableHost {
    var id: PersistenceID { core.id }

    mutating func started(context: ActorContext<Message>) { core.requestAdmission(context: context) }

    mutating func willRestart(reason: any Error, context: ActorContext<Message>) {
        core.endAdmission()
        core.handBackStash(context: context)
        failWriteInFlight()
    }

    mutating func stopped(context: ActorContext<Message>) {
        core.endAdmission()
        if let failure = core.failure {
            // Stopping because of `failure` (no restart): the stashed commands' askers learn it.
            core.failStash(with: failure)
        } else {
            core.handBackStash(context: context)
        }
        failWriteInFlight()
    }

    /// The write's outcome will reach no one: its repliers learn that it may or may not be
    /// stored (a restarted instance sees it in its recovery if it is).
    private mutating func failWriteInFlight() {
        if case .writing(let pending) = phase {
            fail(pending, with: .storeFailed(id, underlying: StoppedDuringWrite()))
            phase = .running
        }
    }

    mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        do {
            try dispatch(message, context: context)
        } catch {
            core.failure = error
            throw error
        }
    }

    private mutating func dispatch(_ message: Message, context: ActorContext<Message>) throws {
        switch message.kind {
        case .command(let command):
            if case .running = phase {
                try handleCommands(first: command, context: context)
            } else {
                try core.stashing(command)
                core.hurryAdmission()
            }
        case .admitted(let from):
            guard from == core.incarnation else { return }
            core.admitted()
            phase = .claiming
            core.claim(context: context)
        case .claimed(let from, let result):
            guard from == core.incarnation else { return }
            do { try core.claimed(result) } catch {
                core.endAdmission()
                throw error
            }
            phase = .reading
            let journal = core.journal
            let id = id
            core.read(context: context) { await Self.read(id, from: journal) }
        case .recovered(let from, let result):
            guard from == core.incarnation else { return }
            core.endAdmission()
            let recovered = try result.get()
            guard recovered.lastSequenceNumber >= core.claimedLast else {
                // The claim saw more than the read: the store lost or hid some of it.
                throw PersistenceError.sequenceConflict(
                    id, attempted: recovered.lastSequenceNumber + 1, expected: core.claimedLast + 1)
            }
            try apply(recovered)
            phase = .running
            try handleCommands(first: nil, context: context)
        case .written(let from, let result):
            guard from == core.incarnation else { return }
            guard case .writing(let pending) = phase else {
                preconditionFailure("a write's outcome arrived with no write in flight (\(phase))")
            }
            phase = .running
            try written(pending, result, context: context)
        case .snapshotWritten(let from, let result):
            guard from == core.incarnation else { return }
            switch result {
            case .success(.written): break
            case .success(let refused):
                context.logger.warning("snapshot refused: \(refused)", metadata: ["persistence-id": "\(id)"])
            case .failure(let error):
                context.logger.warning("snapshot failed: \(error)", metadata: ["persistence-id": "\(id)"])
            }
        }
    }
}
