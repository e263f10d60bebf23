import Synchronization
internal import CTroupe

extension ActorSystem {
    /// A snapshot like ``snapshot()`` whose ``SystemSnapshot/actors`` are only the first `limit`
    /// live actors by `ranking`, in that order, among those whose name, type or address as shown
    /// (`name#ID`) contains `search` (ignoring ASCII case; empty: every actor), or, for a search
    /// `parent:#ID`, among the children of actor ID (see ``ActorSnapshot/parentID``), or, for
    /// `id:#ID`, the one actor whose id is ID.
    /// ``SystemSnapshot/matchingActorCount`` says how many matched. For views of large systems (TroupeObserver's page, a debug
    /// endpoint): it reads a few counters of each actor and makes a full description only of
    /// the ones it returns, where ``snapshot()`` describes every actor.
    ///
    /// The walk over the live actors gives the system's actor list up every 4,096 actors, so
    /// spawns and stops wait at most that long for it (about 0.02 ms here); actors spawned
    /// meanwhile may be left out. O(live actors ×
    /// log `limit`). Any thread.
    public func snapshot(
        topActors limit: Int, by ranking: ActorRanking, matching search: String = ""
    )
        -> SystemSnapshot
    {
        requireValidUse(limit >= 0, "snapshot(topActors:): limit \(limit) is negative; pass 0 or more")
        let workers = workerReads()
        if limit == 0 && search.isEmpty {
            // Only the system's part: no walk over the actors.
            return makeSnapshot(
                actors: [], live: liveActorCount, matching: liveActorCount, workers: workers, alsoRunning: [])
        }
        let found = topCells(limit, ranking: ranking, search: search, running: workers.runningIdentities)
        return makeSnapshot(
            actors: found.cells, live: found.live, matching: found.matching, workers: workers,
            alsoRunning: found.running)
    }

    /// The live actors `snapshot(topActors:…)` returns, strongly held, best first, and how many
    /// matched the search; and the cells the workers ran when they were read (`running`, by
    /// identity), so that the snapshot can name them.
    private func topCells(
        _ limit: Int, ranking: ActorRanking, search: String, running: Set<UInt>
    ) -> (cells: [AnyCell], live: Int, matching: Int, running: [AnyCell]) {
        var ranked = RankedCells(limit: limit, ranking: ranking)
        var filter = ActorSearch(search)
        let matchesEveryone = search.isEmpty
        // At most one per worker: a linear scan beats hashing each of a million cells.
        let running = Array(running)
        var runningCells: [AnyCell] = []
        var matching = 0
        var live = 0
        // Where to go on from after giving the lock up (0 with `done`: the walk is over), and
        // the list's generation then: members move only when it changes.
        var place = -1
        var generation = 0
        var restarts = 0
        var done = false
        while !done {
            liveActors.withLock { list in
                if place < 0 || list.generation != generation {
                    if place >= 0 {
                        // The members moved meanwhile (stops squeezed the list): start again
                        // from the newest (after three such restarts, in one stretch under the lock).
                        ranked.removeAll()
                        matching = 0
                        live = 0
                        runningCells.removeAll()
                        restarts += 1
                    }
                    place = list.end
                    generation = list.generation
                }
                // The newest members leaving meanwhile shorten the list without moving the rest.
                place = min(place, list.end)
                // Per cell: a few instructions and the words the ranking reads (this loop is what
                // `troupe-bench observer` times at 10^6 actors).
                place = list.visit(
                    below: place, limit: restarts >= 3 ? .max : 4096, prefetching: ranked.prefetchOffset(list)
                ) { cell in
                    live += 1
                    if !running.isEmpty, running.contains(Self.identity(of: cell)) { runningCells.append(cell) }
                    guard matchesEveryone || filter.matches(cell) else { return }
                    matching += 1
                    ranked.consider(cell, order: live)
                }
                done = place == 0
            }
            ranked.releaseEvicted()
        }
        return (ranked.sortedCells(), live, matching, runningCells)
    }
}

