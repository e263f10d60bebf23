internal import CTroupe

/// The actors of a system that were spawned and have not stopped yet, and who watches them:
/// an array of the cells in the order they joined (a stopped one leaves a hole, and the holes
/// are squeezed out once they outnumber the members), each cell knowing its place, and the
/// watchers by target.
///
/// An array rather than a list through the cells, for the walks over every actor (a snapshot,
/// TroupeObserver's top actors): the cells' addresses are read one after another, so their
/// counters load in parallel, where a list makes each cell's address wait for the previous
/// cell (10^6 cells here: 2.5 ms through an array of pointers, 11.5 ms through a list; see
/// `troupe-bench observer`). It costs 8 bytes per actor, and a spawn and a stop no longer touch
/// a neighbouring cell.
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

    /// The members, oldest first, at places below `end`, with nil for the holes that stopped
    /// ones left (the places from `end` on are never read). Every member carries one retain taken by `insert` and
    /// given back by `releaseRemoved`; a cell's `liveIndex` is its place here.
    private let slots = UnsafeCellSlots()
    /// The places in use: the newest member's, plus one.
    private(set) var end = 0
    /// The nils below `end`.
    private var holes = 0
    private(set) var count = 0
    /// Counts the times `slots` was squeezed (its members moved to other places): a walk that
    /// gave the lock up goes on from its place only when this has not changed.
    private(set) var generation = 0
    /// Watchers by target cell. An entry is removed, and its watchers told, exactly once:
    /// when the target leaves the list (under the same lock).
    private var watchers: [ObjectIdentifier: Watchers] = [:]

    func contains(_ cell: AnyCell) -> Bool {
        cell.liveIndex >= 0
    }

    /// Every live cell, most recently spawned first.
    var cells: [AnyCell] {
        var cells: [AnyCell] = []
        cells.reserveCapacity(count)
        _ = visit(below: end, limit: .max) { cells.append($0) }
        return cells
    }

    /// The first live cell (most recent first) that satisfies `predicate`, without building
    /// the list of all of them.
    func first(where predicate: (AnyCell) -> Bool) -> AnyCell? {
        var found: AnyCell?
        var place = end
        while found == nil, place > 0 {
            place = visit(below: place, limit: 4096) { if found == nil, predicate($0) { found = $0 } }
        }
        return found
    }

    /// Calls `body` with the members at places below `end`, most recent first, at most
    /// `limit` of them. Returns the place to go on from (0: the walk is over). Lets a long walk
    /// (a snapshot's top actors over a million) give the lock up between stretches: the
    /// caller goes on from the returned place (or the ``end``, if that is lower now: the
    /// newest members left) if ``generation`` is what it was. Members that joined meanwhile
    /// may be visited or not; every other member is visited once.
    ///
    /// With `prefetching`, the byte at that offset in each cell is prefetched 16 cells ahead:
    /// what `body` reads of a cell then loads while it handles the cells before (the walk is
    /// bound by memory latency at 10^6 actors, not by its instructions).
    func visit(below end: Int, limit: Int, prefetching offset: Int? = nil, _ body: (AnyCell) -> Void) -> Int {
        precondition(end <= self.end, "LiveActors.visit: place \(end) is past the end (\(self.end))")
        var place = end
        var visited = 0
        let members = slots
        while place > 0, visited < limit {
            place -= 1
            if let offset, place >= Self.prefetchDistance, let ahead = members[place - Self.prefetchDistance] {
                // Safety: a hint only: the address is not dereferenced by this code.
                CTroupe_prefetch(ahead.toOpaque() + offset)
            }
            // Safety: every member holds the retain `insert` took, and the slots are only read
            // under the system's `liveActors` lock, so each cell reached here is alive.
            guard let cell = members[place] else { continue }
            cell._withUnsafeGuaranteedRef { body($0) }
            visited += 1
        }
        return place
    }

    /// How many cells ahead `visit` prefetches.
    private static let prefetchDistance = 32

    @inline(__always)
    mutating func insert(_ cell: AnyCell) {
        assert(cell.liveIndex < 0, "actor #\(cell.id) joined the live actors twice")
        // Safety: the membership's retain: `remove` hands it to the caller, who gives it back once with
        // `releaseRemoved` (`ActorSystem.unregister`).
        let member = Unmanaged.passRetained(cell)
        if end == slots.capacity {
            requireValidUse(end < Int(Int32.max), "more than \(Int32.max) live actors in one system")
            slots.grow()
        }
        cell.liveIndex = Int32(truncatingIfNeeded: end)
        slots[end] = member
        end += 1
        count += 1
    }

    /// Takes `cell` out; returns its watchers (who must now be told), if any. The list's
    /// retain of the cell passes to the caller, who releases it once outside the lock
    /// (``releaseRemoved(_:)``): the last release runs the cell's deinit.
    mutating func remove(_ cell: AnyCell) -> Watchers? {
        let place = Int(cell.liveIndex)
        precondition(place >= 0, "actor #\(cell.id) left the live actors without being one")
        assert(
            slots[place]?.toOpaque() == Unmanaged.passUnretained(cell).toOpaque(),
            "actor #\(cell.id) is not at its place \(place) in the live actors")
        cell.liveIndex = -1
        count -= 1
        if place == end - 1 {
            // The newest left: the end comes down over it and the holes before it, so that
            // actors that come and go (a spawn and a stop each) leave no holes.
            end = place
            while end > 0, slots[end - 1] == nil {
                end -= 1
                holes -= 1
            }
            if slots.capacity > 1024 && end < slots.capacity / 4 { slots.shrink(keeping: end) }
        } else {
            slots[place] = nil
            holes += 1
            if holes > 1024 && holes > count { squeeze() }
        }
        assert(holes >= 0 && count + holes == end, "live actors: \(count) members and \(holes) holes in \(end) places")
        return watchers.isEmpty ? nil : watchers.removeValue(forKey: ObjectIdentifier(cell))
    }

    /// Moves every member down over the holes, keeping their order; amortised over the stops
    /// that made more holes than members.
    @inline(never)
    private mutating func squeeze() {
        // The members before the first hole stay where they are.
        var kept = 0
        while kept < end, slots[kept] != nil { kept += 1 }
        for place in kept..<end {
            guard let member = slots[place] else { continue }
            member._withUnsafeGuaranteedRef { $0.liveIndex = Int32(truncatingIfNeeded: kept) }
            slots[kept] = member
            kept += 1
        }
        end = kept
        holes = 0
        generation &+= 1
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
