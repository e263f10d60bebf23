import Troupe

/// One call of a ``MultiDispatcher`` waiting to run on its target: an actor runs it with
/// ``run()`` when the message that carries it arrives.
public struct DispatchJob: Sendable {
    let body: @Sendable () -> Void

    /// Calls every observer registered now (not when the call was made).
    public func run() { body() }
}
