import Troupe

/// An actor that runs the jobs it receives, one at a time, on a Troupe worker thread.
public struct PromiseWorker: ActorDefinition {
    public init() {}
    public mutating func receive(_ message: PromiseJob, context: ActorContext<PromiseJob>) { message.body() }
}
