import Troupe

/// What both kinds of durable actor share: the identity and journal, the incarnation that
/// journal answers must name, the writer claim and the stash.
///
/// A class, made once per incarnation and touched only on the actor's turns: the hosts reach
/// it through ``DurableHost``'s generic lifecycle code, where a struct would be copied out of the
/// host (every field retained, then released) at each access.
final class DurableCore<Command: Sendable> {
    typealias Message = PersistentMessage<Command>

    let id: PersistenceID
    let journal: Journal
    let settings: PersistenceSettings
    /// Tells this instance's journal answers from those meant for an earlier one (the mailbox
    /// outlives a restart).
    let incarnation = UInt64.random(in: 1...UInt64.max)
    var epoch = WriterEpoch(0)
    /// The history's end (or the state's revision) as the claim saw it; the read must reach it.
    var claimedLast: Int64 = 0
    var stash = Stash<Command>()
    /// Why this instance failed, once it has: if it then stops, the stash is failed with it.
    var failure: (any Error)?
    /// Where this instance is with its recovery permit.
    var admission = DurableAdmission.none
    /// When this instance asked to recover (for ``Journal/Statistics/recoveryLatency``).
    var recoveryRequestedAt = ContinuousClock.now

    init(id: PersistenceID, journal: Journal, settings: PersistenceSettings) {
        self.id = id
        self.journal = journal
        self.settings = settings
    }

    /// Asks the journal's gate for a recovery permit; it arrives as `.admitted`.
    func requestAdmission(context: ActorContext<Message>) {
        let me = context.ref
        let incarnation = incarnation
        admission = .waiting(hurried: false)
        recoveryRequestedAt = .now
        journal.recoveryGate.request(token: incarnation, urgent: false) {
            me.tell(Message(kind: .admitted(incarnation: incarnation)))
        }
    }

    /// A command waits behind the recovery: move it ahead of recoveries nobody waits for.
    func hurryAdmission() {
        if case .waiting(hurried: false) = admission {
            journal.recoveryGate.hurry(incarnation)
            admission = .waiting(hurried: true)
        }
    }

    func admitted() { admission = .holding(since: .now) }

    /// The recovery ended (done or failed), or the actor is going: give the permit back, or
    /// the place in the queue.
    func endAdmission() {
        switch admission {
        case .none: break
        case .waiting: journal.recoveryGate.cancel(incarnation)
        case .holding(let since):
            let now = ContinuousClock.now
            journal.recoveryGate.finished(startedAt: since, now: now)
            journal.recoveryLatency.record(now - recoveryRequestedAt)
        }
        admission = .none
    }

    /// Submits `operation`; its outcome comes back as the message `wrap` makes of it.
    func submit(
        _ operation: JournalOperation, context: ActorContext<Message>,
        _ wrap: @escaping @Sendable (UInt64, Result<JournalOutcome, any Error>) -> Message.Kind
    ) {
        let me = context.ref
        let incarnation = incarnation
        journal.submit(operation) { me.tell(Message(kind: wrap(incarnation, $0))) }
    }

    /// Starts recovery: claims the writer; the outcome arrives as `.claimed`.
    func claim(context: ActorContext<Message>) {
        submit(.claimWriter(id), context: context) { .claimed(incarnation: $0, $1) }
    }

    /// Takes the claim's outcome: the epoch to write with, or the error that fails recovery.
    func claimed(_ result: Result<JournalOutcome, any Error>) throws {
        switch result {
        case .success(.claimed(let claimedEpoch, let last)):
            epoch = claimedEpoch
            claimedLast = last
        case .success(let other):
            throw PersistenceError.recoveryFailed(id, underlying: UnexpectedOutcome(outcome: other))
        case .failure(let error): throw PersistenceError.recoveryFailed(id, underlying: error)
        }
    }

    /// Reads the history (or state) off the actor with `read`; it arrives as `.recovered`.
    func read(
        context: ActorContext<Message>,
        _ read: @escaping @Sendable () async -> Result<RecoveredHistory, PersistenceError>
    ) {
        let id = id
        let incarnation = incarnation
        context.run(read) { result in
            // `read` reports its errors in its result; `run` adds only cancellation.
            let history = result.mapError { PersistenceError.recoveryFailed(id, underlying: $0) }.flatMap { $0 }
            return Message(kind: .recovered(incarnation: incarnation, history))
        }
    }

    func stashing(_ command: Command) throws {
        guard stash.count < settings.stashCapacity else {
            throw PersistenceError.stashOverflow(id, capacity: settings.stashCapacity)
        }
        stash.push(command)
    }

    /// Sends the stashed commands back to the actor: after a restart, the fresh instance
    /// handles them once recovered; after a stop, they become dead letters.
    func handBackStash(context: ActorContext<Message>) {
        while let command = stash.pop() { context.ref.tell(.command(command)) }
    }

    /// Drops the stashed commands: a ``Reply`` in one, unanswered, fails its ask with `error`
    /// (the asker learns why the actor gave up, not "no reply").
    func failStash(with error: any Error) {
        withUnansweredRepliesFailing(with: error) {
            while stash.pop() != nil {}
        }
    }

    /// The typed error for a refused or failed write.
    func writeFailure(_ result: Result<JournalOutcome, any Error>, attempted: Int64) -> PersistenceError {
        switch result {
        case .success(.fenced(let current)): .fenced(id, epoch: epoch, current: current)
        case .success(.sequenceConflict(let expected)): .sequenceConflict(id, attempted: attempted, expected: expected)
        case .success(.revisionConflict(let current)): .revisionConflict(id, expected: attempted - 1, current: current)
        case .success(let other): .storeFailed(id, underlying: UnexpectedOutcome(outcome: other))
        case .failure(let error): (error as? PersistenceError) ?? .storeFailed(id, underlying: error)
        }
    }
}

/// The store answered an operation with an outcome that belongs to another kind of operation.
struct UnexpectedOutcome: Error, CustomStringConvertible {
    let outcome: JournalOutcome
    var description: String { "the store answered with \(outcome)" }
}

/// The actor stopped or restarted before its write's outcome arrived: the events (or state)
/// may or may not be stored.
public struct StoppedDuringWrite: Error, CustomStringConvertible {
    public var description: String {
        "the actor stopped or restarted before its write's outcome arrived (the write may be stored)"
    }
}

/// Where a durable actor's incarnation is with its recovery permit (outside the generic
/// ``DurableCore``: a nested type would be generic too, its metadata looked up at each use).
enum DurableAdmission {
    case none
    /// Asked for a permit; `hurried` once a command waits.
    case waiting(hurried: Bool)
    /// Holds a permit since `since`, until the recovery ends.
    case holding(since: ContinuousClock.Instant)
}