/// The best `limit` cells seen so far by a ranking: a sorted array with binary insertion (the
/// limit is small, the actors many: most are rejected by one comparison with the worst kept).
/// Ties on a count go to the cell met first, in the order of the system's list of live actors
/// (most recently spawned first; for actors spawned one after another, the higher id): a
/// system of equal actors (all idle) then costs one comparison per actor, and a rejection
/// reads nothing of the cell but its count: one cache line per cell.
/// Kept cells are retained, so they outlive the walk's pauses; evicted ones are released only
/// outside the lock.
private struct RankedCells {
    private struct Entry {
        let cell: AnyCell
        let key: UInt64
        /// Where the walk met the cell (rankings by a count), or its id (``ActorRanking/name``).
        let order: UInt64
    }

    let limit: Int
    let ranking: ActorRanking
    private var entries: [Entry] = []
    private var evicted: [AnyCell] = []
    /// The last kept entry's key, once `limit` are kept.
    private var worstKey: UInt64 = 0

    init(limit: Int, ranking: ActorRanking) {
        self.limit = limit
        self.ranking = ranking
        entries.reserveCapacity(limit + 1)
    }

    /// Where every cell's mailbox lies from the cell's start (``AnyCell/mailboxOffset``), once
    /// a cell has been seen.
    private var mailboxOffset = 0

    /// The cell's mailbox, found from the cell's address rather than read from the cell: the
    /// mailbox's counters can then load at once, not after a load of its address (a cache miss
    /// less per cell at 10^6 actors).
    @inline(__always)
    private mutating func mailbox(of cell: AnyCell) -> OpaquePointer {
        if mailboxOffset == 0 { mailboxOffset = cell.mailboxOffset }
        // Safety: `cell` is alive (the walk holds the list's lock), and its mailbox is inside it at
        // `mailboxOffset`, the same in every cell (``AnyCell/mailboxOffset``).
        return OpaquePointer(Unmanaged.passUnretained(cell).toOpaque() + mailboxOffset)
    }

    /// What the walk should prefetch of each cell for this ranking (its offset from the cell's
    /// start): the mailbox's `popped` count, once a cell is known (read from the newest cell
    /// once per walk: the offset is the same in every cell).
    mutating func prefetchOffset(_ list: borrowing LiveActors) -> Int? {
        guard ranking == .messagesProcessed, limit > 0 else { return nil }
        if mailboxOffset == 0 {
            var found = 0
            _ = list.visit(below: list.end, limit: 1) { found = $0.mailboxOffset }
            mailboxOffset = found
        }
        return mailboxOffset == 0 ? nil : mailboxOffset + Int(CTroupe_mailbox_popped_offset)
    }

    /// The cell's number for rankings by a count (higher first).
    @inline(__always)
    private mutating func key(of cell: AnyCell) -> UInt64 {
        switch ranking {
        case .messagesProcessed: return CTroupe_mailbox_popped(mailbox(of: cell))
        case .mailboxDepth:
            // Not counted (-1) sorts below every count.
            return UInt64(bitPattern: Int64(CTroupe_mailbox_depth(mailbox(of: cell))) &+ 1)
        case .failures: return UInt64(cell.failureTotal.load(ordering: .relaxed))
        case .restarts: return UInt64(cell.restartTotal.load(ordering: .relaxed))
        case .name: return 0
        }
    }

    /// Whether the entry (`key`, `order`, `cell`) comes before `b`.
    private func precedes(key: UInt64, order: UInt64, cell: AnyCell, _ b: Entry) -> Bool {
        if ranking == .name {
            let (left, right) = (cell.address.description, b.cell.address.description)
            return left != right ? left < right : order < b.order
        }
        return key != b.key ? key > b.key : order < b.order
    }

    /// Keeps `cell`, the walk's `order`th (counting up from where it last started at the
    /// list's head), if it is among the best `limit` so far. Most cells are rejected by one
    /// comparison with the worst kept, before anything is retained (inlined into the walk; the
    /// rest is `keep`).
    @inline(__always)
    mutating func consider(_ cell: AnyCell, order: Int) {
        guard limit > 0 else { return }
        let key = key(of: cell)
        if isFull && ranking != .name {
            // The common rejection, on one integer: nothing retained, no string read. A tie
            // loses, since every kept cell was met earlier.
            guard key > worstKey else { return }
        }
        keep(cell, key: key, order: ranking == .name ? cell.id : UInt64(order))
    }

