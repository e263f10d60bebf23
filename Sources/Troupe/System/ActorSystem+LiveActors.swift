internal import TroupeLocks
import Synchronization
internal import CTroupe

/// The live-actor list, death watch and delayed restarts.
extension ActorSystem {
    func register(_ cell: AnyCell) -> Bool {
        liveActors.withLock { live in
            guard isAccepting else { return false }
            live.insert(cell)
            return true
        }
    }

    /// Called by a cell's own turn when it stops: leaves the live list and tells its watchers.
    func unregister(_ cell: AnyCell, reason: TerminationReason) {
        let (remaining, watchers) = liveActors.withLock { live in
            let watchers = live.remove(cell)
            return (live.count, watchers)
        }
        LiveActors.releaseRemoved(cell)  // the caller's reference keeps the cell alive here
        if let watchers {
            let notice = Terminated(actor: cell.address, reason: reason)
            watchers.forEach { Self.tell($0, notice, about: cell) }
        }
        if remaining == 0 { everyoneStopped.notify(all: true) }
    }

    /// Registers `watcher` for `target`'s termination; tells it at once (exactly once) when
    /// the target has already terminated. Any thread.
    func addWatcher(_ watcher: LiveActors.Watcher, to target: AnyCell) {
        let added = liveActors.withLock { $0.addWatcher(watcher, to: target) }
        if !added {
            Self.tell(
                watcher, Terminated(actor: target.address, reason: target.terminationReason ?? .stopped), about: target)
        }
    }

    /// Forgets every watch `watcher` (an actor) holds on `target`. Any thread.
    func removeWatcher(_ watcher: AnyCell, from target: AnyCell) {
        liveActors.withLock { $0.removeWatches(of: watcher, on: target) }
    }

    private static func tell(_ watcher: LiveActors.Watcher, _ notice: Terminated, about target: AnyCell) {
        switch watcher {
        case .actor(let cell): cell.sendSystem(.watchedTerminated(notice, target.id))
        case .callback(let callback): callback(notice)
        }
    }

    // MARK: Delayed restarts

    /// Pauses `cell` for `delay` (a delayed restart). Returns the entry that resumes it, or
    /// nil during shutdown (restart at once instead). Called on the cell's own turn.
    func suspend(_ cell: AnyCell, for delay: Duration) -> ResumeEntry? {
        let entry = ResumeEntry(cell: cell)
        let accepted = suspended.withLock { state in
            guard state.accepting else { return false }
            state.entries[ObjectIdentifier(entry)] = entry
            return true
        }
        guard accepted else { return nil }
        timer.schedule(entry, after: delay)
        return entry
    }

    /// Whether `entry` was still pending (the first caller resumes it).
    func forgetSuspended(_ entry: ResumeEntry) -> Bool {
        suspended.withLock { $0.entries.removeValue(forKey: ObjectIdentifier(entry)) != nil }
    }

    /// Shutdown: resume every paused actor now, and pause none from now on.
    func resumeSuspendedEarly() {
        let entries = suspended.withLock { state in
            state.accepting = false
            defer { state.entries.removeAll() }
            return Array(state.entries.values)
        }
        for entry in entries {
            timer.cancel(entry)
            entry.resumeNow()
        }
    }
}
