import Troupe

/// Runs each job right away on the calling thread, that is the thread completing the promise.
public struct InlineExecutor: PromiseExecutor {
    public init() {}
    public func execute(_ job: @escaping @Sendable () -> Void) { job() }
}

extension PromiseExecutor where Self == InlineExecutor {
    /// The completing thread.
    public static var inline: InlineExecutor { InlineExecutor() }
}
