import Synchronization

/// What ``AnyCell/tellTestMessage(_:)`` did.
enum TestMessageOutcome {
    case notInspectable
    case refused
    case told(TellOutcome)
}

extension ActorSystem {
    /// Asks the live actor whose ``ActorAddress/id`` is `id` to describe itself
    /// (``InspectableActor/inspectionDescription()``), on the actor, after the messages already
    /// in its mailbox. For operators' tools (TroupeObserver's page), like ``stopActor(id:)``.
    ///
    /// Throws ``ActorInspectionError/noSuchActor(id:)``, ``ActorInspectionError/notInspectable(type:)``,
    /// ``ActorInspectionError/stopped(id:)`` when it stops first, or
    /// ``ActorInspectionError/timedOut(id:after:)`` when it has not answered within `timeout` (a
    /// busy or suspended actor: the request stays in its mailbox and is answered to nobody).
    /// O(live actors) to find it. Any task.
    public func describeActor(id: UInt64, timeout: Duration = .seconds(2)) async throws(ActorInspectionError) -> String
    {
        guard let cell = liveCell(id: id) else { throw .noSuchActor(id: id) }
        guard cell.isInspectable else { throw .notInspectable(type: cell.definitionTypeName) }
        let outcome = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<String, ActorInspectionError>, Never>) in
            let answer = InspectionAnswer(continuation)
            let deadline = schedule(after: timeout) { _ in answer.resume(.failure(.timedOut(id: id, after: timeout))) }
            let reply = Reply<String>(onCompletion: { result in
                deadline.cancel()
                answer.resume(result.mapError { _ in .stopped(id: id) })
            })
            cell.sendSystem(.describe(reply))
        }
        return try outcome.get()
    }

    /// Tells the live actor whose ``ActorAddress/id`` is `id` the message its definition makes
    /// of `text` (``InspectableActor/testMessage(from:)``), as any sender's `tell` would: the
    /// outcome says whether it was enqueued. For operators' tools.
    ///
    /// Throws ``ActorInspectionError/noSuchActor(id:)``, ``ActorInspectionError/notInspectable(type:)``,
    /// or ``ActorInspectionError/testMessageRefused(type:)`` when the definition makes no message
    /// of the text. O(live actors) to find it. Any thread.
    @discardableResult
    public func sendTestMessage(toActor id: UInt64, text: String) throws(ActorInspectionError) -> TellOutcome {
        guard let cell = liveCell(id: id) else { throw .noSuchActor(id: id) }
        switch cell.tellTestMessage(text) {
        case .notInspectable: throw .notInspectable(type: cell.definitionTypeName)
        case .refused: throw .testMessageRefused(type: cell.definitionTypeName)
        case .told(let outcome): return outcome
        }
    }
}

/// Resumes a description's waiter once: with the actor's answer, or at its deadline, whichever
/// comes first (the other finds it resumed).
private final class InspectionAnswer: Sendable {
    private let continuation: CheckedContinuation<Result<String, ActorInspectionError>, Never>
    private let resumed = Atomic<Bool>(false)

    init(_ continuation: CheckedContinuation<Result<String, ActorInspectionError>, Never>) {
        self.continuation = continuation
    }

    func resume(_ result: Result<String, ActorInspectionError>) {
        guard !resumed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        continuation.resume(returning: result)
    }
}
