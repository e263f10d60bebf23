import Synchronization

/// The states of a lifecycle that other threads read: a named enum whose allowed transitions
/// are written next to it, so that ``AtomicLifecycle`` can check every move in debug builds.
protocol LifecycleState: RawRepresentable<UInt8>, Equatable, Sendable {
    /// Whether the lifecycle may move from `current` to `next`.
    static func allows(from current: Self, to next: Self) -> Bool
}

/// A lifecycle state in an atomic. Reads are one load; a move (``advance(to:)``) is one
/// exchange, and in debug builds it checks that the move is one the state type allows, so a
/// transition out of order (a second shutdown, a start after termination) stops at the line
/// that made it instead of surfacing later as a hang.
struct AtomicLifecycle<State: LifecycleState>: ~Copyable {
    private let raw: Atomic<UInt8>

    init(_ initial: State) { raw = Atomic(initial.rawValue) }

    // Orderings are fixed per method: the atomics want them as constants at the call. The
    // sequentially consistent forms serve the Dekker-style checks (a sender's push, then a look
    // at the state; shutdown's move, then a look at the queues); the relaxed ones the hot paths
    // that only need some recent value.

    // Safety: `raw` only ever holds a `State`'s raw value (`init` and both `advance`s store nothing
    // else), so the conversion never fails.
    /// The current state. Any thread; sequentially consistent.
    @inline(__always)
    func load() -> State { State(rawValue: raw.load(ordering: .sequentiallyConsistent)).unsafelyUnwrapped }

    /// Whether the current state is `state`. Any thread; sequentially consistent.
    @inline(__always)
    func `is`(_ state: State) -> Bool { raw.load(ordering: .sequentiallyConsistent) == state.rawValue }

    /// Whether the current state is `state`. Any thread; relaxed (a plain load).
    @inline(__always)
    func isRelaxed(_ state: State) -> Bool { raw.load(ordering: .relaxed) == state.rawValue }

    /// Whether the state has reached `state` or a later one (states are declared in order).
    @inline(__always)
    func hasReached(_ state: State) -> Bool { raw.load(ordering: .sequentiallyConsistent) >= state.rawValue }

    /// Moves to `next` and returns the state it left (checked in debug builds). Sequentially
    /// consistent.
    @discardableResult
    func advance(to next: State) -> State {
        // Safety: `raw` only ever holds a `State`'s raw value, so the conversion never fails.
        let previous = State(rawValue: raw.exchange(next.rawValue, ordering: .sequentiallyConsistent)).unsafelyUnwrapped
        assert(State.allows(from: previous, to: next), "\(State.self): \(previous) -> \(next) is not a transition")
        return previous
    }

    /// Moves from `expected` to `next` if the state is `expected`; whether it moved.
    /// Sequentially consistent.
    func advance(from expected: State, to next: State) -> Bool {
        assert(State.allows(from: expected, to: next), "\(State.self): \(expected) -> \(next) is not a transition")
        return raw.compareExchange(
            expected: expected.rawValue, desired: next.rawValue, ordering: .sequentiallyConsistent
        )
        .exchanged
    }
}
