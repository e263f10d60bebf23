/// The actors of a system that were spawned and have not stopped yet, and who watches them:
/// an intrusive doubly linked list through the cells (no allocation per spawn) and the
/// watchers by target.
///
/// Thread-safety: none of its own; the system holds it in a `Locked` and every method runs
/// under that lock.
struct LiveActors {
    /// Who waits for an actor's termination.
    enum Watcher {
        /// An actor: it gets a `.watchedTerminated` system message, mapped to its own message type.
        case actor(AnyCell)
        /// A callback (``ActorRef/whenTerminated(_:)``), called on the thread that stops the actor.
        case callback(@Sendable (Terminated) -> Void)
    }

    /// A target's watchers: one inline (the common case, such as a virtual actor's region or a
    /// single supervisor), saving each watched actor an array (56 bytes, measured with DHAT on
    /// `troupe-bench entities`), or several.
    enum Watchers {
        case one(Watcher)
        case many([Watcher])

        mutating func append(_ watcher: Watcher) {
            switch self {
            case .one(let first): self = .many([first, watcher])
            case .many(var list):
                self = .many([])  // the array is uniquely referenced again, so it grows in place
                list.append(watcher)
                self = .many(list)
            }
        }

        func forEach(_ body: (Watcher) -> Void) {
            switch self {
            case .one(let watcher): body(watcher)
            case .many(let list): for watcher in list { body(watcher) }
            }
        }

        /// Without the watchers for which `isRemoved` holds; nil when none is left.
        func removingAll(where isRemoved: (Watcher) -> Bool) -> Watchers? {
            switch self {
            case .one(let watcher): return isRemoved(watcher) ? nil : self
            case .many(var list):
                list.removeAll(where: isRemoved)
                return list.isEmpty ? nil : .many(list)
            }
        }
    }

    /// The most recently spawned member. Every member carries one retain taken by `insert`
    /// and given back by `remove`; the links themselves are unretained, so that a spawn and a
    /// stop each cost one reference-count operation here rather than four.
    private var head: Unmanaged<AnyCell>?
    private(set) var count = 0
    /// Watchers by target cell. An entry is removed, and its watchers told, exactly once:
    /// when the target leaves the list (under the same lock).
    private var watchers: [ObjectIdentifier: Watchers] = [:]

    func contains(_ cell: AnyCell) -> Bool {
        // Safety: identity only: the two addresses are compared, never dereferenced.
        cell.livePrevious != nil || head?.toOpaque() == Unmanaged.passUnretained(cell).toOpaque()
    }

    /// Every live cell, most recently spawned first.
    var cells: [AnyCell] {
        var cells: [AnyCell] = []
        // Safety: every linked member holds the retain `insert` took, and the list is only read under
        // the system's `liveActors` lock, so each cell reached here is alive.
        var cursor = head
        while let cell = cursor {
            cells.append(cell.takeUnretainedValue())
            cursor = cell._withUnsafeGuaranteedRef { $0.liveNext }
        }
        return cells
    }

    /// The first live cell (most recent first) that satisfies `predicate`, without building
    /// the list of all of them.
    func first(where predicate: (AnyCell) -> Bool) -> AnyCell? {
        // Safety: every linked member holds the retain `insert` took, and the list is only read under
        // the system's `liveActors` lock, so each cell reached here is alive.
        var cursor = head
        while let cell = cursor {
            let candidate = cell.takeUnretainedValue()
            if predicate(candidate) { return candidate }
            cursor = cell._withUnsafeGuaranteedRef { $0.liveNext }
        }
        return nil
    }

    /// Calls `body` with at most `limit` members, most recent first, starting at `start` (a
    /// member; nil: the head). Returns the member after the last one visited, or nil at the
    /// end. Lets a long walk (a snapshot's top actors over a million) give the lock up between
    /// stretches: the caller keeps the returned member alive and checks with ``contains(_:)``
    /// that it is still a member before going on from it.
    func visit(from start: AnyCell?, limit: Int, _ body: (AnyCell) -> Void) -> AnyCell? {
        // Safety: every linked member holds the retain `insert` took, and the list is only read under
        // the system's `liveActors` lock, so each cell reached here is alive.
        var cursor = start.map { Unmanaged.passUnretained($0) } ?? head
        var visited = 0
        while let cell = cursor, visited < limit {
            cell._withUnsafeGuaranteedRef { body($0) }
            cursor = cell._withUnsafeGuaranteedRef { $0.liveNext }
            visited += 1
        }
        return cursor?.takeUnretainedValue()
    }

    // Safety (every `_withUnsafeGuaranteedRef` and `takeUnretainedValue` here): a member is held
    // by the retain `insert` took until `remove` gives it back, and the list is only touched
    // under the system's `liveActors` lock, so every linked cell is alive while it is read.
    mutating func insert(_ cell: AnyCell) {
        // Safety: the membership's retain: `remove` hands it to the caller, who gives it back once with
        // `releaseRemoved` (`ActorSystem.unregister`).
        let member = Unmanaged.passRetained(cell)
        cell.liveNext = head
        head?._withUnsafeGuaranteedRef { $0.livePrevious = member }
        head = member
        count += 1
    }

    /// Unlinks `cell`; returns its watchers (who must now be told), if any. The list's retain
    /// of the cell passes to the caller, who releases it once outside the lock
    /// (``releaseRemoved(_:)``): the last release runs the cell's deinit.
    mutating func remove(_ cell: AnyCell) -> Watchers? {
        let next = cell.liveNext
        let previous = cell.livePrevious
        if let previous {
            previous._withUnsafeGuaranteedRef { $0.liveNext = next }
        } else {
            head = next
        }
        next?._withUnsafeGuaranteedRef { $0.livePrevious = previous }
        cell.liveNext = nil
        cell.livePrevious = nil
        count -= 1
        return watchers.isEmpty ? nil : watchers.removeValue(forKey: ObjectIdentifier(cell))
    }

    /// Gives back the retain a removed member carried. Outside the lock.
    static func releaseRemoved(_ cell: AnyCell) {
        // Safety: balances `insert`'s retain, which `remove` handed to the caller; the caller's own
        // reference keeps the object alive through this call.
        Unmanaged.passUnretained(cell).release()
    }

    /// Adds `watcher` for `target`; false when the target is no longer live (the caller tells
    /// the watcher at once instead).
    mutating func addWatcher(_ watcher: Watcher, to target: AnyCell) -> Bool {
        guard contains(target) else { return false }
        let key = ObjectIdentifier(target)
        if watchers[key]?.append(watcher) == nil { watchers[key] = .one(watcher) }
        return true
    }

    /// Forgets every watch the actor `watcher` holds on `target`.
    mutating func removeWatches(of watcher: AnyCell, on target: AnyCell) {
        let key = ObjectIdentifier(target)
        guard let list = watchers[key] else { return }
        watchers[key] = list.removingAll { if case .actor(let cell) = $0 { cell === watcher } else { false } }
    }
}
