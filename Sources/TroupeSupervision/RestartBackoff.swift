#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Troupe

/// How long a failed child stays suspended (handling nothing, keeping its mailbox) before its
/// fresh instance starts.
///
/// The n-th consecutive restart of a child waits `min(maximum, initial × multiplierⁿ⁻¹)`,
/// lengthened by a random fraction of up to `jitter` of itself (so that children failing
/// together do not all come back at the same instant; the jitter only ever adds, so a delay is
/// never shorter than the un-jittered one, and it may exceed `maximum` by at most that
/// fraction). The count of consecutive restarts goes back to zero once the child has run
/// for `resetAfter` without failing since its last restart was due.
///
/// Every actor the failure restarts waits the same delay: the failing one, siblings restarted
/// by the scope, linked actors and pool members (through `ActorRef.requestRestart(reason:after:)`),
/// so a group comes back together.
public struct RestartBackoff: Sendable, Hashable, CustomStringConvertible {
    public let initial: Duration
    public let maximum: Duration
    public let multiplier: Double
    /// The largest random fraction added to a delay, in `0...1`.
    public let jitter: Double
    /// The failure-free time after which the next restart counts as the first again.
    public let resetAfter: Duration

    private init(initial: Duration, maximum: Duration, multiplier: Double, jitter: Double, resetAfter: Duration) {
        self.initial = initial
        self.maximum = maximum
        self.multiplier = multiplier
        self.jitter = jitter
        self.resetAfter = resetAfter
    }

    /// Restart at once (the default).
    public static let none = RestartBackoff(initial: .zero, maximum: .zero, multiplier: 1, jitter: 0, resetAfter: .zero)

    /// Exponential backoff: `initial`, then `initial × multiplier`, … up to `maximum`, plus up
    /// to `jitter` (a fraction, `0...1`) of random extra. `resetAfter` (default: `maximum`) is
    /// the quiet period that resets the sequence. `initial` must be positive, `maximum` at
    /// least `initial`, `multiplier` at least 1.
    public static func exponential(
        initial: Duration = .milliseconds(100),
        maximum: Duration = .seconds(10),
        multiplier: Double = 2,
        jitter: Double = 0.2,
        resetAfter: Duration? = nil
    ) -> RestartBackoff {
        if !(initial > .zero) {
            fatalError("RestartBackoff.exponential: initial must be positive, got \(initial); use .none for no delay")
        }
        if !(maximum >= initial) {
            fatalError("RestartBackoff.exponential: maximum (\(maximum)) must be at least initial (\(initial))")
        }
        if !(multiplier >= 1 && multiplier.isFinite) {
            fatalError(
                "RestartBackoff.exponential: multiplier must be a finite number of at least 1, got \(multiplier)")
        }
        if !((0...1).contains(jitter)) {
            fatalError("RestartBackoff.exponential: jitter must be a fraction in 0...1, got \(jitter)")
        }
        let reset = resetAfter ?? maximum
        if !(reset > .zero) { fatalError("RestartBackoff.exponential: resetAfter must be positive, got \(reset)") }
        return RestartBackoff(
            initial: initial, maximum: maximum, multiplier: multiplier, jitter: jitter, resetAfter: reset)
    }

    /// Whether restarts happen at once.
    public var isNone: Bool { initial == .zero }

    /// The delay of the `number`-th consecutive restart (1 for the first), with
    /// `jitterSample` in `0..<1` choosing the jitter (random by default). Any thread.
    public func delay(forConsecutiveRestart number: Int, jitterSample: Double = .random(in: 0..<1)) -> Duration {
        guard !isNone, number > 0 else { return .zero }
        // In nanoseconds, rounded to whole ones, so that jitter-free delays are exact.
        let ceiling = maximum / .nanoseconds(1)
        var nanoseconds = (initial / .nanoseconds(1)) * pow(multiplier, Double(number - 1))
        if !nanoseconds.isFinite || nanoseconds > ceiling { nanoseconds = ceiling }
        nanoseconds += nanoseconds * jitter * min(max(jitterSample, 0), 1)
        return .nanoseconds(Int64(min(nanoseconds.rounded(), 9.0e18)))
    }

    public var description: String {
        if isNone { return "none" }
        return
            "exponential(initial: \(initial), maximum: \(maximum), multiplier: \(multiplier), jitter: \(jitter), resetAfter: \(resetAfter))"
    }
}
