#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Troupe

/// What a ``Supervisor`` does about one failure of a supervised child (a handler threw, or
/// called `context.crash(_:)`).
public enum SupervisionDirective: Sendable, Hashable, CustomStringConvertible {
    /// Replace the failed instance with a fresh one from the child's creation closure, keeping
    /// its mailbox, after the backoff delay. The strategy's ``RestartScope`` may restart
    /// siblings too, and every actor linked to a restarted one is restarted as well.
    case restart
    /// Keep the failed instance and its state and go on with the next message. The failing
    /// message is dead-lettered.
    case resume
    /// Stop the child (and, per the ``RestartScope``, its siblings) together with the actors
    /// linked to it, and stop supervising them.
    case stop
    /// Hand the failure up. A nested supervisor reports it to its parent as a failure of its
    /// own id, and the parent's strategy decides for the whole nested group. A top-level
    /// supervisor stops the child and its linked children and reports
    /// ``SupervisionEvent/Kind/escalated(toParent:)`` with no parent.
    case escalate

    public var description: String {
        switch self {
        case .restart: "restart"
        case .resume: "resume"
        case .stop: "stop"
        case .escalate: "escalate"
        }
    }
}

/// Maps a failure's error to a directive. Called on the failing actor's worker thread (or on
/// the thread of ``Supervisor/reportFailure(id:error:)``), with no lock held: keep it quick,
/// never block in it.
public typealias SupervisionDecider = @Sendable (any Error) -> SupervisionDirective

/// Which children a restart or a stop decided for one failing child applies to.
public enum RestartScope: Sendable, Hashable, CustomStringConvertible {
    /// Only the failing child (and the actors linked to it).
    case oneForOne
    /// Every child of the supervisor (and the actors linked to them).
    case allForOne
    /// The failing child and every child supervised after it, in supervision order (and the
    /// actors linked to them): for children that depend on those started before them.
    case restForOne

    public var description: String {
        switch self {
        case .oneForOne: "oneForOne"
        case .allForOne: "allForOne"
        case .restForOne: "restForOne"
        }
    }
}

/// How many restarts a child may have within a time window before the supervisor gives up on
/// it.
///
/// Counted per child id, from the restarts decided for the child's own failures (a pool
/// counts its members' failures together; restarts caused by a sibling's failure, a linked
/// parent or ``Supervisor/restart(id:reason:)`` do not count). A restart that would be the
/// `maxRestarts + 1`-th within `window` is not made: the failure is handled as if the decider
/// had answered ``whenExceeded`` instead, and ``SupervisionEvent/Kind/intensityExceeded(restarts:within:)``
/// is reported first.
public struct RestartIntensity: Sendable, Hashable, CustomStringConvertible {
    /// What happens to a failure once the intensity is exceeded.
    public enum Exceeded: Sendable, Hashable {
        /// Handle it as ``SupervisionDirective/stop``.
        case stop
        /// Handle it as ``SupervisionDirective/escalate``.
        case escalate
    }

    /// Restarts allowed within ``window``. 0 allows none.
    public let maxRestarts: Int
    /// The sliding window the restarts are counted in.
    public let window: Duration
    public let whenExceeded: Exceeded

    /// At most `maxRestarts` restarts within `window`, then `whenExceeded`.
    /// `maxRestarts` must not be negative and `window` must be positive.
    public init(maxRestarts: Int, within window: Duration, whenExceeded: Exceeded = .stop) {
        if !(maxRestarts >= 0) { fatalError("RestartIntensity: maxRestarts must be 0 or more, got \(maxRestarts)") }
        if !(window > .zero) { fatalError("RestartIntensity: the window must be positive, got \(window); use .unlimited for no limit") }
        self.maxRestarts = maxRestarts
        self.window = window
        self.whenExceeded = whenExceeded
    }

    /// The default: at most 10 restarts within 5 seconds, then stop.
    public static let `default` = RestartIntensity(maxRestarts: 10, within: .seconds(5))

