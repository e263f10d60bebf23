internal import CTroupe

/// The three ways to wait for an ask, shared by ``ActorRef`` and ``ActorPool``: they differ only
/// in `send`, which delivers the request built around the ask's state (and arms its timeout).
@usableFromInline
enum Asking {
    /// Suspends until the ask completes (answer, error, timeout, drop, failed delivery, or the
    /// awaiting task's cancellation). Inlinable, like ``callback(_:timeout:onReply:send:)``:
    /// unspecialised, an ask from a task looked up the metadata of `Result`, `AskState` and
    /// `Reply` for its `Value`, about 1,650 instructions per ask.
    @inlinable
    nonisolated(nonsending)
        static func await<Value: Sendable>(
            _ system: ActorSystem, timeout: Duration?,
            send: (AskState<Value>) -> Void
        ) async throws(AskError) -> Value
    {
        // A task cancelled before the ask sends nothing.
        if Task.isCancelled { throw .cancelled }
        let state = AskState<Value>(limit: system.askLimit(timeout))
        let result: Result<Value, AskError> = await withTaskCancellationHandler {
            // Safety: resumed exactly once: `install` stores it as the waiter, and only the winner of
            // `completed` (answer, timeout, failure, `cancel`, or `install` seeing a cancellation) resumes it.
            await withUnsafeContinuation { continuation in
                if state.install(continuation) {
                    send(state)
                    // A manual system (tests) has no worker to answer: drive it here.
                    if _slowPath(system.isManual) { system.driveManually(until: state) }
                }
            }
        } onCancel: {
            // Ends the ask at once; the request, if sent, stays sent and its late answer is dropped.
            state.cancel()
        }
        state.observeCompletion()
        return try result.get()
    }

    /// An ask of one actor, `target`, from a task: as ``await(_:timeout:send:)``, but when the
    /// task runs on one of the system's workers and `target` is idle, the asking thread runs
    /// the target's turn in place (``HandOff``), and an answer given there returns at once,
    /// without suspending the task or arming the ask's timer. `send` only sends (it does not
    /// arm the timer: this function does, when the ask must wait).
    ///
    /// The ask's time limit starts when the task starts waiting: a turn run in place is this
    /// thread's own work, which no timer could interrupt.
    @inlinable
    nonisolated(nonsending)
        static func await<Value: Sendable>(
            _ system: ActorSystem, timeout: Duration?, handingOffTo target: AnyCell,
            send: (AskState<Value>) -> Void
        ) async throws(AskError) -> Value
    {
        guard AskStateBase.canDeposit(Result<Value, AskError>.self), let worker = HandOff.prepare(target) else {
            return try await Self.await(system, timeout: timeout) { state in
                system.timer.armTimeout(of: state)
                send(state)
            }
        }
        if Task.isCancelled {
            HandOff.finish(worker)
            throw .cancelled
        }
        let state = AskState<Value>(limit: system.askLimit(timeout))
        state.beginHandOff()
        send(state)
        HandOff.finish(worker)
        if let result = state.takeDepositedResult() { return try result.get() }
        system.timer.armTimeout(of: state)
        let result: Result<Value, AskError> = await withTaskCancellationHandler {
            // Safety: resumed exactly once: the task's `waiting` CAS wins and the completer resumes the parked
            // word, or a completer's deposit won and `waitAfterHandOff` resumes it here with the result.
            await withUnsafeContinuation { continuation in state.waitAfterHandOff(continuation) }
        } onCancel: {
            state.cancel()
        }
        state.observeCompletion()
        return try result.get()
    }

    /// Calls `onReply` exactly once, on the thread that completes the ask. Inlinable: the ask
    /// state is created by code specialised for `Value` in the caller's module, so no generic
    /// metadata is looked up per ask (unspecialised, an actor's ask paid about 2,500
    /// instructions in the runtime's metadata caches).
    @inlinable
    static func callback<Value: Sendable>(
        _ system: ActorSystem, timeout: Duration?,
        onReply: @escaping @Sendable (Result<Value, AskError>) -> Void,
        send: (AskState<Value>) -> Void
    ) {
        send(AskState<Value>(limit: system.askLimit(timeout), callback: onReply))
    }

    /// Blocks the calling thread. Refuses where waiting could deadlock: on a shared worker
    /// (the answer may need that very worker), and on a dedicated actor's thread when that
    /// actor is among `targets` (it would wait for itself). A dedicated actor may block on
    /// other actors: that is what its thread is for.
    static func blocking<Value: Sendable>(
        _ system: ActorSystem, timeout: Duration?, targets: (AnyCell) -> Bool,
        send: (AskState<Value>) -> Void
    ) throws(AskError) -> Value {
        if let raw = CTroupe_current_worker() {
            // Safety: the current-worker slot names this thread's own worker, which outlives the call (its
            // thread clears the slot before it ends).
            let refused = Unmanaged<Worker>.fromOpaque(raw)._withUnsafeGuaranteedRef { worker in
                guard !worker.isShared, let served = worker.servedCell else { return true }
                return targets(served)
            }
            if refused { throw .blockingOnWorkerThread }
        } else if let inline = InlineTurns.open {
            // A handler running in an inline-turns scope is a turn like a worker's; outside
            // one, the scope's captured cells go to the workers before this thread waits.
            if inline.runningTurn { throw .blockingOnWorkerThread }
            inline.handOffCaptured()
        }
        let parker = ThreadParker.current
        parker.reset()
        var answer: Result<Value, AskError>? = nil
        // Safety: the pointer outlives its one use: the callback writes through it once, before `wake`,
        // and this closure returns only after `wait` saw that wake (the completed ask drops the callback).
        withUnsafeMutablePointer(to: &answer) { pointer in
            let slot = AnswerSlot(pointer: pointer)
            callback(
                system, timeout: timeout,
                onReply: { result in
                    slot.pointer.pointee = result
                    parker.wake()
                }, send: send)
            parker.wait()
        }
        return try answer!.get()
    }
}
