internal import TroupeLocks

/// Admits recoveries a few at a time, so that thousands of actors starting at once (a deploy, a
/// node restart) do not all read the store together: each waits for a permit, and actors with
/// commands waiting are admitted before those without.
///
/// The number of permits adapts to the store (``RecoveryWindow``): it grows by one while
/// recoveries finish within ``RecoveryLimits/targetLatency`` and others wait, and shrinks by a
/// quarter when one takes longer — once for all the recoveries that were already running when it
/// shrank (additive increase, multiplicative decrease, as TCP's window).
final class RecoveryGate: Sendable {
    struct Waiting {
        let token: UInt64
        let admit: @Sendable () -> Void
    }

    struct State {
        var window: RecoveryWindow
        var active = 0
        /// Requests with commands waiting behind them, then the others; first come first served.
        var urgent: [Waiting] = []
        var normal: [Waiting] = []
        var admitted = 0
        var largestLimit = 0
    }

    let limits: RecoveryLimits
    private let state: Locked<State>

    init(limits: RecoveryLimits) {
        self.limits = limits
        state = Locked(State(window: RecoveryWindow(limits: limits)))
    }

    /// Calls `admit` (now, or later from the thread that frees a permit) once a permit is
    /// free; `token` names the request for ``hurry(_:)``.
    func request(token: UInt64, urgent: Bool, admit: @escaping @Sendable () -> Void) {
        let now: Bool = state.withLock { state in
            if state.active < state.window.permits {
                state.active += 1
                state.admitted += 1
                return true
            }
            let waiting = Waiting(token: token, admit: admit)
            if urgent { state.urgent.append(waiting) } else { state.normal.append(waiting) }
            return false
        }
        if now { admit() }
    }

    /// Moves a waiting request ahead of those without commands waiting.
    func hurry(_ token: UInt64) {
        state.withLock { state in
            if let index = state.normal.firstIndex(where: { $0.token == token }) {
                state.urgent.append(state.normal.remove(at: index))
            }
        }
    }

    /// Forgets a request that will not be needed (its actor stopped while waiting).
    func cancel(_ token: UInt64) {
        state.withLock { state in
            state.urgent.removeAll { $0.token == token }
            state.normal.removeAll { $0.token == token }
        }
    }

    /// A recovery admitted at `start` finished: frees its permit and adapts the limit.
    func finished(startedAt start: ContinuousClock.Instant, now: ContinuousClock.Instant = .now) {
        var toAdmit: [Waiting] = []
        state.withLock { state in
            state.active -= 1
            let waiting = !state.urgent.isEmpty || !state.normal.isEmpty
            state.window.finished(startedAt: start, now: now, othersWaiting: waiting)
            state.largestLimit = max(state.largestLimit, state.window.permits)
            while state.active < state.window.permits {
                let next: Waiting
                if !state.urgent.isEmpty {
                    next = state.urgent.removeFirst()
                } else if !state.normal.isEmpty {
                    next = state.normal.removeFirst()
                } else {
                    break
                }
                state.active += 1
                state.admitted += 1
                toAdmit.append(next)
            }
        }
        for waiting in toAdmit { waiting.admit() }
    }

    var snapshot: (limit: Int, active: Int, waiting: Int, admitted: Int) {
        state.withLock {
            ($0.window.permits, $0.active, $0.urgent.count + $0.normal.count, $0.admitted)
        }
    }
}

/// How many recoveries may run at once: additive increase while they are fast and others wait,
/// multiplicative decrease when one is slow. A burst of slow recoveries (all admitted together,
/// all slowed by the same overload) shrinks the window once, not once each: only a recovery that
/// started after the last cut can cut again — TCP cuts its window once per round trip for the
/// same reason.
struct RecoveryWindow {
    let limits: RecoveryLimits
    private(set) var limit: Double
    private var lastCut: ContinuousClock.Instant?

    init(limits: RecoveryLimits) {
        self.limits = limits
        limit = Double(limits.initial)
    }

    var permits: Int { Int(limit) }

    mutating func finished(startedAt start: ContinuousClock.Instant, now: ContinuousClock.Instant, othersWaiting: Bool)
    {
        if now - start > limits.targetLatency {
            if let lastCut, start <= lastCut { return }
            limit = max(Double(limits.minimum), limit * 0.75)
            lastCut = now
        } else if othersWaiting {
            limit = min(Double(limits.maximum), limit + 1)
        }
    }
}

/// Bounds on concurrent recoveries through one journal.
public struct RecoveryLimits: Sendable {
    /// Recoveries admitted at once to begin with (default 32).
    public var initial: Int
    /// Never fewer than this (default 4).
    public var minimum: Int
    /// Never more than this (default 1,024).
    public var maximum: Int
    /// A recovery slower than this shrinks the limit (default 100 ms).
    public var targetLatency: Duration

    public init(initial: Int = 32, minimum: Int = 4, maximum: Int = 1_024, targetLatency: Duration = .milliseconds(100))
    {
        precondition(1 <= minimum && minimum <= initial && initial <= maximum, "need 1 ≤ minimum ≤ initial ≤ maximum")
        self.initial = initial
        self.minimum = minimum
        self.maximum = maximum
        self.targetLatency = targetLatency
    }
}
