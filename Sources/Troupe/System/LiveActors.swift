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

    private var head: AnyCell?
    private(set) var count = 0
    /// Watchers by target cell. An entry is removed, and its watchers told, exactly once:
    /// when the target leaves the list (under the same lock).
    private var watchers: [ObjectIdentifier: [Watcher]] = [:]

    func contains(_ cell: AnyCell) -> Bool { cell.livePrevious != nil || head === cell }

    /// Every live cell, most recently spawned first.
    var cells: [AnyCell] {
        var cells: [AnyCell] = []
        var cursor = head
        while let cell = cursor {
            cells.append(cell)
            cursor = cell.liveNext
        }
        return cells
    }

    mutating func insert(_ cell: AnyCell) {
        cell.liveNext = head
        head?.livePrevious = cell
        head = cell
        count += 1
    }

    /// Unlinks `cell`; returns its watchers (who must now be told), if any.
    mutating func remove(_ cell: AnyCell) -> [Watcher]? {
        if let previous = cell.livePrevious { previous.liveNext = cell.liveNext } else { head = cell.liveNext }
        cell.liveNext?.livePrevious = cell.livePrevious
        cell.liveNext = nil
        cell.livePrevious = nil
        count -= 1
        return watchers.isEmpty ? nil : watchers.removeValue(forKey: ObjectIdentifier(cell))
    }

    /// Adds `watcher` for `target`; false when the target is no longer live (the caller tells
    /// the watcher at once instead).
    mutating func addWatcher(_ watcher: Watcher, to target: AnyCell) -> Bool {
        guard contains(target) else { return false }
        watchers[ObjectIdentifier(target), default: []].append(watcher)
        return true
    }

    /// Forgets every watch the actor `watcher` holds on `target`.
    mutating func removeWatches(of watcher: AnyCell, on target: AnyCell) {
        let key = ObjectIdentifier(target)
        guard var list = watchers[key] else { return }
        list.removeAll { if case .actor(let cell) = $0 { cell === watcher } else { false } }
        watchers[key] = list.isEmpty ? nil : list
    }
}
