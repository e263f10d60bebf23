import Troupe

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
        if !(window > .zero) {
            fatalError("RestartIntensity: the window must be positive, got \(window); use .unlimited for no limit")
        }
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