    /// No limit: every restart the decider asks for is made.
    public static let unlimited = RestartIntensity(maxRestarts: .max, within: .seconds(1))

    var isUnlimited: Bool { maxRestarts == .max }

    public var description: String {
        if isUnlimited { return "unlimited" }
        return "at most \(maxRestarts) restarts within \(window), then \(whenExceeded == .stop ? "stop" : "escalate")"
    }
}

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
        if !(initial > .zero) { fatalError("RestartBackoff.exponential: initial must be positive, got \(initial); use .none for no delay") }
        if !(maximum >= initial) { fatalError("RestartBackoff.exponential: maximum (\(maximum)) must be at least initial (\(initial))") }
        if !(multiplier >= 1 && multiplier.isFinite) { fatalError("RestartBackoff.exponential: multiplier must be a finite number of at least 1, got \(multiplier)") }
        if !((0...1).contains(jitter)) { fatalError("RestartBackoff.exponential: jitter must be a fraction in 0...1, got \(jitter)") }
        let reset = resetAfter ?? maximum
        if !(reset > .zero) { fatalError("RestartBackoff.exponential: resetAfter must be positive, got \(reset)") }
        return RestartBackoff(initial: initial, maximum: maximum, multiplier: multiplier, jitter: jitter, resetAfter: reset)
    }

    /// Whether restarts happen at once.
    public var isNone: Bool { initial == .zero }

    /// The delay of the `number`-th consecutive restart (1 for the first), with
    /// `jitterSample` in `0..<1` choosing the jitter (random by default). Any thread.
    public func delay(forConsecutiveRestart number: Int, jitterSample: Double = .random(in: 0..<1)) -> Duration {
        guard !isNone, number > 0 else { return .zero }
        // In nanoseconds, rounded to whole ones, so that jitter-free delays are exact.
        let ceiling = maximum.totalNanoseconds
        var nanoseconds = initial.totalNanoseconds * pow(multiplier, Double(number - 1))
        if !nanoseconds.isFinite || nanoseconds > ceiling { nanoseconds = ceiling }
        nanoseconds += nanoseconds * jitter * min(max(jitterSample, 0), 1)
        return .nanoseconds(Int64(min(nanoseconds.rounded(), 9.0e18)))
    }

    public var description: String {
        if isNone { return "none" }
        return "exponential(initial: \(initial), maximum: \(maximum), multiplier: \(multiplier), jitter: \(jitter), resetAfter: \(resetAfter))"
    }
}

/// How a ``Supervisor`` handles its children's failures.
///
/// ```swift
/// let strategy = SupervisionStrategy.allForOne(
///     intensity: RestartIntensity(maxRestarts: 3, within: .seconds(10), whenExceeded: .escalate),
///     backoff: .exponential(initial: .milliseconds(50), maximum: .seconds(5)),
///     failingMessage: .retryOnce
/// ) { error in
///     error is ProtocolViolation ? .stop : .restart
/// }
/// ```
///
/// The default: ``RestartScope/oneForOne``, always ``SupervisionDirective/restart``, at most
/// 10 restarts within 5 seconds and then stop, no backoff, the failing message dead-lettered.
public struct SupervisionStrategy: Sendable {
    /// Which children a restart or stop applies to.
    public var scope: RestartScope
    /// The restart budget of each child.
    public var intensity: RestartIntensity
    /// The delay before a failed child's fresh instance starts.
    public var backoff: RestartBackoff
    /// What happens to the message whose handler failed, on a restart: dead-lettered with
    /// reason `.handlerFailed` (default) or handled once more, first, by the fresh instance
    /// (dead-lettered if it fails again). With resume and stop it is always dead-lettered.
    public var failingMessage: FailureDirective.FailingMessage
    /// The decision function for children without one of their own (see ``ChildPolicy``).
    public var decider: SupervisionDecider

