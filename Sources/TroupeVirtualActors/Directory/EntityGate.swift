import Synchronization

/// The one atomic word through which senders reach an entity's activation without a lock, and
/// through which the directory closes that path before it stops or replaces the activation.
///
/// Layout (low to high): bit 0 `closed`, bit 1 `claimed`, bits 2..<32 senders inside the gate
/// (in units of 4), bits 32..<64 sends completed through the gate (wrapping; the sweep compares
/// two readings for equality, so a wrap matters only after exactly 2^32 sends between sweeps,
/// which are at most a minute apart).
///
/// The protocol, which makes "no message lost" hold across a passivation:
/// - A sender ``enter()``s. Seeing the gate open, it may read the slot's activation and send to
///   it, then ``leave(sent:)``. Seeing it closed, it leaves at once and takes the slow path.
/// - The directory ``close()``s the gate (under its lock). From then on, no sender reads the
///   activation; those already inside finish their sends.
/// - Exactly one party observes "closed, nobody inside" and claims it (the closer, or the
///   last sender to leave). The claimer tells the directory, which then stops the activation:
///   every message sent through the gate is in its mailbox before that stop, so it is handled.
/// - The directory ``open()``s the gate again (under its lock) only after it has stored the next
///   activation and delivered what the slow path buffered meanwhile.
///
/// Model-checked with spin: `Sources/TroupeVirtualActors/Models/entity-gate.pml`.
@usableFromInline
struct EntityGate: ~Copyable {
    @usableFromInline static var closed: UInt64 { 1 }
    @usableFromInline static var claimed: UInt64 { 2 }
    @usableFromInline static var senderOne: UInt64 { 4 }
    @usableFromInline static var sendersMask: UInt64 { 0xFFFF_FFFC }
    @usableFromInline static var completedOne: UInt64 { 1 << 32 }

    @usableFromInline let word: Atomic<UInt64>

    /// A new gate starts closed and claimed: there is no activation yet, and nothing to wait for.
    init() { word = Atomic(Self.closed | Self.claimed) }

    /// Enters; true when the gate is open and the caller may read the activation and send once.
    /// Acquiring: pairs with ``open()``'s release, so the activation stored before the gate
    /// opened is the one the sender reads.
    @inlinable @inline(__always)
    func enter() -> Bool {
        word.wrappingAdd(Self.senderOne, ordering: .acquiring).oldValue & Self.closed == 0
    }

    /// Leaves after ``enter()``; `sent` counts a send for the idle sweep. Returns true when this
    /// sender was the last inside a closed gate and won the claim: the caller must then report
    /// the slot drained. Releasing: the send happens before the claimer's acquiring claim, and so
    /// before the stop the claimer sends next.
    @inlinable @inline(__always)
    func leave(sent: Bool) -> Bool {
        let delta = sent ? Self.completedOne &- Self.senderOne : 0 &- Self.senderOne
        let now = word.wrappingAdd(delta, ordering: .releasing).newValue
        guard now & (Self.closed | Self.claimed | Self.sendersMask) == Self.closed else { return false }
        return claim()
    }

    /// Closes the gate. Returns true when nobody was inside and the caller won the claim (it
    /// must then treat the slot as drained itself). Call only on an open gate.
    func close() -> Bool {
        let before = word.bitwiseOr(Self.closed, ordering: .acquiringAndReleasing).oldValue
        precondition(before & Self.closed == 0, "EntityGate.close() on a closed gate")
        return claim()
    }

    /// Opens a closed and claimed gate. Releasing: the activation stored before is visible to
    /// every sender whose enter sees the gate open.
    func open() {
        let before = word.bitwiseAnd(~(Self.closed | Self.claimed), ordering: .releasing).oldValue
        precondition(
            before & (Self.closed | Self.claimed) == Self.closed | Self.claimed,
            "EntityGate.open() on a gate that is not closed and claimed")
    }

    /// Claims a closed gate with nobody inside, once: whoever's compare-and-exchange sets
    /// `claimed` first. Acquiring and releasing: it reads every leaver's release.
    @usableFromInline
    func claim() -> Bool {
        var current = word.load(ordering: .acquiring)
        while current & (Self.closed | Self.claimed | Self.sendersMask) == Self.closed {
            let (exchanged, original) = word.compareExchange(
                expected: current, desired: current | Self.claimed, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Sends completed through the gate so far (wrapping) and whether anybody is inside now.
    func activity() -> (completed: UInt32, busy: Bool) {
        let now = word.load(ordering: .relaxed)
        return (UInt32(truncatingIfNeeded: now >> 32), now & Self.sendersMask != 0)
    }

    var isOpen: Bool { word.load(ordering: .relaxed) & Self.closed == 0 }
}
