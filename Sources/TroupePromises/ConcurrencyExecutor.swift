import Troupe

/// Runs each job as a new unstructured Swift task, on the global concurrent executor.
public struct ConcurrencyExecutor: PromiseExecutor {
    public let priority: TaskPriority?
    public init(priority: TaskPriority? = nil) { self.priority = priority }
    public func execute(_ job: @escaping @Sendable () -> Void) { Task(priority: priority) { job() } }
}

extension PromiseExecutor where Self == ConcurrencyExecutor {
    /// A Swift concurrency task.
    public static var concurrency: ConcurrencyExecutor { ConcurrencyExecutor() }
}
