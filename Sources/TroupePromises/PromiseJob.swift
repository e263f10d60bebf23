import Troupe

/// A job for a ``PromiseWorker``.
public struct PromiseJob: Sendable {
    public let body: @Sendable () -> Void
    public init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}
