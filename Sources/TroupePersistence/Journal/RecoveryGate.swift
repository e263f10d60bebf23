import Synchronization

/// Admits recoveries a few at a time, so that thousands of actors starting at once (a deploy, a
/// node restart) do not all read the store together: each waits for a permit, and actors with
/// commands waiting are admitted before those without.
///
/// The number of permits adapts to the store: it grows by one while recoveries finish within
/// ``RecoveryLimits/targetLatency`` and others wait, and shrinks by a quarter when one takes
/// longer (additive increase, multiplicative decrease, as TCP's window).
final class RecoveryGate: Sendable {
    struct Waiting {
        let token: UInt64
        let admit: @Sendable () -> Void
    }

    struct State {
        var limit: Double
        var active = 0
        /// Requests with commands waiting behind them, then the others; first come first served.
        var urgent: [Waiting] = []
        var normal: [Waiting] = []
        var admitted = 0
        var largestLimit = 0
    }

    let limits: RecoveryLimits
    private let state: Mutex<State>

    init(limits: RecoveryLimits) {
        self.limits = limits
        state = Mutex(State(limit: Double(limits.initial)))
    }

    /// Calls `admit` (now, or later from the thread that frees a permit) once a permit is
    /// free; `token` names the request for ``hurry(_:)``.
    func request(token: UInt64, urgent: Bool, admit: @escaping @Sendable () -> Void) {
        let now: Bool = state.withLock { state in
            if state.active < Int(state.limit) {
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

    /// A recovery finished after `latency`: frees its permit and adapts the limit.
    func finished(after latency: Duration) {
        var toAdmit: [Waiting] = []
        state.withLock { state in
            state.active -= 1
            let waiting = !state.urgent.isEmpty || !state.normal.isEmpty
            if latency > limits.targetLatency {
                state.limit = max(Double(limits.minimum), state.limit * 0.75)
            } else if waiting {
                state.limit = min(Double(limits.maximum), state.limit + 1)
            }
            state.largestLimit = max(state.largestLimit, Int(state.limit))
            while state.active < Int(state.limit) {
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
            ($0.limit.isFinite ? Int($0.limit) : 0, $0.active, $0.urgent.count + $0.normal.count, $0.admitted)
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