    /// Whether `limit` entries are kept.
    private var isFull: Bool { entries.count == limit }

    @inline(never)
    private mutating func keep(_ cell: AnyCell, key: UInt64, order: UInt64) {
        if isFull {
            if ranking == .name {
                guard let worst = entries.last, precedes(key: key, order: order, cell: cell, worst) else { return }
            }
            evicted.append(entries.removeLast().cell)
        }
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            let entry = entries[middle]
            if !precedes(key: key, order: order, cell: cell, entry) { low = middle + 1 } else { high = middle }
        }
        entries.insert(Entry(cell: cell, key: key, order: order), at: low)
        if let worst = entries.last { worstKey = worst.key }
    }

    mutating func removeAll() {
        evicted += entries.map(\.cell)
        entries.removeAll(keepingCapacity: true)
    }

    /// Drops the references to evicted cells. Outside the system's actor-list lock: the last
    /// reference to a stopped cell runs its deinit.
    mutating func releaseEvicted() { evicted.removeAll(keepingCapacity: true) }

    func sortedCells() -> [AnyCell] { entries.map(\.cell) }
}

/// A case-insensitive (ASCII) substring search over an actor's name, its address as shown
/// (`name#ID`, `actor#ID`, when the search holds a `#`; `#12` finds actor 12) and its
/// definition's type, without making a string per actor for a plain search: whether a type
/// matches is decided once per cell class.
private struct ActorSearch {
    private let needle: [UInt8]
    /// The id a search `#ID` names.
    private let id: UInt64?
    /// The parent a search `parent:#ID` (or `parent:ID`) names: only its children match.
    private let parentID: UInt64?
    /// The actor a search `id:#ID` (or `id:ID`) names: only it matches (where `#ID` also
    /// matches every address that contains the text).
    private let exactID: UInt64?
    private var typeMatches: [ObjectIdentifier: Bool] = [:]

    /// Whether the search holds a `#`: it is then also matched against each address as shown
    /// (`name#ID`, `actor#ID`), made for that actor.
    private let matchesAddresses: Bool

    init(_ search: String) {
        needle = search.utf8.map(Self.lowercased)
        id = search.first == "#" ? UInt64(search.dropFirst()) : nil
        parentID = Self.id(after: "parent:", in: search)
        exactID = Self.id(after: "id:", in: search)
        matchesAddresses = search.contains("#")
    }

    /// The number in `search` when it is `prefix` then `#ID` or `ID` (the prefix in any case).
    private static func id(after prefix: String, in search: String) -> UInt64? {
        guard search.utf8.count > prefix.utf8.count, search.lowercased().hasPrefix(prefix) else { return nil }
        let named = search.dropFirst(prefix.count)
        return UInt64(named.first == "#" ? named.dropFirst() : named)
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= 65 && byte <= 90 ? byte + 32 : byte
    }

    mutating func matches(_ cell: AnyCell) -> Bool {
        guard !needle.isEmpty else { return true }
        if let parentID { return cell.parentID == parentID }
        if let exactID { return cell.id == exactID }
        if let id, cell.id == id { return true }
        if var name = cell.config?.name, name.withUTF8({ contains($0) }) { return true }
        if matchesAddresses {
            var address = cell.address.description
            if address.withUTF8({ contains($0) }) { return true }
        }
        let type = ObjectIdentifier(Swift.type(of: cell))
        if let known = typeMatches[type] { return known }
        var typeName = cell.definitionTypeName
        let found = typeName.withUTF8 { contains($0) }
        typeMatches[type] = found
        return found
    }

    private func contains(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count >= needle.count else { return false }
        for start in 0...(bytes.count - needle.count) {
            var index = 0
            while index < needle.count, Self.lowercased(bytes[start + index]) == needle[index] { index += 1 }
            if index == needle.count { return true }
        }
        return false
    }
}
