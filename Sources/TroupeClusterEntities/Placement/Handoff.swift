/// Whether this node may start activations now, and what it holds back until it may: the
/// ordered handoff that keeps an identity from running on two nodes while it moves, and keeps
/// each sender's messages to it in order.
///
/// Both signals travel in the lines between nodes, behind everything sent before them. When a
/// node adopts new owners (fingerprint F), it sends every other member a *marker* of F: what
/// it sends after the marker is routed by F. Once it has the marker of F from every other
/// member (so everything sent to it by the owners before F has arrived, and it has routed that
/// by F), and its activations of identities it no longer owns have all stopped, it sends the
/// items it held for those identities to their owners and then a *confirm* of F to every other
/// member. A node starts no activation until every other member of its view, and every member
/// that announced it is leaving, has confirmed its F: until then a message for an identity
/// with no running activation here is held, and once confirmed, routed again by the view then
/// current, forwarded items first (they were sent before the direct ones, by the owners before
/// F). Running activations take their messages throughout; with no change of members, nothing
/// is held. A message that a line sends after its marker of owners this node has not adopted
/// was routed by them: the region parks it until this node adopts them (a node that hears of
/// a change late would otherwise route it by its older owners, and it could come back behind
/// an earlier message of its sender). Model-checked: `Models/handoff.pml`.
///
/// A member's signals are kept across views, its latest one per kind: one that came while
/// this node's view lacked the member (a listing that showed the members one by one, or
/// dropped one for a moment) still counts once the member is back, because the member sends
/// it only once per change of its own. Only a newer region of the kind on that node (a higher
/// incarnation) makes them stale.
///
/// ```
/// settled ──new owners──▶ awaiting ──every other member confirmed (or the timeout)──▶ flushing
///    ▲                      ▲  └──────────────new owners (again)──────────┐            │
///    │                      └─────────────────────────────────────────────┘            │
///    └────────────────────────────── nothing left held ◀──────────────────────────────┘
/// ```
///
/// Pure state, under the region's placement lock; the region does the sending.
struct Handoff: Sendable {
    enum Phase: Equatable {
        /// Every other member confirmed the current view: activations start freely.
        case settled
        /// Some members have not confirmed the current view yet.
        case awaiting
        /// Confirmed; what was held is being routed again, in order. New items still queue
        /// behind it.
        case flushing
    }

    /// An item that waited for the view to be confirmed.
    enum Held: Sendable {
        /// From another node (`direct`: where a direct ask's answer goes).
        case envelope(EntityEnvelope, direct: (@Sendable (EntityAnswer) -> Void)?)
        /// A tell made on this node, not encoded (the region's `Message`, boxed).
        case message(key: String, any Sendable)

        var key: String {
            switch self {
            case .envelope(let envelope, _): envelope.key
            case .message(let key, _): key
            }
        }

        /// Sent on by a node that did not own it: its sender routed it by older owners.
        var wasForwarded: Bool {
            if case .envelope(let envelope, _) = self { return envelope.hops > 0 }
            return false
        }
    }

    /// What the flush does next.
    enum FlushStep: Sendable {
        /// Route these again, in order, then ask for the next step.
        case route([Held])
        /// Nothing is left: settled. Resume these (local asks that waited).
        case done([CheckedContinuation<Void, Never>])
        /// A newer view came meanwhile: stop; what is left waits for that one.
        case superseded
    }

    private(set) var phase = Phase.settled
    /// The owners' fingerprint of the current view.
    private(set) var fingerprint: UInt64 = 0
    /// Which view this is, counted on this node (a timeout or a flush names the view it was
    /// started for).
    private(set) var generation: UInt64 = 0
    /// The other members that have not confirmed the current view yet.
    private(set) var waitingFor: Set<UInt64> = []
    /// The other members whose marker of the current view has not come yet.
    private(set) var markersMissing: Set<UInt64> = []
    /// The last marker each other member sent (by uid), from its latest region.
    private var markers: [UInt64: Signal] = [:]
    /// The last fingerprint each other member confirmed (a confirmation can come before this
    /// node has the same view, or while the member is missing from it).
    private var confirmations: [UInt64: Signal] = [:]
    /// The regions whose signals the current view counts: each confirmer's incarnation.
    private var incarnations: [UInt64: UInt64] = [:]

    /// A member's latest signal of one kind, and which of its regions sent it.
    struct Signal: Equatable {
        let incarnation: UInt64
        let fingerprint: UInt64
    }

    /// How many members' signals are remembered before those not in the view are forgotten.
    static let rememberedMembers = 1_024
    private var held: [Held] = []
    /// Held items per identity, until routed (also while a flush routes them): a message for
    /// an identity with some must queue behind them, even once the identity is active.
    private var pending: [String: Int] = [:]
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// Items held so far, and views confirmed by the timeout rather than by every member.
    private(set) var heldCount = 0
    private(set) var timeouts = 0

    var isSettled: Bool { phase == .settled }

    /// What a new listing changed.
    struct Change: Equatable {
        let generation: UInt64
        /// Nothing is left to wait for: the region flushes at once.
        let confirmed: Bool
        /// New owners (the region sends its markers and starts its confirmation); false when
        /// only a member that had still to confirm the same owners left.
        let isNew: Bool
    }

