import Troupe

/// Where a promise callback registered with `on: executor` runs.
public protocol PromiseExecutor: Sendable {
    /// Runs `job` exactly once, now or later, on a thread of the executor's choosing.
    func execute(_ job: @escaping @Sendable () -> Void)
}