    public init(
        scope: RestartScope = .oneForOne,
        intensity: RestartIntensity = .default,
        backoff: RestartBackoff = .none,
        failingMessage: FailureDirective.FailingMessage = .deadLetter,
        decider: @escaping SupervisionDecider = { _ in .restart }
    ) {
        self.scope = scope
        self.intensity = intensity
        self.backoff = backoff
        self.failingMessage = failingMessage
        self.decider = decider
    }

    /// The default strategy (see the type's documentation).
    public static var `default`: SupervisionStrategy { SupervisionStrategy() }

    /// A failure affects only the failing child (and the actors linked to it).
    public static func oneForOne(
        intensity: RestartIntensity = .default,
        backoff: RestartBackoff = .none,
        failingMessage: FailureDirective.FailingMessage = .deadLetter,
        decider: @escaping SupervisionDecider = { _ in .restart }
    ) -> SupervisionStrategy {
        SupervisionStrategy(scope: .oneForOne, intensity: intensity, backoff: backoff, failingMessage: failingMessage, decider: decider)
    }

    /// A restart or stop decided for one child applies to every child.
    public static func allForOne(
        intensity: RestartIntensity = .default,
        backoff: RestartBackoff = .none,
        failingMessage: FailureDirective.FailingMessage = .deadLetter,
        decider: @escaping SupervisionDecider = { _ in .restart }
    ) -> SupervisionStrategy {
        SupervisionStrategy(scope: .allForOne, intensity: intensity, backoff: backoff, failingMessage: failingMessage, decider: decider)
    }

    /// A restart or stop decided for one child applies to it and to the children supervised
    /// after it.
    public static func restForOne(
        intensity: RestartIntensity = .default,
        backoff: RestartBackoff = .none,
        failingMessage: FailureDirective.FailingMessage = .deadLetter,
        decider: @escaping SupervisionDecider = { _ in .restart }
    ) -> SupervisionStrategy {
        SupervisionStrategy(scope: .restForOne, intensity: intensity, backoff: backoff, failingMessage: failingMessage, decider: decider)
    }
}

/// Per-child overrides of the supervisor's ``SupervisionStrategy`` (`nil`: the strategy's).
/// The scope is the supervisor's: it relates children to each other.
///
/// ```swift
/// try supervisor.supervise(id: "parser", policy: ChildPolicy(decider: { $0 is MalformedInput ? .resume : .restart })) {
///     Parser()
/// }
/// ```
public struct ChildPolicy: Sendable {
    public var decider: SupervisionDecider?
    public var intensity: RestartIntensity?
    public var backoff: RestartBackoff?
    public var failingMessage: FailureDirective.FailingMessage?

    public init(
        decider: SupervisionDecider? = nil,
        intensity: RestartIntensity? = nil,
        backoff: RestartBackoff? = nil,
        failingMessage: FailureDirective.FailingMessage? = nil
    ) {
        self.decider = decider
        self.intensity = intensity
        self.backoff = backoff
        self.failingMessage = failingMessage
    }

    /// Everything from the supervisor's strategy.
    public static var inherited: ChildPolicy { ChildPolicy() }

    func resolved(with strategy: SupervisionStrategy) -> ResolvedPolicy {
        ResolvedPolicy(decider: decider ?? strategy.decider,
                       intensity: intensity ?? strategy.intensity,
                       backoff: backoff ?? strategy.backoff,
                       failingMessage: failingMessage ?? strategy.failingMessage)
    }
}

/// A child's effective policy, fixed when it is supervised.
struct ResolvedPolicy: Sendable {
    let decider: SupervisionDecider
    let intensity: RestartIntensity
    let backoff: RestartBackoff
    let failingMessage: FailureDirective.FailingMessage
}

extension Duration {
    /// The duration in nanoseconds, as a floating-point number.
    var totalNanoseconds: Double {
        Double(components.seconds) * 1e9 + Double(components.attoseconds) / 1e9
    }
}
