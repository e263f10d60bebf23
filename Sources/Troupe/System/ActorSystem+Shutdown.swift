internal import TroupeLocks
import Synchronization
internal import CTroupe

/// Shutdown: draining and stopping every actor, then the threads, with or without a deadline.
extension ActorSystem {
    /// Shuts down gracefully: stops accepting new messages (they become dead letters with
    /// ``DeadLetterReason/systemShutdown``), lets every actor handle what was already in its
    /// mailbox, stops every actor (`stopped` hooks run), then joins the worker threads. Every
    /// message sent is either handled or dead-lettered. Calling it again waits for the first.
    /// Waits as long as the slowest handler takes; ``shutdown(deadline:)`` bounds the wait.
    ///
    /// A system is not shut down by being released: its worker threads hold what they run on,
    /// so a system dropped without a shutdown keeps its (parked) threads until the process ends.
    public func shutdown() async {
        _ = await shutdown(until: nil)
    }

    /// ``shutdown()`` that returns by `deadline` at the latest, with a report: complete, or
    /// listing the actors whose handler had not returned (and those queued behind them). Those
    /// actors handle no further message; what they hold is dead-lettered as soon as their
    /// handler returns, and the shutdown then finishes by itself. See ``ShutdownReport``.
    public func shutdown(deadline: Duration) async -> ShutdownReport {
        await shutdown(until: MonotonicDeadline.after(deadline))
    }

    private func shutdown(until deadline: Int64?) async -> ShutdownReport {
        // The waiting is blocking; do it on a thread of its own, off the cooperative pool. The
        // thread lets go of the system before it resumes the caller, so a caller that drops its
        // last reference after `await shutdown()` frees the system there and then.
        let held = Unmanaged.passRetained(self)
        // Safety: resumed exactly once, by the shutdown thread when `shutdownBlocking` returns.
        return await withUnsafeContinuation { (continuation: UnsafeContinuation<ShutdownReport, Never>) in
            Threads.detach(
                Threads.start(name: "\(configuration.name)-shutdown") {
                    let report = Self.shutDown(held, until: deadline)
                    continuation.resume(returning: report)
                })
        }
    }

    /// Shuts `held` down and gives back its retain before returning (its local ends here).
    private static func shutDown(_ held: Unmanaged<ActorSystem>, until deadline: Int64?) -> ShutdownReport {
        // Safety: `held` carries the one retain `shutdown(until:)` took for this thread.
        let system = held.takeRetainedValue()
        return system.shutdownBlocking(until: deadline)
    }

    /// ``shutdown()`` for synchronous callers. Not on a worker thread (it would wait for itself).
    public func shutdownBlocking() {
        _ = shutdownBlocking(until: nil)
    }

    /// ``shutdown(deadline:)`` for synchronous callers. Not on a worker thread.
    public func shutdownBlocking(deadline: Duration) -> ShutdownReport {
        shutdownBlocking(until: MonotonicDeadline.after(deadline))
    }

