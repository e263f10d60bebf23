import Synchronization
internal import CTroupe

/// Stopping: timers cancelled, `stopped`, the instance released, family and watchers told,
/// the live-actor list left. On the actor: called only by the holder of the scheduling right.
extension ActorCell {
    func cancelTimers() {
        guard let extras, !extras.timers.isEmpty else { return }
        for key in Array(extras.timers.keys) { cancelTimer(key: key) }
    }

    /// At the end of a turn after a lease was released: stop when no ref and no message remain.
    @usableFromInline
    func checkSelfInvalidation() {
        guard let invalidation = config?.selfInvalidation, !invalidation.isReferenced else {
            flags.remove(.invalidationCheck)
            return
        }
        // A non-empty mailbox brings another turn, which checks again.
        guard CTroupe_mailbox_is_empty(mailbox), !isStopped else { return }
        flags.remove(.invalidationCheck)
        stopNow(.selfInvalidated)
    }

    /// Stops the actor now: cancels its timers, runs `stopped`, stops children, tells the
    /// parent and the watchers, leaves the live-actor list. Later envelopes are dead-lettered by the
    /// turns that pop them.
    func stopNow(_ reason: TerminationReason) {
        flags.remove(.stopRequested)
        if case .stopped = reason {} else { extrasCreatingIfNeeded.stopReason = reason }
        lifecycle.bitwiseOr(Lifecycle.stopped.rawValue, ordering: .releasing)
        cancelTimers()
        withInstance { $0.stopped(context: context) }
        if let extras {
            for child in extras.children.values { child.requestStop(.parentStopped) }
            extras.children.removeAll()
            extras.parent?.sendSystem(.childStopped(self))
            extras.parent = nil  // breaks the cycle with the parent's `children` (see CellExtras)
            for (_, watch) in extras.watching { system.removeWatcher(self, from: watch.target) }
            extras.watching.removeAll()
            if let retry = extras.retry {
                extras.retry = nil
                system.deadLetters.record(.recipientStopped, recipient: address, message: retry.message as! Message)
                retry.token?.failDelivery(.recipientStopped)
            }
        }
        releaseInstance()
        system.hooks.actorStopped(address)
        // Leaving the live-actor list: a worker running this turn from an unretained entry
        // must hold the cell itself until the turn is over (see `AnyCell.entryRetained`).
        if let worker = CTroupe_current_worker() {
            // Safety: the current-worker slot names this thread's own worker, which outlives the call (its
            // thread clears the slot before it ends).
            Unmanaged<Worker>.fromOpaque(worker)._withUnsafeGuaranteedRef { $0.retainIfRunningUnretained(self) }
        }
        system.unregister(self, reason: reason)
        config?.dedicated?.requestExit()
    }
}