    /// The view's owners now have `fingerprint`, and `confirmers` (the other members, and
    /// those that announced they are leaving, by uid, with the incarnation of their region in
    /// the view) must confirm it. nil when nothing changes.
    mutating func viewChanged(fingerprint: UInt64, confirmers: [UInt64: UInt64]) -> Change? {
        incarnations = confirmers
        // A newer region on a member's node: what the older one said is stale.
        let current = { (uid: UInt64, signal: Signal) in signal.incarnation >= (confirmers[uid] ?? 0) }
        markers = markers.filter(current)
        confirmations = confirmations.filter(current)
        if markers.count + confirmations.count > Self.rememberedMembers {
            markers = markers.filter { confirmers[$0.key] != nil }
            confirmations = confirmations.filter { confirmers[$0.key] != nil }
        }
        let members = Set(confirmers.keys)
        guard fingerprint != self.fingerprint || generation == 0 else {
            // Same owners: members that left the listing no longer need to confirm. (A region
            // made again on a member's node, with the same owners, held its activations until
            // this node confirmed to it: it runs nothing this node owns.)
            waitingFor.formIntersection(members)
            markersMissing.formIntersection(members)
            if phase == .awaiting, waitingFor.isEmpty {
                phase = .flushing
                return Change(generation: generation, confirmed: true, isNew: false)
            }
            return nil
        }
        self.fingerprint = fingerprint
        generation += 1
        waitingFor = members.filter { confirmations[$0]?.fingerprint != fingerprint }
        markersMissing = members.filter { markers[$0]?.fingerprint != fingerprint }
        phase = waitingFor.isEmpty ? .flushing : .awaiting
        return Change(generation: generation, confirmed: waitingFor.isEmpty, isNew: true)
    }

    /// `member` has confirmed `fingerprint`. True when that completes the current view's
    /// confirmations: the region starts the flush.
    mutating func confirm(_ member: UInt64, incarnation: UInt64, fingerprint: UInt64) -> Bool {
        guard remember(Signal(incarnation: incarnation, fingerprint: fingerprint), from: member, in: &confirmations)
        else { return false }
        guard phase == .awaiting, fingerprint == self.fingerprint, waitingFor.remove(member) != nil else {
            return false
        }
        if waitingFor.isEmpty {
            phase = .flushing
            return true
        }
        return false
    }

    /// `member`'s marker of `fingerprint` came: everything it sent before is here.
    mutating func marker(_ member: UInt64, incarnation: UInt64, fingerprint: UInt64) {
        guard remember(Signal(incarnation: incarnation, fingerprint: fingerprint), from: member, in: &markers)
        else { return }
        if fingerprint == self.fingerprint { markersMissing.remove(member) }
    }

    /// The fingerprint of the last marker `member` sent, as this node keeps it.
    func lastMarker(from member: UInt64) -> UInt64? { markers[member]?.fingerprint }

    /// Keeps `signal` as `member`'s latest; false when an older region of the member sent it
    /// (than one heard from before, or than the one in the view).
    private func remember(_ signal: Signal, from member: UInt64, in signals: inout [UInt64: Signal]) -> Bool {
        guard signal.incarnation >= max(signals[member]?.incarnation ?? 0, incarnations[member] ?? 0) else {
            return false
        }
        signals[member] = signal
        return true
    }

    /// Takes the held items that `matches` selects, in order (the items for identities that
    /// moved away, sent to their owners before this node confirms). Report them ``routed(_:)``.
    mutating func takeHeld(where matches: (Held) -> Bool) -> [Held] {
        var taken: [Held] = []
        var kept: [Held] = []
        for item in held {
            if matches(item) { taken.append(item) } else { kept.append(item) }
        }
        held = kept
        return taken
    }

    /// The handoff timeout for `generation` ran out. True when that view was still awaiting
    /// confirmations: it counts as confirmed (the region logs who did not confirm, and flushes).
    mutating func timedOut(generation: UInt64) -> Bool {
        guard phase == .awaiting, generation == self.generation else { return false }
        timeouts += 1
        phase = .flushing
        return true
    }

    /// Holds `item` until the view is confirmed; false when it is confirmed already (the
    /// caller delivers it itself).
    mutating func hold(_ item: Held) -> Bool {
        guard phase != .settled else { return false }
        held.append(item)
        pending[item.key, default: 0] += 1
        heldCount += 1
        return true
    }

    /// Whether items for `key` are held, or taken to be routed and not routed yet.
    func isPending(_ key: String) -> Bool { pending[key] != nil }

    /// `items`, taken by a flush or by ``takeHeld(where:)``, have been routed.
    mutating func routed(_ items: [Held]) {
        for item in items {
            let key = item.key
            if let count = pending[key], count > 1 { pending[key] = count - 1 } else { pending[key] = nil }
        }
    }

    /// Makes a local ask wait for the view to be confirmed; false when it is confirmed already.
    mutating func wait(_ continuation: CheckedContinuation<Void, Never>) -> Bool {
        guard phase != .settled else { return false }
        waiters.append(continuation)
        return true
    }

    /// The flush of `generation`'s view, one step. Report the items of a `.route` step
    /// ``routed(_:)`` once routed.
    mutating func flushStep(generation: UInt64) -> FlushStep {
        guard generation == self.generation, phase == .flushing else { return .superseded }
        if !held.isEmpty {
            defer { held.removeAll(keepingCapacity: false) }
            // Forwarded items first: each was sent before its sender's marker, so before any
            // item the same sender sent here directly.
            return .route(held.filter(\.wasForwarded) + held.filter { !$0.wasForwarded })
        }
        phase = .settled
        defer { waiters.removeAll() }
        return .done(waiters)
    }

    /// How many items wait now.
    var heldNow: Int { held.count }
}