    /// `deadline`: monotonic nanoseconds, or nil to wait as long as it takes.
    private func shutdownBlocking(until deadline: Int64?) -> ShutdownReport {
        if CTroupe_current_worker() != nil {
            fatalError(
                "shutdownBlocking() called on a Troupe worker thread; call it from outside the actors (or use `await system.shutdown()` from a task)"
            )
        }
        if let inline = InlineTurns.open {
            // It waits for every actor, the ones this thread's scope holds too.
            if inline.runningTurn {
                fatalError(
                    "shutdownBlocking() called by a handler running in runningTurnsHere; call it from outside the actors"
                )
            }
            inline.handOffCaptured()
        }
        guard
            shutdownStarted.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged
        else {
            // Another caller runs the shutdown: wait for it to finish (or for the deadline).
            if waitForStop(until: deadline, { phase.is(.terminated) }) {
                return ShutdownReport(unstopped: [])
            }
            return ShutdownReport(unstopped: abandonLiveActors())
        }
        // The fast path closes first: a sender that still took it did so before the phase changed.
        fastSendOpen.store(false, ordering: .sequentiallyConsistent)
        phase.advance(to: .shuttingDown)
        // Every live actor handles its pending messages, then the stop.
        for cell in liveCells() { cell.requestStop(.systemShutdown) }
        resumeSuspendedEarly()
        if let manualDriver {
            // Nobody else runs a manual system's actors: drain it here, in order, moving virtual
            // time to the next deadline while actors remain (a handler's ask waiting for its
            // timeout, a timer the actor waits for).
            _ = manualDriver.drainInOrder()
            var rounds = 0
            while liveActorCount > 0, rounds < 10_000, let next = timer.nextDeadline {
                _ = timer.advanceVirtualTime(to: next)
                _ = manualDriver.drainInOrder()
                rounds += 1
            }
        }
        if waitForStop(until: deadline, { liveActorCount == 0 }) {
            finishShutdown()
            return ShutdownReport(unstopped: [])
        }
        // The deadline passed with handlers still running: report them, let them handle
        // nothing more, and finish later on a thread that keeps the system (and so the
        // threads' scheduler) alive until then.
        let unstopped = abandonLiveActors()
        Threads.detach(
            Threads.start(name: "\(configuration.name)-shutdown") { [self] in
                _ = waitForStop(until: nil) { liveActorCount == 0 }
                finishShutdown()
            })
        logger.warning("shutdown deadline passed", metadata: ["unstopped": "\(unstopped.map(\.description))"])
        return ShutdownReport(unstopped: unstopped)
    }

    /// The live cell at `address`, named, if there is one; the address is compared, never
    /// dereferenced, and the cell is read under the lock that keeps it alive.
    func findLiveCell(_ address: UInt) -> (address: ActorAddress, messageType: String, isSwiftJob: Bool)? {
        liveActors.withLock { live in
            // Safety: identity only: the address is compared, never dereferenced.
            live.first { UInt(bitPattern: Unmanaged.passUnretained($0).toOpaque()) == address }
                .map { ($0.address, $0.messageTypeName, false) }
        }
    }

    func liveCells() -> [AnyCell] {
        liveActors.withLock { $0.cells }
    }

    /// Marks every live actor abandoned (its remaining user messages are dead-lettered instead
    /// of handled) and describes it. Idempotent.
    private func abandonLiveActors() -> [ShutdownReport.UnstoppedActor] {
        liveCells().map { cell in
            cell.lifecycle.bitwiseOr(Lifecycle.abandoned.rawValue, ordering: .releasing)
            let depth = CTroupe_mailbox_depth(cell.mailbox)
            return ShutdownReport.UnstoppedActor(
                address: cell.address, pendingMessages: depth < 0 ? nil : Int(depth),
                mailboxWasEmpty: CTroupe_mailbox_is_empty(cell.mailbox))
        }
    }

    /// Every actor has stopped: join the threads, stop the timer, let go of observers.
    private func finishShutdown() {
        scheduler.stopAndJoin()
        timer.stop()
        introspector.close()
        phase.advance(to: .terminated)
        providers.close()
        // Observers often capture the system; dropping them breaks that cycle, so the system
        // is freed with its last user reference.
        hooks.removeAll()
        deadLetters.removeAllObservers()
        taskExecutorSlot.withLock { $0 = nil }
        everyoneStopped.notify(all: true)
    }

    /// Waits until `condition` holds (re-checked whenever the last actor stops or shutdown
    /// finishes) or `deadline` passes; returns whether it holds.
    private func waitForStop(until deadline: Int64?, _ condition: () -> Bool) -> Bool {
        while true {
            let epoch = everyoneStopped.prepareWait()
            if condition() {
                everyoneStopped.cancelWait()
                return true
            }
            var timeout: Int64 = -1
            if let deadline {
                timeout = deadline - CTroupe_monotonic_ns()
                if timeout <= 0 {
                    everyoneStopped.cancelWait()
                    return condition()
                }
            }
            everyoneStopped.wait(epoch: epoch, timeoutNanoseconds: timeout)
        }
    }
}
